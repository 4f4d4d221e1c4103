#include "kubeletclient/stats.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ndr::kubelet {
namespace {

using json = nlohmann::ordered_json;

// csi_metrics.go GetMetrics, for a published volume: OK with its stats, NotFound-like
// "unsupported" (returned in `unsupported`) when the driver has no GET_VOLUME_STATS.
absl::StatusOr<VolumeStats> GetMetrics(const VolumePlan& plan, bool ask_condition,
                                       CsiNodeClient* client, bool* unsupported) {
  absl::StatusOr<bool> supported = client->NodeSupportsVolumeStats();
  if (!supported.ok()) return supported.status();
  if (!*supported) {
    *unsupported = true;
    return absl::UnimplementedError(absl::StrCat("metrics are not supported for ", plan.driver,
                                                 " volumes (the driver lacks the "
                                                 "GET_VOLUME_STATS node capability)"));
  }
  // NewMetricsCsi's path: the mount directory, or for block the pod's file in the global map.
  const std::string path = plan.block.has_value() ? plan.block->global_map_pod : plan.paths.mount;
  return client->NodeGetVolumeStats(plan.handle, path, ask_condition);
}

// A whole value as Prometheus' Go text encoder writes it: strconv.FormatFloat(v, 'g', -1, 64),
// which uses the shortest digits that read back as the same double and, being shortest, the
// exponent form from 1e6 up (1.073741824e+09).
std::string PromValue(int64_t v) {
  const double d = static_cast<double>(v);
  if (v > -1000000 && v < 1000000) return absl::StrCat(v);
  for (int digits = 0; digits <= 16; ++digits) {
    std::string candidate = absl::StrFormat("%.*e", digits, d);  // e+09, as Go writes it
    if (std::stod(candidate) == d) return candidate;
  }
  return absl::StrFormat("%.16e", d);
}

// A label value escaped as the text format requires (\, ", newline).
std::string LabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string PrometheusVolumeStats(const json& volumes) {
  // volume_stats.go's descriptors: name, help (with component-base's stability prefix), and the
  // report field each comes from.
  struct Family {
    const char* name;
    const char* help;
    const char* field;
  };
  static constexpr Family kFamilies[] = {
      {"kubelet_volume_stats_available_bytes", "Number of available bytes in the volume",
       "available"},
      {"kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume", "capacity"},
      {"kubelet_volume_stats_health_status_abnormal",
       "Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is "
       "unhealthy, 0 indicates volume is healthy",
       "abnormal"},
      {"kubelet_volume_stats_inodes", "Maximum number of inodes in the volume", "inodes"},
      {"kubelet_volume_stats_inodes_free", "Number of free inodes in the volume", "inodesFree"},
      {"kubelet_volume_stats_inodes_used", "Number of used inodes in the volume", "inodesUsed"},
      {"kubelet_volume_stats_used_bytes", "Number of used bytes in the volume", "used"},
  };
  // One series per claim (the collector skips a claim it has seen), in label order.
  std::map<std::pair<std::string, std::string>, const json*> claims;
  for (const json& volume : volumes) {
    if (!volume.contains("claim") || !volume.contains("capacity")) continue;
    const std::string claim = volume["claim"].get<std::string>();
    const size_t slash = claim.find('/');
    claims.emplace(std::make_pair(claim.substr(0, slash), claim.substr(slash + 1)), &volume);
  }
  std::string out;
  for (const Family& family : kFamilies) {
    std::string samples;
    for (const auto& [claim, volume] : claims) {
      if (!volume->contains(family.field)) continue;  // abnormal: only with a condition
      const json& value = (*volume)[family.field];
      const int64_t number = value.is_boolean() ? (value.get<bool>() ? 1 : 0) : value.get<int64_t>();
      absl::StrAppend(&samples, family.name, "{namespace=\"", LabelValue(claim.first),
                      "\",persistentvolumeclaim=\"", LabelValue(claim.second), "\"} ",
                      PromValue(number), "\n");
    }
    if (samples.empty()) continue;
    absl::StrAppend(&out, "# HELP ", family.name, " [ALPHA] ", family.help, "\n", "# TYPE ",
                    family.name, " gauge\n", samples);
  }
  return out;
}

namespace {

json HealthConditionsJson(const std::vector<HealthCondition>& conditions) {
  json out = json::array();
  for (const HealthCondition& c : conditions) {
    json condition = {{"status", c.status}, {"reason", c.reason}};
    if (!c.message.empty()) condition["message"] = c.message;
    if (!c.access_mode.empty()) condition["accessMode"] = c.access_mode;
    if (!c.volume_mode.empty()) condition["volumeMode"] = c.volume_mode;
    out.push_back(condition);
  }
  return out;
}

// status_manager.go SetPodVolumeHealth (v1.37.2) on the pod's status.volumeHealth, `pod_health`
// (entries {name, healthConditions}, first as the pod file has them): the volume's entry is
// written only when its set of (status, reason) pairs differs from the entry's
// (volumeutil.VolumeHealthConditionSetsEqual; a missing entry has none), and then holds the new
// conditions, or none. So a healthy volume of a pod without an entry gets none, and one that was
// unhealthy keeps an entry without conditions. Returns whether kubelet writes.
bool SetPodVolumeHealth(const std::string& volume, const std::vector<HealthCondition>& conditions,
                        json* pod_health) {
  using StatusReason = std::pair<std::string, std::string>;
  std::set<StatusReason> now, before;
  for (const HealthCondition& c : conditions) now.insert({c.status, c.reason});
  json* entry = nullptr;
  for (json& e : *pod_health) {
    if (e.value("name", "") == volume) {
      entry = &e;
      break;
    }
  }
  if (entry != nullptr && entry->contains("healthConditions")) {
    for (const json& c : (*entry)["healthConditions"]) {
      before.insert({c.value("status", ""), c.value("reason", "")});
    }
  }
  if (before == now) return false;
  json written = {{"name", volume}};
  if (!conditions.empty()) written["healthConditions"] = HealthConditionsJson(conditions);
  if (entry != nullptr) {
    *entry = std::move(written);
  } else {
    pod_health->push_back(std::move(written));
  }
  return true;
}

// volumehealth/manager.go probeVolumeHealth for one volume (v1.37.2): only a PersistentVolume's
// (cache/volume_health.go GetVolumesToReportHealth skips inline volumes); NodeGetCapabilities,
// then, with GET_VOLUME_HEALTH, NodeGetVolumeHealth with the device mount path as the staging
// path (globalmount, even for a driver that does not stage; volumeDevices/<pv>/dev for a block
// volume) and the mounter's path as the publish path (none for a block volume). The answer goes
// into the pod's status.volumeHealth, `pod_health` (SetPodVolumeHealth below), and `write` says
// whether kubelet writes it.
json ProbeVolumeHealth(const VolumePlan& plan, CsiNodeClient* client, json* pod_health,
                       json* write) {
  if (plan.claim.empty()) {
    return "not probed: kubelet asks the health of PersistentVolumes only (an inline volume has "
           "no volume handle before it is mounted)";
  }
  absl::StatusOr<bool> supported = client->NodeSupportsVolumeHealth();
  if (!supported.ok()) {
    return absl::StrCat("not probed: NodeGetCapabilities failed (kubelet logs it and tries on "
                        "its next period): ",
                        supported.status().message());
  }
  if (!*supported) return "not probed: the driver lacks GET_VOLUME_HEALTH";
  const std::string staging = plan.block.has_value() ? plan.block->global_map
                              : plan.device.has_value() ? plan.device->globalmount
                                                        : "";
  const std::string publish = plan.block.has_value() ? "" : plan.paths.mount;
  absl::StatusOr<std::vector<HealthCondition>> conditions =
      client->NodeGetVolumeHealth(plan.handle, staging, publish);
  if (!conditions.ok()) {
    return absl::StrCat(
        "NodeGetVolumeHealth failed; kubelet leaves the previous conditions unchanged: ",
        conditions.status().message());
  }
  *write = SetPodVolumeHealth(plan.pod_volume, *conditions, pod_health)
               ? "written into the pod's status.volumeHealth"
               : "not written: the pod's status.volumeHealth has the same statuses and reasons";
  return conditions->empty() ? json("healthy: no adverse condition")
                             : HealthConditionsJson(*conditions);
}

// probeStorageHealth for one driver: NodeGetCapabilities, then, with GET_STORAGE_HEALTH,
// NodeGetStorageHealth without secrets; the CSINode's status as nodeinfomanager.go
// tryUpdateCSINodeStorageHealth (v1.37.2) leaves it for this driver. That writes only when the
// identities (status, reason, access and volume mode) differ from the driver's entry, and then
// keeps an entry only for a driver with conditions: whatever was there, the driver's entry after
// the round is its conditions, or none when it is healthy (other drivers' entries are theirs).
json ProbeStorageHealth(const std::string& driver, CsiNodeClient* client) {
  absl::StatusOr<bool> supported = client->NodeSupportsStorageHealth();
  if (!supported.ok()) {
    return absl::StrCat("not probed: NodeGetCapabilities failed: ",
                        supported.status().message());
  }
  if (!*supported) return "not probed: the driver lacks GET_STORAGE_HEALTH";
  absl::StatusOr<std::vector<HealthCondition>> conditions = client->NodeGetStorageHealth();
  if (!conditions.ok()) {
    return absl::StrCat(
        "NodeGetStorageHealth failed; kubelet leaves the CSINode's conditions unchanged: ",
        conditions.status().message());
  }
  if (conditions->empty()) return {{"csiNodeStatus", json::object()}};
  return {{"csiNodeStatus",
           {{"storageHealth", json::array({{{"name", driver},
                                             {"healthConditions",
                                              HealthConditionsJson(*conditions)}}})}}}};
}

}  // namespace

CommandOutcome RunStats(const PublishCommand& command, StatsFormat format) {
  CommandOutcome outcome;
  absl::StatusOr<Inputs> inputs = ReadInputs(command);
  if (!inputs.ok()) {
    outcome.error = std::string(inputs.status().message());
    return outcome;
  }
  const Pod& pod = inputs->pod;
  DriverRegistry registry;
  absl::StatusOr<json> registrations = RegisterAll(command, &registry);
  if (!registrations.ok()) {
    outcome.error = std::string(registrations.status().message());
    return outcome;
  }
  json out = ReportHead(pod, *std::move(registrations), command.node);
  NodeOptions node = command.node;
  node.publishes = false;
  PodPlan pod_plan = PlanVolumes(pod, inputs->objects, registry.All(), node);
  json volumes = json::array();
  outcome.ok = true;
  // kubelet 1.37's volume health manager (CSIVolumeHealth): it probes, on the same period as
  // the volume stats, every mounted PersistentVolume's health and every driver's storage health.
  const bool health = command.node.feature_gates.csi_volume_health &&
                      command.node.release.Has(ReleaseBehaviour::kVolumeHealthManager);
  // The pod's status.volumeHealth as its file has it: what kubelet's last round wrote.
  json pod_health = json::array();
  for (const PodVolumeHealth& entry : pod.volume_health) {
    json written = {{"name", entry.name}};
    if (!entry.conditions.empty()) {
      std::vector<HealthCondition> conditions;
      for (const PodVolumeHealth::Condition& c : entry.conditions) {
        conditions.push_back({c.status, c.reason, c.message, "", ""});
      }
      written["healthConditions"] = HealthConditionsJson(conditions);
    }
    pod_health.push_back(written);
  }
  std::vector<std::pair<size_t, const VolumePlan*>> health_volumes;  // index in `volumes`
  for (PlannedVolume& volume : pod_plan.volumes) {
    if (!volume.skipped.empty()) {
      volumes.push_back({{"volume", volume.name}, {"skipped", volume.skipped}});
      continue;
    }
    if (!volume.status.ok()) {
      outcome.ok = false;
      const std::string why = absl::StrCat("no stats: ", volume.status.message());
      volumes.push_back({{"volume", volume.name}, {"result", why}});
      outcome.volume_errors.push_back(absl::StrCat("volume \"", volume.name, "\": ", why));
      continue;
    }
    const VolumePlan& plan = *volume.plan;
    json entry = DescribePlan(plan);
    if (absl::Status published = CheckPublished(plan); !published.ok()) {
      entry["skipped"] = absl::StrCat(
          "not published on this node: kubelet has stats only for the volumes it has mounted (",
          published.message(), ")");
      volumes.push_back(entry);
      continue;
    }
    entry["volumePath"] = plan.block.has_value() ? plan.block->global_map_pod : plan.paths.mount;
    VolumeOutcome calls;
    CsiNodeClient client(plan.endpoint, command.node.timeout, &calls.calls);
    bool unsupported = false;
    // v1.37 reads no volume condition from NodeGetVolumeStats, whatever CSIVolumeHealth says
    // (ReleaseBehaviour::kNoVolumeConditionFromStats).
    const bool read_condition =
        command.node.feature_gates.csi_volume_health &&
        !command.node.release.Has(ReleaseBehaviour::kNoVolumeConditionFromStats);
    if (command.node.feature_gates.csi_volume_health && !read_condition) {
      entry["condition"] =
          "not read: kubelet 1.37 takes no volume condition from NodeGetVolumeStats (with "
          "CSIVolumeHealth it asks NodeGetVolumeHealth instead: volumeHealth)";
    }
    absl::StatusOr<VolumeStats> stats = GetMetrics(plan, read_condition, &client, &unsupported);
    if (health) {
      health_volumes.emplace_back(volumes.size(), &plan);
    }
    ReportOutcome(calls, &entry);
    if (unsupported) {
      // volume_stat_calculator.go: not an error, the volume simply has no metrics.
      entry["skipped"] = std::string(stats.status().message());
    } else if (!stats.ok()) {
      outcome.ok = false;
      entry["result"] = absl::StrCat("no stats: ", stats.status().message());
      outcome.volume_errors.push_back(
          absl::StrCat("volume \"", volume.name, "\": NodeGetVolumeStats failed: ",
                       stats.status().message()));
    } else {
      entry["capacity"] = stats->capacity;
      entry["available"] = stats->available;
      entry["used"] = stats->used;
      entry["inodes"] = stats->inodes;
      entry["inodesFree"] = stats->inodes_free;
      entry["inodesUsed"] = stats->inodes_used;
      if (stats->abnormal.has_value()) {
        entry["abnormal"] = *stats->abnormal;
        entry["message"] = stats->message.value_or("");
        if (*stats->abnormal) {
          entry["event"] = absl::StrCat("Warning VolumeConditionAbnormal: Volume ", volume.name,
                                        ": ", stats->message.value_or(""));
        }
      } else if (read_condition) {
        entry["condition"] = "not reported: the driver lacks the VOLUME_CONDITION capability";
      }
      entry["result"] = "ok";
    }
    volumes.push_back(entry);
  }
  out["volumes"] = volumes;
  if (health) {
    // The health manager's loop is kubelet's other one (on the same period as the stats): every
    // volume's health in turn (each call listed with its volume as "healthCalls") and, in kubelet
    // concurrently with that, each registered driver's storage health.
    for (const auto& [index, plan] : health_volumes) {
      VolumeOutcome calls;
      CsiNodeClient client(plan->endpoint, command.node.timeout, &calls.calls);
      json write;
      volumes[index]["volumeHealth"] = ProbeVolumeHealth(*plan, &client, &pod_health, &write);
      if (!write.is_null()) volumes[index]["podStatusWrite"] = write;
      json probe;
      ReportOutcome(calls, &probe);
      if (probe.contains("calls")) volumes[index]["healthCalls"] = probe["calls"];
    }
    out["volumes"] = volumes;
    // What kubelet writes: the pod's status.volumeHealth (SetPodVolumeHealth) and, per driver,
    // the CSINode's status.storageHealth (nodeinfomanager UpdateCSINodeStorageHealth).
    out["podStatus"] = {{"volumeHealth", pod_health}};
    json storage = json::array();
    // probeStorageHealth asks every registered driver (csi.ListRegisteredDrivers), the pod's or
    // not.
    for (const auto& [driver, info] : registry.All()) {
      const std::string& endpoint = info.endpoint;
      VolumeOutcome calls;
      CsiNodeClient client(endpoint, command.node.timeout, &calls.calls);
      json entry = {{"driver", driver}};
      entry["storageHealth"] = ProbeStorageHealth(driver, &client);
      ReportOutcome(calls, &entry);
      storage.push_back(entry);
    }
    out["storageHealthProbes"] = storage;
  }
  outcome.json = format == StatsFormat::kPrometheus ? PrometheusVolumeStats(volumes)
                                                    : out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

#include "kubeletclient/stats.h"

#include <set>

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
          "CSIVolumeHealth it asks NodeGetVolumeHealth instead, which kubeletclient does not "
          "model yet)";
    }
    absl::StatusOr<VolumeStats> stats = GetMetrics(plan, read_condition, &client, &unsupported);
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
  outcome.json = format == StatsFormat::kPrometheus ? PrometheusVolumeStats(volumes)
                                                    : out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

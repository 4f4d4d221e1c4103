#include "kubeletclient/volume_command.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hostutil/mount.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/pluginmanager/plugin_watcher.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {

using json = nlohmann::ordered_json;

absl::StatusOr<Inputs> ReadInputs(const PublishCommand& command) {
  Inputs inputs;
  absl::StatusOr<Pod> pod = ReadPod(command.pod_file);
  if (!pod.ok()) return pod.status();
  inputs.pod = *std::move(pod);
  for (const std::string& path : command.object_paths) {
    if (absl::Status s = ReadObjects(path, &inputs.objects); !s.ok()) return s;
  }
  return inputs;
}

absl::StatusOr<json> RegisterAll(const PublishCommand& command, DriverRegistry* registry) {
  std::vector<std::string> sockets;
  absl::StatusOr<std::unique_ptr<PluginWatcher>> scan = PluginWatcher::Start(
      command.plugin_registry_dir, [&sockets](const std::string& s) { sockets.push_back(s); },
      [](const std::string&) {});
  if (!scan.ok()) return scan.status();
  CsiHandler csi(registry, command.csi);
  json report = json::array();
  for (const std::string& socket : sockets) {
    HandshakeResult result = RegisterSocket(socket, {{kCsiPluginType, &csi}}, command.handshake,
                                            /*calls=*/nullptr);
    json entry = {{"socket", socket},
                  {"driver", result.info.has_value() ? result.info->name() : ""},
                  {"registered", result.status.ok()}};
    if (!result.status.ok()) entry["error"] = std::string(result.status.message());
    report.push_back(entry);
  }
  return report;
}

absl::StatusOr<TokenSource> StartTokenSource(const PublishCommand& command,
                                             const ObjectSet& objects,
                                             std::function<absl::Time()> clock) {
  TokenSource source;
  if (command.service_account_key_file.empty()) return source;
  absl::StatusOr<std::unique_ptr<token::SigningKey>> key =
      token::SigningKey::Load(command.service_account_key_file);
  if (!key.ok()) return key.status();
  source.key = *std::move(key);
  source.issuer = std::make_unique<token::TokenIssuer>(
      source.key.get(), command.service_account_issuer, &objects);
  source.manager = std::make_unique<token::TokenManager>(source.issuer.get(), std::move(clock));
  return source;
}

absl::Status SetUpRootDir(const NodeOptions& node, bool* made) {
  *made = false;
  if (!node.change_host) return absl::OkStatus();
  if (absl::Status s = MakeDirs(node.root_dir, 0750); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("error creating root directory: ", s.message()));
  }
  if (absl::Status s = hostutil::MakeRShared(node.root_dir, made); !s.ok()) {
    // kubelet's words; it stops there.
    return absl::Status(s.code(), absl::StrCat("error configuring root directory: ", s.message()));
  }
  return absl::OkStatus();
}

json ReportHead(const Pod& pod, json registrations, const NodeOptions& node) {
  json head = {{"pod", absl::StrCat(pod.ns, "/", pod.name)},
               {"uid", pod.uid},
               {"registrations", std::move(registrations)}};
  head["node"] = {
      {"name", node.node_name},
      {"kubeletVersion", node.release.Name()},
      {"featureGates", FeatureGatesString(node.feature_gates)},
      {"seLinux", absl::StrCat(node.selinux.enabled ? "enabled" : "disabled", " (",
                               node.selinux.source, ")")},
      {"blockDeviceMapping",
       node.change_host ? "bind mounts and loop devices are made, as kubelet makes them"
                        : absl::StrCat("bind mounts and loop devices are skipped: ",
                                       node.host_skip_reason)}};
  return head;
}

std::string Refusal(const Pod& pod, const absl::Status& status, const char* nothing_done) {
  return absl::StrCat(pod.file, ": Pod ", pod.ns, "/", pod.name, ": ", status.message(), "; ",
                      nothing_done);
}

void ReportOutcome(const VolumeOutcome& volume, json* entry) {
  json calls = json::array();
  for (const SentCall& call : volume.calls) {
    calls.push_back({{"method", call.method}, {"request", json::parse(call.request_json)}});
  }
  (*entry)["calls"] = calls;
  if (!volume.host_steps.empty()) {
    json steps = json::array();
    for (const HostStep& step : volume.host_steps) {
      json item = {{"operation", step.operation}, {"path", step.path}};
      if (!step.detail.empty()) item["detail"] = step.detail;
      item["result"] = step.result;
      item["afterCalls"] = step.after_calls;  // its place among the calls
      steps.push_back(item);
    }
    (*entry)["hostOperations"] = steps;
  }
  if (!volume.notes.empty()) (*entry)["notes"] = volume.notes;
  if (volume.claim_status.has_value()) {
    // The status kubelet patches onto the claim (util.MarkFSResizeFinished).
    const ClaimStatusUpdate& update = *volume.claim_status;
    json conditions = json::array();
    for (const ClaimCondition& c : update.conditions) {
      json condition = {{"type", c.type}, {"status", c.status}};
      if (!c.reason.empty()) condition["reason"] = c.reason;
      if (!c.message.empty()) condition["message"] = c.message;
      conditions.push_back(condition);
    }
    json status = {{"phase", update.phase}};
    if (update.capacity.has_value()) {
      status["capacity"] = {{"storage", update.capacity->String()}};
    }
    if (!conditions.empty()) status["conditions"] = conditions;
    // Expansion recovery: the resize status kubelet leaves ({} when it removed it).
    if (update.resize_status.has_value()) {
      status["allocatedResourceStatuses"] =
          update.resize_status->empty() ? json::object()
                                        : json{{"storage", *update.resize_status}};
    }
    (*entry)["claimStatus"] = {{"claim", update.claim}, {"status", status}};
    if (!update.patches.empty()) (*entry)["claimStatus"]["patches"] = update.patches;
  }
}

json DescribePlan(const VolumePlan& plan) {
  json entry = {{"volume", plan.pod_volume},
                {"driver", plan.driver},
                {"endpoint", plan.endpoint},
                {"mode", plan.mode},
                {"volumeMode", plan.block.has_value() ? "Block" : "Filesystem"}};
  if (!plan.claim.empty()) {
    entry["claim"] = plan.claim;
    entry["persistentVolume"] = plan.spec_name;
  }
  if (plan.block.has_value()) {
    entry["volDataFile"] = plan.block->vol_data;
    entry["publishPath"] = plan.block->publish;
    entry["podDevice"] = plan.block->pod_map;
  } else {
    entry["volDataFile"] = plan.paths.vol_data;
  }
  return entry;
}

absl::StatusOr<VolumePlan*> FindPlannedVolume(PodPlan* plan, const Pod& pod,
                                              const std::string& name) {
  std::vector<std::string> names;
  for (PlannedVolume& volume : plan->volumes) {
    names.push_back(volume.name);
    if (volume.name != name) continue;
    if (!volume.skipped.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("volume \"", name, "\" is not the CSI plugin's: ", volume.skipped));
    }
    if (!volume.status.ok()) {
      return absl::Status(volume.status.code(),
                          absl::StrCat("volume \"", name, "\": ", volume.status.message()));
    }
    return &*volume.plan;
  }
  return absl::NotFoundError(absl::StrCat("the pod has no volume \"", name, "\" (it has [",
                                          absl::StrJoin(names, " "), "])"));
}

absl::Status CheckPublished(const VolumePlan& plan) {
  struct stat st;
  if (plan.block.has_value()) {
    if (lstat(plan.block->pod_map.c_str(), &st) == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "volume \"", plan.pod_volume, "\" is not mapped for this pod on this node (no ",
        plan.block->pod_map, "); publish it first (kubeletclient publish)"));
  }
  absl::StatusOr<VolumeRef> ref = LoadVolumeRef(plan.paths.vol_data);
  if (ref.ok() && ref->driver == plan.driver && ref->handle == plan.handle) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "volume \"", plan.pod_volume, "\" is not published for this pod on this node (",
      ref.ok() ? absl::StrCat(plan.paths.vol_data, " is another volume's")
               : std::string(ref.status().message()),
      "); publish it first (kubeletclient publish)"));
}

}  // namespace ndr::kubelet

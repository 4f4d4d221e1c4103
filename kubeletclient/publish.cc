#include "kubeletclient/publish.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/pluginmanager/plugin_watcher.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

using json = nlohmann::ordered_json;

// Registers every plugin socket in the registry directory into `registry`, reporting each.
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

// The start of the output document: the pod, and what the registration handshakes found.
json Head(const Pod& pod, json registrations) {
  return json{{"pod", absl::StrCat(pod.ns, "/", pod.name)},
              {"uid", pod.uid},
              {"registrations", std::move(registrations)}};
}

std::string Refusal(const Pod& pod, const absl::Status& status, const char* nothing_done) {
  return absl::StrCat(pod.file, ": Pod ", pod.ns, "/", pod.name, ": ", status.message(), "; ",
                      nothing_done);
}

// The calls, host steps and notes of one volume, for the output document.
void Report(const VolumeOutcome& volume, json* entry) {
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
}

// What the command knows of a CSI volume before it sends anything.
json Describe(const VolumePlan& plan) {
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

// The node's settings that change what is sent or done, for the output document.
json Node(const NodeOptions& node) {
  return json{{"name", node.node_name},
              {"featureGates", FeatureGatesString(node.feature_gates)},
              {"seLinux", absl::StrCat(node.selinux.enabled ? "enabled" : "disabled", " (",
                                       node.selinux.source, ")")},
              {"blockDeviceMapping",
               node.change_host ? "bind mounts and loop devices are made, as kubelet makes them"
                                : absl::StrCat("bind mounts and loop devices are skipped: ",
                                               node.host_skip_reason)}};
}

}  // namespace

CommandOutcome RunPublish(const PublishCommand& command) {
  CommandOutcome outcome;
  // Everything read from files is read, and validated, before any socket is touched.
  absl::StatusOr<Pod> pod = ReadPod(command.pod_file);
  if (!pod.ok()) {
    outcome.error = std::string(pod.status().message());
    return outcome;
  }
  ObjectSet objects;
  for (const std::string& path : command.object_paths) {
    if (absl::Status s = ReadObjects(path, &objects); !s.ok()) {
      outcome.error = std::string(s.message());
      return outcome;
    }
  }
  DriverRegistry registry;
  absl::StatusOr<json> registrations = RegisterAll(command, &registry);
  if (!registrations.ok()) {
    outcome.error = std::string(registrations.status().message());
    return outcome;
  }
  json out = Head(*pod, *std::move(registrations));
  out["node"] = Node(command.node);
  // Every volume is checked, against the node's state and its attachment too, before any is
  // published: a pod with a volume that cannot be published publishes nothing.
  PodPlan plan = PlanVolumes(*pod, objects, registry.All(), command.node);
  CheckNodeState(command.node, &plan);
  WaitForAttachments(objects, command.node.node_name, &plan);
  const absl::Status refused = plan.FirstError();
  json volumes = json::array();
  outcome.ok = refused.ok();
  for (PlannedVolume& volume : plan.volumes) {
    if (!volume.skipped.empty()) {
      volumes.push_back({{"volume", volume.name}, {"skipped", volume.skipped}});
      continue;
    }
    json entry = volume.plan.has_value() ? Describe(*volume.plan) : json{{"volume", volume.name}};
    if (volume.plan.has_value() && !volume.plan->notes.empty()) entry["notes"] = volume.plan->notes;
    if (!volume.status.ok()) {
      entry["result"] = absl::StrCat("not published: ", volume.status.message());
      outcome.volume_errors.push_back(
          absl::StrCat("volume \"", volume.name, "\": ", volume.status.message()));
    } else if (!refused.ok()) {
      entry["result"] = "not published: another volume of the pod cannot be published";
    } else {
      VolumeOutcome published = PublishVolume(*volume.plan, objects, pod->ns, command.node);
      outcome.ok = outcome.ok && published.status.ok();
      VolumeOutcome report = published;
      report.notes.insert(report.notes.begin(), volume.plan->notes.begin(),
                          volume.plan->notes.end());
      Report(report, &entry);
      entry["result"] =
          published.status.ok() ? "published" : std::string(published.status.message());
      if (!published.status.ok()) {
        outcome.volume_errors.push_back(
            absl::StrCat("volume \"", volume.name, "\": ", published.status.message()));
      }
    }
    volumes.push_back(entry);
  }
  out["volumes"] = volumes;
  if (!refused.ok()) {
    // One refusal naming every volume that cannot be published.
    outcome.error = Refusal(
        *pod, absl::Status(refused.code(), absl::StrJoin(outcome.volume_errors, "; ")),
        "nothing was published");
    outcome.volume_errors.clear();
    out["error"] = outcome.error;
  }
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

CommandOutcome RunUnpublish(const PublishCommand& command) {
  CommandOutcome outcome;
  absl::StatusOr<Pod> pod = ReadPod(command.pod_file);
  if (!pod.ok()) {
    outcome.error = std::string(pod.status().message());
    return outcome;
  }
  // Every vol_data.json is read and checked before any socket is touched: a hostile one stops
  // the command before anything is sent.
  absl::StatusOr<std::vector<UnpublishPlan>> plans =
      PlanUnpublish(command.node.root_dir, pod->uid);
  if (!plans.ok()) {
    outcome.error = Refusal(*pod, plans.status(), "nothing was unpublished");
    return outcome;
  }
  DriverRegistry registry;
  absl::StatusOr<json> registrations = RegisterAll(command, &registry);
  if (!registrations.ok()) {
    outcome.error = std::string(registrations.status().message());
    return outcome;
  }
  json out = Head(*pod, *std::move(registrations));
  out["node"] = Node(command.node);
  json volumes = json::array();
  outcome.ok = true;
  for (const UnpublishPlan& plan : *plans) {
    VolumeOutcome unpublished = UnpublishVolume(plan, registry.All(), command.node);
    outcome.ok = outcome.ok && unpublished.status.ok();
    json entry = plan.block.has_value()
                     ? json{{"volumeDevice", plan.block->pod_map}, {"volumeMode", "Block"}}
                     : json{{"volumeDir", plan.paths.dir}, {"volumeMode", "Filesystem"}};
    Report(unpublished, &entry);
    entry["result"] =
        unpublished.status.ok() ? "unpublished" : std::string(unpublished.status.message());
    if (!unpublished.status.ok()) {
      outcome.volume_errors.push_back(
          absl::StrCat(plan.block.has_value() ? plan.block->pod_map : plan.paths.dir, ": ",
                       unpublished.status.message()));
    }
    volumes.push_back(entry);
  }
  out["volumes"] = volumes;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

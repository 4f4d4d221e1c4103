#include "kubeletclient/publish.h"

#include "absl/strings/str_cat.h"
#include "kubeletclient/driver_registry.h"
#include "kubeletclient/k8s_objects.h"
#include "kubeletclient/plugin_watcher.h"
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

// What both commands do first: read the pod (and, for `objects`, the --objects files), then
// register every plugin. Returns the start of the output document.
absl::StatusOr<json> Prepare(const PublishCommand& command, Pod* pod, ObjectSet* objects,
                             DriverRegistry* registry) {
  absl::StatusOr<Pod> read = ReadPod(command.pod_file);
  if (!read.ok()) return read.status();
  *pod = *std::move(read);
  if (objects != nullptr) {
    for (const std::string& path : command.object_paths) {
      if (absl::Status s = ReadObjects(path, objects); !s.ok()) return s;
    }
  }
  absl::StatusOr<json> registrations = RegisterAll(command, registry);
  if (!registrations.ok()) return registrations.status();
  return json{{"pod", absl::StrCat(pod->ns, "/", pod->name)},
              {"uid", pod->uid},
              {"registrations", *registrations}};
}

}  // namespace

CommandOutcome RunPublish(const PublishCommand& command) {
  CommandOutcome outcome;
  Pod pod;
  ObjectSet objects;
  DriverRegistry registry;
  absl::StatusOr<json> prepared = Prepare(command, &pod, &objects, &registry);
  if (!prepared.ok()) {
    outcome.error = std::string(prepared.status().message());
    return outcome;
  }
  json out = *std::move(prepared);
  // Every volume is checked before any is published: an invalid pod publishes nothing.
  absl::StatusOr<std::vector<VolumePlan>> plans =
      PlanVolumes(pod, objects, registry.All(), command.node);
  if (plans.ok()) {
    for (const VolumePlan& plan : *plans) {
      if (absl::Status s = PreflightVolume(plan, command.node); !s.ok()) {
        plans = s;
        break;
      }
    }
  }
  if (!plans.ok()) {
    outcome.error = absl::StrCat(pod.file, ": Pod ", pod.ns, "/", pod.name, ": ",
                                 plans.status().message(), "; nothing was published");
    out["error"] = outcome.error;
    outcome.json = out.dump(2) + "\n";
    return outcome;
  }
  json volumes = json::array();
  outcome.ok = true;
  for (const VolumePlan& plan : *plans) {
    absl::Status status = PublishVolume(plan, command.node);
    outcome.ok = outcome.ok && status.ok();
    volumes.push_back({{"volume", plan.pod_volume},
                       {"driver", plan.driver},
                       {"endpoint", plan.endpoint},
                       {"mode", plan.mode},
                       {"volDataFile", plan.volume_dir + "/vol_data.json"},
                       {"nodePublishVolume", json::parse(RedactedRequestJson(plan.request))},
                       {"result", status.ok() ? "published" : std::string(status.message())}});
  }
  out["volumes"] = volumes;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

CommandOutcome RunUnpublish(const PublishCommand& command) {
  CommandOutcome outcome;
  Pod pod;
  DriverRegistry registry;
  absl::StatusOr<json> prepared = Prepare(command, &pod, /*objects=*/nullptr, &registry);
  if (!prepared.ok()) {
    outcome.error = std::string(prepared.status().message());
    return outcome;
  }
  json out = *std::move(prepared);
  json volumes = json::array();
  outcome.ok = true;
  for (const std::string& dir : PodCsiVolumeDirs(command.node.root_dir, pod.uid)) {
    absl::Status status = UnpublishVolume(dir, registry.All(), command.node);
    outcome.ok = outcome.ok && status.ok();
    volumes.push_back({{"volumeDir", dir},
                       {"result", status.ok() ? "unpublished" : std::string(status.message())}});
  }
  out["volumes"] = volumes;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

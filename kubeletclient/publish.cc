#include "kubeletclient/publish.h"

#include "absl/strings/str_cat.h"
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

// The calls and notes of one volume, for the output document.
void Report(const VolumeOutcome& volume, json* entry) {
  json calls = json::array();
  for (const SentCall& call : volume.calls) {
    calls.push_back({{"method", call.method}, {"request", json::parse(call.request_json)}});
  }
  (*entry)["calls"] = calls;
  if (!volume.notes.empty()) (*entry)["notes"] = volume.notes;
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
  // Every volume is checked, its attachment too, before any is published: an invalid pod
  // publishes nothing.
  absl::StatusOr<std::vector<VolumePlan>> plans =
      PlanVolumes(*pod, objects, registry.All(), command.node);
  if (plans.ok()) {
    if (absl::Status s = WaitForAttachments(objects, command.node.node_name, &*plans); !s.ok()) {
      plans = s;
    }
  }
  if (!plans.ok()) {
    outcome.error = Refusal(*pod, plans.status(), "nothing was published");
    out["error"] = outcome.error;
    outcome.json = out.dump(2) + "\n";
    return outcome;
  }
  json volumes = json::array();
  outcome.ok = true;
  for (const VolumePlan& plan : *plans) {
    VolumeOutcome published = PublishVolume(plan, objects, pod->ns, command.node);
    outcome.ok = outcome.ok && published.status.ok();
    json entry = {{"volume", plan.pod_volume},
                  {"driver", plan.driver},
                  {"endpoint", plan.endpoint},
                  {"mode", plan.mode},
                  {"volDataFile", plan.paths.vol_data}};
    Report(published, &entry);
    entry["result"] = published.status.ok() ? "published" : std::string(published.status.message());
    if (!published.status.ok()) {
      outcome.volume_errors.push_back(
          absl::StrCat("volume \"", plan.pod_volume, "\": ", published.status.message()));
    }
    volumes.push_back(entry);
  }
  out["volumes"] = volumes;
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
  json volumes = json::array();
  outcome.ok = true;
  for (const UnpublishPlan& plan : *plans) {
    VolumeOutcome unpublished = UnpublishVolume(plan, registry.All(), command.node);
    outcome.ok = outcome.ok && unpublished.status.ok();
    json entry = {{"volumeDir", plan.paths.dir}};
    Report(unpublished, &entry);
    entry["result"] =
        unpublished.status.ok() ? "unpublished" : std::string(unpublished.status.message());
    if (!unpublished.status.ok()) {
      outcome.volume_errors.push_back(
          absl::StrCat(plan.paths.dir, ": ", unpublished.status.message()));
    }
    volumes.push_back(entry);
  }
  out["volumes"] = volumes;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

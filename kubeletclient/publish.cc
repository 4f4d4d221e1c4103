#include "kubeletclient/publish.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/csi_attacher.h"

namespace ndr::kubelet {

using json = nlohmann::ordered_json;

CommandOutcome RunPublish(const PublishCommand& command) {
  CommandOutcome outcome;
  // Everything read from files is read, and validated, before any socket is touched.
  absl::StatusOr<Inputs> inputs = ReadInputs(command);
  if (!inputs.ok()) {
    outcome.error = std::string(inputs.status().message());
    return outcome;
  }
  const Pod* pod = &inputs->pod;
  const ObjectSet& objects = inputs->objects;
  absl::StatusOr<TokenSource> tokens = StartTokenSource(command, objects, [] { return absl::Now(); });
  if (!tokens.ok()) {
    outcome.error = std::string(tokens.status().message());
    return outcome;
  }
  NodeOptions node = command.node;
  node.tokens = tokens->manager.get();
  DriverRegistry registry;
  absl::StatusOr<json> registrations = RegisterAll(command, &registry);
  if (!registrations.ok()) {
    outcome.error = std::string(registrations.status().message());
    return outcome;
  }
  json out = ReportHead(*pod, *std::move(registrations), node);
  // Every volume is checked, against the node's state and its attachment too, before any is
  // published: a pod with a volume that cannot be published publishes nothing.
  PodPlan plan = PlanVolumes(*pod, objects, registry.All(), node);
  CheckNodeState(node, &plan);
  WaitForAttachments(objects, node.node_name, &plan);
  const absl::Status refused = plan.FirstError();
  json volumes = json::array();
  outcome.ok = refused.ok();
  for (PlannedVolume& volume : plan.volumes) {
    if (!volume.skipped.empty()) {
      volumes.push_back({{"volume", volume.name}, {"skipped", volume.skipped}});
      continue;
    }
    json entry =
        volume.plan.has_value() ? DescribePlan(*volume.plan) : json{{"volume", volume.name}};
    if (volume.plan.has_value() && !volume.plan->notes.empty()) entry["notes"] = volume.plan->notes;
    if (!volume.status.ok()) {
      entry["result"] = absl::StrCat("not published: ", volume.status.message());
      outcome.volume_errors.push_back(
          absl::StrCat("volume \"", volume.name, "\": ", volume.status.message()));
    } else if (!refused.ok()) {
      entry["result"] = "not published: another volume of the pod cannot be published";
    } else {
      VolumeOutcome published = PublishVolume(*volume.plan, objects, pod->ns, node);
      outcome.ok = outcome.ok && published.status.ok();
      VolumeOutcome report = published;
      report.notes.insert(report.notes.begin(), volume.plan->notes.begin(),
                          volume.plan->notes.end());
      ReportOutcome(report, &entry);
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
  // And the devices no pod uses: those a publish left uncertain, or an earlier unstage that
  // failed. This pod's own volumes are still on disk here, so none of them is among these.
  std::vector<std::string> not_devices;
  const std::vector<StrandedDevice> stranded =
      PlanStrandedDevices(command.node.root_dir, &not_devices);
  DriverRegistry registry;
  absl::StatusOr<json> registrations = RegisterAll(command, &registry);
  if (!registrations.ok()) {
    outcome.error = std::string(registrations.status().message());
    return outcome;
  }
  json out = ReportHead(*pod, *std::move(registrations), command.node);
  json volumes = json::array();
  outcome.ok = true;
  // kubelet's reconciler: every volume out of the pod first (unmountVolumes), then each device
  // no pod uses any more (unmountDetachDevices); a volume's report has both, the second as
  // "deviceCalls".
  std::vector<VolumeOutcome> unpublished(plans->size()), devices(plans->size());
  std::vector<bool> device_due(plans->size());
  for (size_t i = 0; i < plans->size(); ++i) {
    device_due[i] = UnpublishFromPod((*plans)[i], registry.All(), command.node, &unpublished[i]);
  }
  for (size_t i = 0; i < plans->size(); ++i) {
    if (device_due[i]) UnpublishDevice((*plans)[i], registry.All(), command.node, &devices[i]);
  }
  for (size_t i = 0; i < plans->size(); ++i) {
    const UnpublishPlan& plan = (*plans)[i];
    const absl::Status status = unpublished[i].status.ok() ? devices[i].status : unpublished[i].status;
    outcome.ok = outcome.ok && status.ok();
    json entry = plan.block.has_value()
                     ? json{{"volumeDevice", plan.block->pod_map}, {"volumeMode", "Block"}}
                     : json{{"volumeDir", plan.paths.dir}, {"volumeMode", "Filesystem"}};
    ReportOutcome(unpublished[i], &entry);
    if (device_due[i]) {
      json device;
      ReportOutcome(devices[i], &device);
      if (device.contains("calls")) entry["deviceCalls"] = device["calls"];
      if (device.contains("hostOperations")) {
        entry["deviceHostOperations"] = device["hostOperations"];
      }
      for (const auto& note : device.value("notes", json::array())) entry["notes"].push_back(note);
    }
    entry["result"] = status.ok() ? "unpublished" : std::string(status.message());
    if (!status.ok()) {
      outcome.volume_errors.push_back(
          absl::StrCat(plan.block.has_value() ? plan.block->pod_map : plan.paths.dir, ": ",
                       status.message()));
    }
    volumes.push_back(entry);
  }
  // unmountDetachDevices goes on to the devices no pod needs: UnmountDevice of each.
  const DriverRegistry::Snapshot drivers = registry.All();
  for (const StrandedDevice& device : stranded) {
    VolumeOutcome unmounted;
    UnpublishStrandedDevice(device, drivers, command.node, &unmounted);
    outcome.ok = outcome.ok && unmounted.status.ok();
    json entry{{"device", device.device.globalmount},
               {"volumeMode", "Filesystem"},
               {"calls", json::array()},
               {"notes",
                json::array({"a staged device no pod on this node uses (its NodeStageVolume "
                             "ended uncertain, or an earlier NodeUnstageVolume failed): kubelet's "
                             "reconciler unmounts it (unmountDetachDevices)"})}};
    json report;
    ReportOutcome(unmounted, &report);
    if (report.contains("calls")) entry["deviceCalls"] = report["calls"];
    entry["result"] = unmounted.status.ok() ? "unstaged" : std::string(unmounted.status.message());
    if (!unmounted.status.ok()) {
      outcome.volume_errors.push_back(
          absl::StrCat(device.device.globalmount, ": ", unmounted.status.message()));
    }
    volumes.push_back(entry);
  }
  for (const std::string& why : not_devices) {
    volumes.push_back(json{{"skipped", absl::StrCat("not a device kubelet staged: ", why)}});
  }
  out["volumes"] = volumes;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

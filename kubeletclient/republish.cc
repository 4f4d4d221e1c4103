#include "kubeletclient/republish.h"

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/csi_block.h"
#include "kubeletclient/csi/csi_mounter.h"
#include "kubeletclient/csi/expander.h"

namespace ndr::kubelet {

using json = nlohmann::ordered_json;

namespace {

// The remount of one volume (GenerateMountVolumeFunc or GenerateMapVolumeFunc once more, the
// device already mounted): SetUp or MapPodDevice, then the expansion check.
VolumeOutcome Remount(const VolumePlan& plan, const ObjectSet& objects, const NodeOptions& node,
                      const std::string& pod_ns) {
  VolumeOutcome outcome;
  CsiNodeClient client(plan.endpoint, node.timeout, &outcome.calls);
  outcome.notes.push_back(plan.block.has_value()
                              ? "SetUpDevice skipped: the device is set up already"
                              : "MountDevice skipped: the device is mounted already");
  outcome.status = plan.block.has_value() ? MapPodDevice(plan, &client)
                                          : SetUp(plan, &client, node.tokens, &outcome.notes);
  if (!outcome.status.ok()) return outcome;
  ExpansionOutcome expansion = ExpandVolumeDuringMount(plan, objects, node, pod_ns, &client);
  outcome.notes.insert(outcome.notes.end(), expansion.notes.begin(), expansion.notes.end());
  outcome.claim_status = expansion.claim_status;
  outcome.status = expansion.status;
  return outcome;
}

}  // namespace

CommandOutcome RunRepublish(const PublishCommand& command, int rounds, absl::Duration interval) {
  CommandOutcome outcome;
  absl::StatusOr<Inputs> inputs = ReadInputs(command);
  if (!inputs.ok()) {
    outcome.error = std::string(inputs.status().message());
    return outcome;
  }
  const Pod& pod = inputs->pod;
  const ObjectSet& objects = inputs->objects;
  const absl::Time start = absl::Now();
  absl::Time now = start;
  absl::StatusOr<TokenSource> tokens = StartTokenSource(command, objects, [&now] { return now; });
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
  json out = ReportHead(pod, *std::move(registrations), node);
  PodPlan plan = PlanVolumes(pod, objects, registry.All(), node);
  WaitForAttachments(objects, node.node_name, &plan);
  outcome.ok = true;
  json all_rounds = json::array();
  for (int round = 1; round <= rounds; ++round) {
    now = start + (round - 1) * interval;
    json volumes = json::array();
    for (PlannedVolume& volume : plan.volumes) {
      if (!volume.skipped.empty()) {
        volumes.push_back({{"volume", volume.name}, {"skipped", volume.skipped}});
        continue;
      }
      json entry = volume.plan.has_value() ? DescribePlan(*volume.plan)
                                           : json{{"volume", volume.name}};
      absl::Status status = volume.status;
      if (status.ok() && !volume.plan->requires_republish) {
        entry["result"] = absl::StrCat(
            "untouched: CSIDriver ", volume.plan->driver,
            objects.csi_drivers.count(volume.plan->driver) == 0
                ? " has no object, so requiresRepublish is false"
                : " does not set requiresRepublish",
            ": kubelet mounts its volumes once");
        volumes.push_back(entry);
        continue;
      }
      if (status.ok()) {
        if (absl::Status published = CheckPublished(*volume.plan); !published.ok()) {
          // The remount (csi_plugin.go RequiresRemount, the reconciler's MountVolume with
          // isRemount) is of volumes kubelet has mounted; one whose mount failed is mounted
          // again by the reconciler as any other (kubeletclient publish), not remounted.
          entry["skipped"] = absl::StrCat(
              "not published on this node: kubelet remounts only what it has mounted (",
              published.message(), ")");
          volumes.push_back(entry);
          continue;
        }
      }
      if (status.ok()) {
        VolumeOutcome remounted = Remount(*volume.plan, objects, node, pod.ns);
        ReportOutcome(remounted, &entry);
        status = remounted.status;
        if (status.ok()) entry["result"] = "republished";
      }
      if (!status.ok()) {
        outcome.ok = false;
        entry["result"] = absl::StrCat("not republished: ", status.message());
        outcome.volume_errors.push_back(absl::StrCat("round ", round, ": volume \"", volume.name,
                                                     "\": ", status.message()));
      }
      volumes.push_back(entry);
    }
    all_rounds.push_back(
        {{"round", round},
         {"clock", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone())},
         {"volumes", volumes}});
  }
  out["rounds"] = all_rounds;
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

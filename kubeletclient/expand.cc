#include "kubeletclient/expand.h"

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/expander.h"

namespace ndr::kubelet {

using json = nlohmann::ordered_json;

CommandOutcome RunExpand(const PublishCommand& command, const std::string& volume_name) {
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
  absl::StatusOr<VolumePlan*> found = FindPlannedVolume(&pod_plan, pod, volume_name);
  absl::Status refused = found.status();
  if (refused.ok() && (*found)->mode != "Persistent") {
    // checkIfSupportsNodeExpansion: only a volume with a PersistentVolume.
    refused = absl::FailedPreconditionError(absl::StrCat(
        "volume \"", volume_name, "\" is an inline CSI volume: kubelet expands only volumes of "
        "PersistentVolumes"));
  }
  if (refused.ok()) refused = CheckPublished(**found);
  if (refused.ok()) {
    const PersistentVolumeClaim& claim = *(*found)->claim_object;
    if (claim.requested.has_value() && claim.capacity.has_value() &&
        claim.requested->value() < claim.capacity->value()) {
      refused = absl::InvalidArgumentError(absl::StrCat(
          "claim ", claim.ns, "/", claim.name, " asks for ", claim.requested->String(),
          " (spec.resources.requests.storage) but has ", claim.capacity->String(),
          " (status.capacity.storage): volumes are never shrunk; the API server refuses a "
          "smaller request (\"field can not be less than previous value\")"));
    }
  }
  if (!refused.ok()) {
    outcome.error = Refusal(pod, refused, "nothing was expanded");
    out["error"] = outcome.error;
    outcome.json = out.dump(2) + "\n";
    return outcome;
  }
  const VolumePlan& plan = **found;
  json entry = DescribePlan(plan);
  const auto size = [](const std::optional<Quantity>& q) { return q.has_value() ? q->String() : "0"; };
  entry["claimCapacity"] = size(plan.claim_object->capacity);
  entry["volumeCapacity"] = size(plan.pv_capacity);
  if (!NeedsNodeExpansion(plan)) {
    entry["result"] = absl::StrCat(
        "not expanded: the claim's status capacity (", size(plan.claim_object->capacity),
        ") is not below the PV's capacity (", size(plan.pv_capacity),
        "), so kubelet sees nothing to expand (volumeRequiresFSResize)");
    outcome.ok = true;
  } else {
    VolumeOutcome result;
    CsiNodeClient client(plan.endpoint, command.node.timeout, &result.calls);
    ExpansionOutcome expansion =
        ExpandInUseVolume(plan, inputs->objects, command.node, pod.ns, &client);
    result.notes = expansion.notes;
    result.claim_status = expansion.claim_status;
    result.status = expansion.status;
    ReportOutcome(result, &entry);
    outcome.ok = result.status.ok();
    if (!result.status.ok()) {
      entry["result"] = std::string(result.status.message());
      outcome.volume_errors.push_back(
          absl::StrCat("volume \"", volume_name, "\": ", result.status.message()));
    } else if (!expansion.not_expanded.empty()) {
      entry["result"] = "not expanded: " + expansion.not_expanded;
    } else {
      entry["result"] = absl::StrCat(
          "expanded to ", (expansion.size.has_value() ? *expansion.size : *plan.pv_capacity).String());
    }
  }
  out["volumes"] = json::array({entry});
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

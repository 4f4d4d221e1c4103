#include "kubeletclient/csi/expander.h"

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/operation_error.h"
#include "kubeletclient/objects/object_validation.h"

namespace ndr::kubelet {
namespace {

// VolumeToMount.GenerateError's simple form: `<prefix> for volume "<spec name>" : <error>`.
absl::Status VolumeError(const std::string& prefix, const std::string& spec_name,
                         const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, " for volume ", GoQuote(spec_name),
                                                  " : ", status.message()));
}

int64_t ClaimCapacity(const VolumePlan& plan) {
  return plan.claim_object.has_value() && plan.claim_object->capacity.has_value()
             ? plan.claim_object->capacity->value()
             : 0;
}

int64_t PvCapacity(const VolumePlan& plan) {
  return plan.pv_capacity.has_value() ? plan.pv_capacity->value() : 0;
}

// csiPlugin.NodeExpand, nodeExpandWithClient (expander.go): the capability check, the secret,
// the request. Errors in its words; `in_use` is set when the driver answered FAILED_PRECONDITION
// (inUseError: it cannot expand the volume while it is published).
absl::Status NodeExpand(const VolumePlan& plan, const ObjectSet& objects,
                        const NodeOptions& options, const std::string& pod_ns, int64_t new_size,
                        CsiNodeClient* client, bool* in_use, bool* not_supported) {
  absl::StatusOr<bool> supported = client->NodeSupportsNodeExpand();
  if (!supported.ok()) {
    return absl::Status(supported.status().code(),
                        absl::StrCat("Expander.NodeExpand failed to check if node supports "
                                     "expansion : ",
                                     supported.status().message()));
  }
  if (!*supported) {
    *not_supported = true;
    // v1.28+: an OperationNotSupportedError (ReleaseBehaviour::kExpandUnsupportedIs...).
    if (options.release.Has(ReleaseBehaviour::kExpandUnsupportedIsNotSupportedError)) {
      return absl::UnimplementedError(
          absl::StrCat("NodeExpand is not supported by the CSI driver ", plan.driver));
    }
    return absl::UnimplementedError(
        absl::StrCat("Expander.NodeExpand found CSI plugin kubernetes.io/csi/", plan.driver,
                     " to not support node expansion (it lacks the EXPAND_VOLUME node "
                     "capability)"));
  }
  StringMap secrets;
  if (options.feature_gates.csi_node_expand_secret && plan.expand_secret_ref.has_value()) {
    absl::StatusOr<StringMap> data = CredentialsFromSecret(objects, *plan.expand_secret_ref, pod_ns);
    if (!data.ok()) {
      return absl::Status(data.status().code(),
                          absl::StrCat("expander.NodeExpand failed to get NodeExpandSecretRef ",
                                       plan.expand_secret_ref->first, "/",
                                       plan.expand_secret_ref->second, ": ",
                                       data.status().message()));
    }
    secrets = *std::move(data);
  }
  // The PV's first access mode (ReadWriteOnce without one), its mount options as they are, and
  // for block the "block" fs type that makes a Block capability.
  CapabilityArgs capability;
  capability.access_mode = plan.access_modes.empty() ? "ReadWriteOnce" : plan.access_modes[0];
  capability.block = plan.block.has_value();
  if (!capability.block) {
    capability.fs_type = plan.capability.fs_type;
    capability.mount_flags = plan.pv_mount_options;
  }
  const ExpansionPaths paths = ExpansionPathsFor(plan);
  absl::StatusOr<int64_t> expanded = client->NodeExpandVolume(
      plan.handle, paths.volume_path, paths.staging_path, new_size, capability, secrets);
  if (!expanded.ok()) {
    *in_use = absl::IsFailedPrecondition(expanded.status());
    return absl::Status(expanded.status().code(),
                        absl::StrCat("Expander.NodeExpand failed to expand the volume : ",
                                     expanded.status().message()));
  }
  return absl::OkStatus();
}

// legacyCallNodeExpandOnPlugin: NodeExpand, then what kubelet makes of its answer.
ExpansionOutcome CallNodeExpand(const VolumePlan& plan, const ObjectSet& objects,
                                const NodeOptions& options, const std::string& pod_ns,
                                const std::string& failure_prefix, CsiNodeClient* client) {
  ExpansionOutcome outcome;
  outcome.requested = true;
  const PersistentVolumeClaim& claim = *plan.claim_object;
  const Quantity new_size = *plan.pv_capacity;
  bool in_use = false;
  bool not_supported = false;
  absl::Status status = NodeExpand(plan, objects, options, pod_ns, new_size.value(), client,
                                   &in_use, &not_supported);
  if (not_supported &&
      options.release.Has(ReleaseBehaviour::kExpandUnsupportedIsNotSupportedError)) {
    // legacyCallNodeExpandOnPlugin (v1.28+): IsOperationNotSupportedError, the resize counts as
    // finished; the mount goes on and the claim's status is not changed.
    outcome.requested = false;
    outcome.notes.push_back(absl::StrCat(
        "MountVolume.NodeExpandVolume failed for volume ", GoQuote(plan.spec_name),
        ": NodeExpandVolume not supported (", status.message(),
        "); kubelet 1.28+ takes the resize as done and goes on, the claim's status unchanged"));
    outcome.not_expanded = "the driver lacks the EXPAND_VOLUME node capability";
    return outcome;
  }
  if (in_use) {
    // The driver's FAILED_PRECONDITION: not now, the volume is in use. Not a failed mount.
    outcome.notes.push_back(absl::StrCat(
        VolumeError("MountVolume.NodeExapndVolume failed", plan.spec_name, status).message(),
        "; kubelet marks the volume so that it is not expanded again while in use on this node "
        "(MarkForInUseExpansionError) and goes on; the claim's status is not changed"));
    outcome.not_expanded =
        "the driver answered FAILED_PRECONDITION: it cannot expand the volume while it is in use";
    return outcome;
  }
  if (!status.ok()) {
    std::string hint;
    if (!claim.capacity.has_value()) {
      hint = absl::StrCat(
          " (kubelet tried to expand the volume because claim ", claim.ns, "/", claim.name,
          " has no status.capacity.storage, which it reads as 0, below the PV's capacity ",
          new_size.String(), "; a PV controller sets it when it binds the claim)");
    }
    outcome.status = VolumeError(failure_prefix, plan.spec_name,
                                 absl::Status(status.code(), absl::StrCat(status.message(), hint)));
    return outcome;
  }
  outcome.notes.push_back(absl::StrCat(
      "MountVolume.NodeExpandVolume succeeded for volume ", GoQuote(plan.spec_name), " ",
      options.node_name, ": expanded from ",
      claim.capacity.has_value() ? claim.capacity->String() : "0 (no status.capacity)", " to ",
      new_size.String()));
  if (ClaimCapacity(plan) >= new_size.value()) return outcome;  // the claim has it already
  // util.MarkFSResizeFinished: the new capacity; MergeResizeConditionOnPVC with no conditions
  // drops the resize conditions and keeps the others.
  ClaimStatusUpdate update;
  update.claim = absl::StrCat(claim.ns, "/", claim.name);
  update.phase = claim.phase;
  update.capacity = new_size;
  for (const ClaimCondition& condition : claim.conditions) {
    if (condition.type != "Resizing" && condition.type != "FileSystemResizePending") {
      update.conditions.push_back(condition);
    }
  }
  outcome.claim_status = update;
  return outcome;
}

}  // namespace

ExpansionPaths ExpansionPathsFor(const VolumePlan& plan) {
  if (plan.block.has_value()) return {plan.block->publish, plan.block->staging};
  return {plan.paths.mount, plan.device.has_value() ? plan.device->globalmount : ""};
}

bool NeedsNodeExpansion(const VolumePlan& plan) {
  return plan.mode == "Persistent" && plan.claim_object.has_value() &&
         ClaimCapacity(plan) < PvCapacity(plan);
}

ExpansionOutcome ExpandVolumeDuringMount(const VolumePlan& plan, const ObjectSet& objects,
                                         const NodeOptions& options, const std::string& pod_ns,
                                         CsiNodeClient* client) {
  // checkIfSupportsNodeExpansion: persistent volumes only; then pvcStatusCap < pvSpecCap.
  if (!NeedsNodeExpansion(plan)) return {};
  if (plan.read_only) {
    ExpansionOutcome outcome;
    outcome.notes.push_back(absl::StrCat(
        "MountVolume.NodeExpandVolume failed for volume ", GoQuote(plan.spec_name),
        " requested read-only file system: the claim's status capacity is below the PV's, but "
        "kubelet does not expand a read-only volume (a FileSystemResizeFailed warning on the pod "
        "and the claim) and mounts it as it is"));
    outcome.not_expanded = "the volume is read-only";
    return outcome;
  }
  return CallNodeExpand(plan, objects, options, pod_ns,
                        plan.block.has_value()
                            ? "MapVolume.MarkVolumeAsMounted failed while expanding volume"
                            : "MountVolume.Setup failed while expanding volume",
                        client);
}

ExpansionOutcome ExpandInUseVolume(const VolumePlan& plan, const ObjectSet& objects,
                                   const NodeOptions& options, const std::string& pod_ns,
                                   CsiNodeClient* client) {
  ExpansionOutcome outcome;
  if (ClaimCapacity(plan) == 0 || PvCapacity(plan) == 0) {
    outcome.status = VolumeError(
        "NodeExpandvolume.expansion failed", plan.spec_name,
        absl::FailedPreconditionError(
            "current or new size of the volume is not set (the claim's status.capacity.storage "
            "and the PV's spec.capacity.storage must both be set)"));
    return outcome;
  }
  if (plan.read_only) {
    outcome.notes.push_back(absl::StrCat(
        "MountVolume.NodeExpandVolume failed for volume ", GoQuote(plan.spec_name),
        " requested read-only file system: kubelet does not expand a read-only volume (a "
        "FileSystemResizeFailed warning on the pod and the claim)"));
    outcome.not_expanded = "the volume is read-only";
    return outcome;
  }
  return CallNodeExpand(plan, objects, options, pod_ns, "NodeExpandVolume.NodeExpandVolume failed",
                        client);
}

}  // namespace ndr::kubelet

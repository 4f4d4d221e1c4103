#include "kubeletclient/csi/expander.h"

#include <algorithm>

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

// csi/expander.go isInfeasibleError (v1.31+): the driver says the size can never be had.
bool IsInfeasibleExpandError(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsOutOfRange(status) ||
         absl::IsNotFound(status);
}

// operation_generator.go checkForRecoveryFromExpansion: whether the claim takes the recovery
// path (NodeExpander) rather than legacyCallNodeExpandOnPlugin.
bool UsesExpansionRecovery(const PersistentVolumeClaim& claim, const NodeOptions& options) {
  const bool written = !claim.resize_status.empty() || claim.has_allocated_resources;
  if (options.feature_gates.recover_volume_expansion_failure) return written;
  // The gate off: from v1.31.14, v1.32.13 and v1.33.6 on, what the resizer wrote still counts.
  return written && options.release.minor >= 31;
}

// The resize conditions MergeResizeConditionOnPVC knows (resize_util.go knownResizeConditions).
bool IsResizeCondition(const std::string& type) {
  return type == "Resizing" || type == "FileSystemResizePending" ||
         type == "ControllerResizeError" || type == "NodeResizeError";
}


// csiPlugin.NodeExpand, nodeExpandWithClient (expander.go): the capability check, the secret,
// the request. Errors in its words; `in_use` is set when the driver answered FAILED_PRECONDITION
// (inUseError: it cannot expand the volume while it is published).
absl::Status NodeExpand(const VolumePlan& plan, const ObjectSet& objects,
                        const NodeOptions& options, const std::string& pod_ns, int64_t new_size,
                        CsiNodeClient* client, bool* in_use, bool* not_supported,
                        bool* from_driver = nullptr) {
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
    // The driver's own answer to NodeExpandVolume (kubelet's isInfeasibleError and
    // isFinalError look at it alone), not a failure before the call.
    const bool sent = client->LastMethodIs("NodeExpandVolume");
    if (from_driver != nullptr) *from_driver = sent;
    *in_use = sent && absl::IsFailedPrecondition(expanded.status());
    // isInfeasibleError (v1.31+): an InfeasibleError, worded without the " :".
    if (sent && IsInfeasibleExpandError(expanded.status()) &&
        options.release.Has(ReleaseBehaviour::kInfeasibleExpandErrors)) {
      return absl::Status(expanded.status().code(),
                          absl::StrCat("Expander.NodeExpand failed to expand the volume ",
                                       expanded.status().message()));
    }
    return absl::Status(expanded.status().code(),
                        absl::StrCat("Expander.NodeExpand failed to expand the volume : ",
                                     expanded.status().message()));
  }
  return absl::OkStatus();
}

// node_expander.go runPreCheck and expandOnPlugin, with resize_util.go's status patches.
ExpansionOutcome RecoveryNodeExpand(const VolumePlan& plan, const ObjectSet& objects,
                                    const NodeOptions& options, const std::string& pod_ns,
                                    const std::string& failure_prefix, CsiNodeClient* client) {
  ExpansionOutcome outcome;
  const PersistentVolumeClaim& claim = *plan.claim_object;
  // The size: the claim's status.allocatedResources from 1.32 (nodeExpandVolume,
  // expandVolumeDuringMount set rsOpts.NewSize from it, v1.32.2 on); before, the NodeExpander
  // takes the PV's capacity, as the legacy path does (v1.31.14, measured by the goldens).
  const bool allocated_size = options.release.minor >= 32;
  const Quantity new_quantity = allocated_size ? claim.allocated.value_or(Quantity())
                                               : plan.pv_capacity.value_or(Quantity());
  const int64_t new_size = new_quantity.value();
  const std::string& resize_status = claim.resize_status;
  ClaimStatusUpdate update;
  update.claim = absl::StrCat(claim.ns, "/", claim.name);
  update.phase = claim.phase;
  update.capacity = claim.capacity;
  update.conditions = claim.conditions;
  update.resize_status = resize_status;
  outcome.notes.push_back(absl::StrCat(
      "expansion recovery (RecoverVolumeExpansionFailure): the size is ",
      allocated_size ? "the claim's status.allocatedResources (" : "the PV's capacity (",
      new_quantity.String(), "), the claim's resize status ",
      resize_status.empty() ? "unset" : GoQuote(resize_status)));
  const bool already_updated = ClaimCapacity(plan) >= new_size && resize_status.empty();
  const bool rwx = std::find(claim.access_modes.begin(), claim.access_modes.end(),
                             "ReadWriteMany") != claim.access_modes.end();
  const bool allowed =
      (already_updated && rwx &&
       claim.annotation_keys.count("volume.kubernetes.io/node-expansion-not-required") == 0) ||
      resize_status == "NodeResizePending" || resize_status == "NodeResizeInProgress";
  if (!allowed) {
    outcome.not_expanded =
        already_updated
            ? "the claim already has its allocated size: kubelet takes the resize as done"
            : absl::StrCat("NodeExpandVolume is not allowed to proceed for volume ",
                           plan.spec_name, " with resizeStatus ",
                           resize_status.empty() ? "\"\"" : resize_status,
                           " (kubelet expands only while it is NodeResizePending or "
                           "NodeResizeInProgress)");
    return outcome;
  }
  if (!already_updated) {
    update.resize_status = "NodeResizeInProgress";
    update.patches.push_back("allocatedResourceStatuses.storage: NodeResizeInProgress");
  }
  outcome.requested = true;
  outcome.size = new_quantity;
  bool in_use = false, not_supported = false, from_driver = false;
  absl::Status status = NodeExpand(plan, objects, options, pod_ns, new_size, client, &in_use,
                                   &not_supported, &from_driver);
  if (!status.ok()) {
    if (not_supported && already_updated) {
      outcome.not_expanded = "the driver lacks EXPAND_VOLUME and the claim has its size already";
      return outcome;
    }
    // IsOperationFinishedError: the driver's non-final gRPC code is an UncertainProgressError
    // (csi_client.go NodeExpandVolume): nothing is marked on the claim. A failure before the
    // call (the secret, NodeGetCapabilities) is a plain error: finished.
    if (from_driver && !IsFinalError(status)) {
      outcome.claim_status = update;
      outcome.status = VolumeError(failure_prefix, plan.spec_name, status);
      return outcome;
    }
    ClaimCondition error{"NodeResizeError", "True", "",
                         absl::StrCat("failed to expand pvc with ", status.message())};
    std::vector<ClaimCondition> conditions;
    bool replaced = false;
    for (const ClaimCondition& c : update.conditions) {
      if (c.type == "NodeResizeError") {
        conditions.push_back(c.status == error.status ? c : error);
        replaced = true;
      } else {
        conditions.push_back(c);
      }
    }
    if (!replaced) conditions.push_back(error);
    update.conditions = conditions;
    if (from_driver && IsInfeasibleExpandError(status) &&
        options.release.Has(ReleaseBehaviour::kInfeasibleExpandErrors)) {
      update.resize_status = "NodeResizeInfeasible";
      update.patches.push_back(
          "allocatedResourceStatuses.storage: NodeResizeInfeasible, condition NodeResizeError");
    } else {
      update.patches.push_back("condition NodeResizeError");
    }
    outcome.claim_status = update;
    if (in_use) {
      outcome.notes.push_back(absl::StrCat(
          VolumeError("MountVolume.NodeExpandVolume failed with", plan.spec_name, status)
              .message(),
          "; not retried on this node while in use, and the mount goes on"));
      outcome.not_expanded =
          "the driver answered FAILED_PRECONDITION: it cannot expand the volume while it is in "
          "use";
      return outcome;
    }
    outcome.status = VolumeError(failure_prefix, plan.spec_name, status);
    return outcome;
  }
  outcome.notes.push_back(absl::StrCat("MountVolume.NodeExpandVolume succeeded for volume ",
                                       GoQuote(plan.spec_name), " ", options.node_name,
                                       ": expanded to ", new_quantity.String()));
  if (already_updated) return outcome;
  // MarkNodeExpansionFinishedWithRecovery: the new capacity, the storage status gone, the resize
  // conditions dropped.
  update.capacity = new_quantity;
  update.resize_status = "";
  std::vector<ClaimCondition> kept;
  for (const ClaimCondition& c : update.conditions) {
    if (!IsResizeCondition(c.type)) kept.push_back(c);
  }
  update.conditions = kept;
  update.patches.push_back(absl::StrCat("capacity ", new_quantity.String(),
                                        ", allocatedResourceStatuses.storage removed"));
  outcome.claim_status = update;
  return outcome;
}

// legacyCallNodeExpandOnPlugin: NodeExpand, then what kubelet makes of its answer.
ExpansionOutcome CallNodeExpand(const VolumePlan& plan, const ObjectSet& objects,
                                const NodeOptions& options, const std::string& pod_ns,
                                const std::string& failure_prefix, CsiNodeClient* client) {
  if (UsesExpansionRecovery(*plan.claim_object, options)) {
    return RecoveryNodeExpand(plan, objects, options, pod_ns, failure_prefix, client);
  }
  ExpansionOutcome outcome;
  outcome.requested = true;
  const PersistentVolumeClaim& claim = *plan.claim_object;
  const Quantity new_size = *plan.pv_capacity;
  outcome.size = new_size;
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

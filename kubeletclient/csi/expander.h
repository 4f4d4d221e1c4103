// Node expansion of a persistent volume's file system (or block device), as kubelet v1.26 does it:
// the CSI plugin's NodeExpand (pkg/volume/csi/expander.go) driven by the operation generator
// (pkg/volume/util/operationexecutor/operation_generator.go):
//
//  - at mount, after SetUp or MapBlockVolume (expandVolumeDuringMount): when the claim's
//    status.capacity (missing counts as 0) is below the PV's spec.capacity and the volume is not
//    read-only, NodeExpandVolume is sent, whatever the driver's capabilities: a driver without
//    EXPAND_VOLUME fails the mount (to 1.27; from 1.28 kubelet takes the resize as done:
//    ReleaseBehaviour::kExpandUnsupportedIsNotSupportedError). The volume path is the pod's mount directory (for block: the
//    publish path), the staging path the globalmount (for block: volumeDevices/staging/<pv>),
//    even for a driver that does not stage;
//  - online, for a volume already published (GenerateExpandInUseVolumeFunc, doOnlineExpansion,
//    nodeExpandVolume), the same call with the same paths.
//
// A claim the external resizer has written status.allocatedResources or
// allocatedResourceStatuses on, with RecoverVolumeExpansionFailure on (by default from v1.32;
// from v1.31.14, v1.32.13 and v1.33.6 whenever they are written), takes the recovery path
// instead (checkForRecoveryFromExpansion, node_expander.go NodeExpander, v1.37.2): the size is
// status.allocatedResources from v1.32 (the PV's capacity in v1.31), the call is made only while
// the resize status is NodeResizePending or NodeResizeInProgress (or the claim already has the
// size and is ReadWriteMany), kubelet
// patches NodeResizeInProgress before it and, on success, the new capacity without the status;
// an error adds a NodeResizeError condition, and INVALID_ARGUMENT, OUT_OF_RANGE or NOT_FOUND
// (v1.31+) mark the resize NodeResizeInfeasible.
//
// Otherwise legacyCallNodeExpandOnPlugin judges the answer: FAILED_PRECONDITION means "not
// while in use": kubelet does not retry it on this node and does not fail the mount; success
// makes kubelet write the claim's status (util.MarkFSResizeFinished): the capacity is the PV's,
// the Resizing and FileSystemResizePending conditions are gone.
#ifndef NDR_KUBELETCLIENT_CSI_EXPANDER_H_
#define NDR_KUBELETCLIENT_CSI_EXPANDER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"

namespace ndr::kubelet {

// The claim's status after a successful expansion, as kubelet patches it.
struct ClaimStatusUpdate {
  std::string claim;  // namespace/name
  std::string phase;
  std::optional<Quantity> capacity;  // unchanged (and absent) when the claim had none
  std::vector<ClaimCondition> conditions;
  // Expansion recovery: status.allocatedResourceStatuses.storage afterwards ("" when kubelet
  // removed it), and what kubelet patched on the way (NodeResizeInProgress before the call).
  std::optional<std::string> resize_status;
  std::vector<std::string> patches;
};

struct ExpansionOutcome {
  bool requested = false;  // NodeExpandVolume was sent
  std::optional<Quantity> size;  // the size it asked for (the PV's, or allocatedResources)
  std::optional<ClaimStatusUpdate> claim_status;  // what kubelet writes, if it writes anything
  std::vector<std::string> notes;
  // Set when kubelet leaves the volume as it is without failing: why (read-only; the driver's
  // FAILED_PRECONDITION).
  std::string not_expanded;
  absl::Status status;  // not OK: kubelet fails the operation with this
};

// The paths kubelet passes: the volume path and the staging path.
struct ExpansionPaths {
  std::string volume_path;
  std::string staging_path;
};
ExpansionPaths ExpansionPathsFor(const VolumePlan& plan);

// Whether the claim needs expanding on the node: its status capacity (0 if missing) is below the
// PV's capacity (0 if missing).
bool NeedsNodeExpansion(const VolumePlan& plan);

// expandVolumeDuringMount: nothing for an inline volume or one that needs no expansion.
// `operation` names the failure as kubelet does ("MountVolume.Setup failed while expanding
// volume", or for block "MapVolume.MarkVolumeAsMounted failed while expanding volume").
ExpansionOutcome ExpandVolumeDuringMount(const VolumePlan& plan, const ObjectSet& objects,
                                         const NodeOptions& options, const std::string& pod_ns,
                                         CsiNodeClient* client);

// GenerateExpandInUseVolumeFunc for a published volume that needs expansion.
ExpansionOutcome ExpandInUseVolume(const VolumePlan& plan, const ObjectSet& objects,
                                   const NodeOptions& options, const std::string& pod_ns,
                                   CsiNodeClient* client);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_EXPANDER_H_

// A pod's CSI volumes set up and torn down in kubelet's order, as its operation generator drives
// the CSI volume plugin (pkg/volume/util/operationexecutor/operation_generator.go):
//
//   filesystem volumes (GenerateMountVolumeFunc, GenerateUnmountVolumeFunc,
//   GenerateUnmountDeviceFunc):
//     publish:   WaitForAttach -> MountDevice (persistent volumes) -> SetUp
//     unpublish: TearDown -> UnmountDevice (when no other pod on the node uses the volume)
//   raw block volumes (GenerateMapVolumeFunc, GenerateUnmapVolumeFunc, GenerateUnmapDeviceFunc):
//     publish:   NewBlockVolumeMapper -> WaitForAttach -> SetUpDevice (unless another pod maps
//                the volume) -> MapPodDevice -> EvalHostSymlinks -> MapBlockVolume
//     unpublish: UnmapBlockVolume -> UnmapPodDevice -> TearDownDevice and RemoveMapPath (when no
//                other pod on the node maps the volume)
//
// kubelet keeps what it has mounted in memory and finds it again on disk after a restart;
// kubeletclient, which runs once per command, keeps nothing but what kubelet writes to disk, and
// reads it back: every pod's vol_data.json under <root>/pods says which pod uses which
// filesystem volume, its volumeDevices entries which block volumes it maps, and a device
// directory's vol_data.json what is staged. So separate commands (publish pod A, publish pod B,
// unpublish A, unpublish B) do what one kubelet would: the device is staged once, for the first
// pod, and unstaged once, after the last.
//
// Where kubeletclient differs because it runs once: kubelet retries a failed SetUp and, when the
// pod goes away, unmounts the device it staged; kubeletclient does that at once, so a publish
// that fails for good leaves no device staged that no pod uses, and a block volume that was
// published but could not be mapped is unmapped again. Errors that leave the driver's state
// uncertain (operation_error.h IsFinalError) leave files in place, as kubelet does.
#ifndef NDR_KUBELETCLIENT_CSI_PUBLISHER_H_
#define NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/csi/expander.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/csi/volume_paths.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/volumeutil/volume_path_handler.h"

namespace ndr::kubelet {

// What happened to one volume: every call sent to its driver, in order, every step on the host,
// and the result.
struct VolumeOutcome {
  std::vector<SentCall> calls;
  std::vector<HostStep> host_steps;  // block volumes: bind mounts, links, loop devices
  std::vector<std::string> notes;    // what was done or skipped, and why
  // The claim's status kubelet writes after expanding the volume (expander.h), if it does.
  std::optional<ClaimStatusUpdate> claim_status;
  absl::Status status;
};

// What kubelet checks against the node's state before it mounts a volume, for every volume of the
// plan that has no error yet: another pod's different SELinux label for the same volume
// (desired_state_of_world.go AddPodToVolume, "conflicting SELinux labels"), and a
// ReadWriteOncePod volume another pod on the node uses (operation_generator.go, with the
// ReadWriteOncePod gate). Errors go to the volume's status.
void CheckNodeState(const NodeOptions& options, PodPlan* plan);

// WaitForAttach for every volume of the plan that needs it and has no error yet: all are
// checked before anything is sent. Errors go to the volume's status.
void WaitForAttachments(const ObjectSet& objects, const std::string& node_name, PodPlan* plan);

// MountDevice (unless another pod on this node uses the device already) and SetUp, or the block
// sequence above; then, for a persistent volume whose claim is smaller than its PV, the
// expansion kubelet does at mount (expander.h). A volume that was published but could not be
// expanded is unpublished again, as kubelet does once the pod that cannot start is deleted.
VolumeOutcome PublishVolume(const VolumePlan& plan, const ObjectSet& objects,
                            const std::string& pod_ns, const NodeOptions& options);

// One volume of a pod to unpublish, as its vol_data.json records it.
struct UnpublishPlan {
  std::string pod_uid;
  std::string spec_name;             // the directory's name: the PV, or the inline volume
  PodVolumePaths paths;              // filesystem volumes
  std::optional<BlockPaths> block;   // block volumes
  VolumeRef volume;                  // driver, handle, and the rest of vol_data.json
};

// Reads and checks the vol_data.json of every CSI volume the pod has under `root_dir`
// (pods/<uid>/volumes/kubernetes.io~csi/* for filesystem volumes, then
// pods/<uid>/volumeDevices/kubernetes.io~csi/* for block volumes, whose vol_data.json is
// plugins/kubernetes.io/csi/volumeDevices/<pv>/data/vol_data.json), as hostile input
// (vol_data.h), before anything is sent. A volume without vol_data.json is an error, as in
// kubelet.
absl::StatusOr<std::vector<UnpublishPlan>> PlanUnpublish(const std::string& root_dir,
                                                         const std::string& pod_uid);

// A staged device that no pod on the node uses: kubelet's reconciler unmounts every device its
// desired state of world no longer needs (reconciler_common.go unmountDetachDevices, v1.26.15 to
// v1.37.2), among them one whose NodeStageVolume ended in an error that leaves the driver's state
// uncertain (operation_generator.go GenerateMountVolumeFunc: MarkDeviceAsUncertain) and whose pod
// then went away, and one whose NodeUnstageVolume failed (GenerateUnmountDeviceFunc). kubelet
// knows them from memory; kubeletclient keeps nothing between commands, and the same device
// shows on disk: its directory's vol_data.json (csi_attacher.go MountDevice writes it before
// NodeStageVolume and leaves it on such an error) with no pod volume of that driver and handle.
struct StrandedDevice {
  DevicePaths device;
  VolumeRef volume;
};

// The stranded devices under `root_dir`'s plugins/kubernetes.io/csi/<driver>/<hex SHA-256 of the
// handle>/, read as hostile input: a directory whose name is not a driver's, or not the hash of
// the handle its vol_data.json names, or whose vol_data.json does not load, is not kubelet's
// device and is left alone, with why in `skipped`.
std::vector<StrandedDevice> PlanStrandedDevices(const std::string& root_dir,
                                                std::vector<std::string>* skipped);

// The two halves of kubelet's teardown, which its reconciler runs in two passes over every
// volume (reconciler.go reconcile: unmountVolumes, then unmountDetachDevices):
//  - UnpublishFromPod: TearDown (filesystem), or UnmapBlockVolume and UnmapPodDevice (block);
//    true when the device's teardown is due (a persistent volume no other pod on the node uses);
//  - UnpublishDevice: UnmountDevice (filesystem), or UnmapDevice (TearDownDevice, block).
bool UnpublishFromPod(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                      const NodeOptions& options, VolumeOutcome* outcome);
void UnpublishDevice(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                     const NodeOptions& options, VolumeOutcome* outcome);

// UnmountDevice of a stranded device (unmountDetachDevices, as for a pod's last volume).
void UnpublishStrandedDevice(const StrandedDevice& device, const DriverRegistry::Snapshot& drivers,
                             const NodeOptions& options, VolumeOutcome* outcome);

// Both halves of one volume, one after the other (a pod with one volume).
VolumeOutcome UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                              const NodeOptions& options);

// Whether a pod other than `except_pod_uid` has a persistent filesystem volume of `driver` with
// `handle` (its vol_data.json under <root>/pods says so).
bool UsedByOtherPods(const std::string& root_dir, const std::string& driver,
                     const std::string& handle, const std::string& except_pod_uid);

// Whether a pod other than `except_pod_uid` maps the block volume of PV `spec_name` (it has
// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<spec_name>).
bool MappedByOtherPods(const std::string& root_dir, const std::string& spec_name,
                       const std::string& except_pod_uid);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

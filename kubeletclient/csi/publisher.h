// A pod's CSI volumes set up and torn down in kubelet's order, as its operation generator drives
// the CSI volume plugin (pkg/volume/util/operationexecutor/operation_generator.go):
//
//   publish:   WaitForAttach -> MountDevice (persistent volumes) -> SetUp
//   unpublish: TearDown -> UnmountDevice (when no other pod on the node uses the volume)
//
// kubelet keeps what it has mounted in memory and finds it again on disk after a restart;
// kubeletclient, which runs once per command, keeps nothing but what kubelet writes to disk, and
// reads it back: every pod's vol_data.json under <root>/pods says which pod uses which volume,
// and a device directory's vol_data.json says what is staged. So separate commands (publish pod
// A, publish pod B, unpublish A, unpublish B) do what one kubelet would: the device is staged
// once, for the first pod, and unstaged once, after the last.
//
// Where kubeletclient differs because it runs once: kubelet retries a failed SetUp and, when the
// pod goes away, unmounts the device it staged; kubeletclient does that at once, so a publish
// that fails for good leaves no device staged that no pod uses. Errors that leave the driver's
// state uncertain (operation_error.h IsFinalError) leave files in place, as kubelet does.
#ifndef NDR_KUBELETCLIENT_CSI_PUBLISHER_H_
#define NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/csi/volume_paths.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"

namespace ndr::kubelet {

// What happened to one volume: every call sent to its driver, in order, and the result.
struct VolumeOutcome {
  std::vector<SentCall> calls;
  std::vector<std::string> notes;  // what was done or skipped, and why
  absl::Status status;
};

// WaitForAttach for every plan that needs it: all are checked before anything is sent.
absl::Status WaitForAttachments(const ObjectSet& objects, const std::string& node_name,
                                std::vector<VolumePlan>* plans);

// MountDevice (unless another pod on this node uses the device already) and SetUp.
VolumeOutcome PublishVolume(const VolumePlan& plan, const ObjectSet& objects,
                            const std::string& pod_ns, const NodeOptions& options);

// One volume of a pod to unpublish, as its vol_data.json records it.
struct UnpublishPlan {
  std::string pod_uid;
  PodVolumePaths paths;
  VolumeRef volume;  // driver, handle, and the rest of vol_data.json
};

// Reads and checks the vol_data.json of every CSI volume directory the pod has under
// `root_dir` (hostile input: vol_data.h), before anything is sent. A directory without
// vol_data.json is an error, as in kubelet.
absl::StatusOr<std::vector<UnpublishPlan>> PlanUnpublish(const std::string& root_dir,
                                                         const std::string& pod_uid);

// TearDown, then UnmountDevice of a persistent volume no other pod on this node uses.
VolumeOutcome UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                              const NodeOptions& options);

// Whether a pod other than `except_pod_uid` has a persistent volume of `driver` with `handle`
// (its vol_data.json under <root>/pods says so).
bool UsedByOtherPods(const std::string& root_dir, const std::string& driver,
                     const std::string& handle, const std::string& except_pod_uid);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

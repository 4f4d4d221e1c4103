// The mount half of kubelet's CSI volume plugin (pkg/volume/csi: csi_mounter, csi_plugin).
//
// PlanVolumes turns a Pod's CSI volumes (inline, or persistentVolumeClaim through a PVC bound
// to a CSI PersistentVolume) into the NodePublishVolume requests kubelet would send, checking
// everything first (lifecycle modes with kubelet's texts, the node's inline-driver policy, the
// driver's registration, secrets), so that an invalid pod publishes nothing at all.
// PublishVolume writes vol_data.json beside the mount directory and calls the driver;
// PlanUnpublish reads the handles back from vol_data.json, checked as hostile input, and
// UnpublishVolume calls the driver. Every path comes from volume_paths.h, which never returns one
// outside --root-dir. Publishing and unpublishing may be repeated.
#ifndef NDR_KUBELETCLIENT_CSI_PUBLISHER_H_
#define NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/csi/volume_paths.h"

namespace ndr::kubelet {

// The pod-info keys kubelet adds to volume_context for drivers that ask.
inline constexpr char kPodNameKey[] = "csi.storage.k8s.io/pod.name";
inline constexpr char kPodNamespaceKey[] = "csi.storage.k8s.io/pod.namespace";
inline constexpr char kPodUidKey[] = "csi.storage.k8s.io/pod.uid";
inline constexpr char kServiceAccountKey[] = "csi.storage.k8s.io/serviceAccount.name";
inline constexpr char kEphemeralKey[] = "csi.storage.k8s.io/ephemeral";

struct NodeOptions {
  std::string root_dir = "/var/lib/kubelet";  // --root-dir
  std::string node_name;
  // Drivers whose inline (ephemeral) volumes this node allows; empty allows none, like a
  // PodSecurityPolicy's AllowedCSIDrivers.
  std::set<std::string> allowed_inline_drivers;
  absl::Duration timeout = absl::Minutes(2);  // kubelet's csiTimeout
};

struct VolumePlan {
  std::string pod_volume;  // the pod's volume name
  std::string driver;
  std::string endpoint;
  std::string mode;        // "Persistent" or "Ephemeral"
  PodVolumePaths paths;    // under <root>/pods/<uid>/volumes/kubernetes.io~csi/<spec name>
  std::map<std::string, std::string> vol_data;  // what vol_data.json holds
  csi::v1::NodePublishVolumeRequest request;
};

// "csi-" + lowercase hex SHA-256 of pod UID + volume name: kubelet's inline volume handle.
std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name);
// kubelet's getAttachmentName: "csi-" + hex SHA-256 of handle + driver + node.
std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node);

absl::StatusOr<std::vector<VolumePlan>> PlanVolumes(const Pod& pod, const ObjectSet& objects,
                                                    const DriverRegistry::Snapshot& drivers,
                                                    const NodeOptions& options);

// What `plan` asks the driver, as JSON, with secret values replaced by "(redacted)".
std::string RedactedRequestJson(const csi::v1::NodePublishVolumeRequest& request);

// Checks what can be checked with the driver before anything is published: that it does not
// need NodeStageVolume, which this client does not implement.
absl::Status PreflightVolume(const VolumePlan& plan, const NodeOptions& options);

absl::Status PublishVolume(const VolumePlan& plan, const NodeOptions& options);

// One volume of a pod to unpublish, as its vol_data.json records it.
struct UnpublishPlan {
  PodVolumePaths paths;
  std::string driver;  // driverName
  std::string handle;  // volumeHandle
};

// Reads and checks the vol_data.json of every CSI volume directory the pod has under
// `root_dir`. vol_data.json is read from disk, so it is as hostile as any object file: its driver
// name and handle must pass the rules an object's must (object_validation.h), and an error names
// the file, the field and the rule. A directory without vol_data.json is an error, as in kubelet.
absl::StatusOr<std::vector<UnpublishPlan>> PlanUnpublish(const std::string& root_dir,
                                                         const std::string& pod_uid);

// Sends NodeUnpublishVolume for `plan` and removes what kubelet removes (the mount directory,
// vol_data.json, the volume directory).
absl::Status UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                             const NodeOptions& options);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_PUBLISHER_H_

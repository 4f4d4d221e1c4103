// What kubelet knows about each CSI volume of a pod before it calls the driver: the volume spec
// (pkg/volume/csi/csi_plugin.go, csi_util.go getCSISourceFromSpec, kubelet's desired state of
// world) resolved from the objects, as plain data.
//
// PlanVolumes checks everything that can be checked without calling a driver, for every volume
// of the pod, before any is published: the claim and its PV, lifecycle modes (kubelet's texts),
// the node's inline-driver policy, the driver's registration, the VolumeAttachment of a volume
// that must be attached (csi_attacher.go WaitForAttach, with kubelet's texts), and the secrets of
// NodePublishVolume. Every path it plans comes from volume_paths.h.
#ifndef NDR_KUBELETCLIENT_CSI_VOLUME_PLAN_H_
#define NDR_KUBELETCLIENT_CSI_VOLUME_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/csi/volume_paths.h"
#include "kubeletclient/objects/k8s_objects.h"

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

using SecretRef = std::pair<std::string, std::string>;  // namespace, name

struct VolumePlan {
  std::string pod_volume;  // the pod's volume name
  std::string pod_uid;
  std::string driver;
  std::string endpoint;
  std::string mode;       // "Persistent" or "Ephemeral" (volumeLifecycleMode)
  std::string spec_name;  // the PV's name, or the pod's volume name for an inline volume
  std::string handle;     // the volume handle
  PodVolumePaths paths;   // <root>/pods/<uid>/volumes/kubernetes.io~csi/<spec name>
  std::optional<DevicePaths> device;  // persistent volumes: the staging directory
  VolData vol_data;                   // what the pod's vol_data.json holds

  // What the driver is sent.
  CapabilityArgs capability;   // mount_group is set at publish time, if the driver takes it
  bool read_only = false;      // NodePublishVolume.readonly
  StringMap volume_context;    // NodePublishVolume's: the attributes, plus pod info if asked
  StringMap volume_attributes;       // NodeStageVolume's: the PV's attributes only
  StringMap publish_secrets;         // from nodePublishSecretRef, fetched now
  std::optional<SecretRef> stage_secret_ref;  // nodeStageSecretRef, fetched when staging
  // csi_plugin.go skipAttach: a persistent volume must be attached unless the driver's CSIDriver
  // object says attachRequired: false. Its VolumeAttachment's status.attachmentMetadata becomes
  // the publish context (WaitForAttach in csi_attacher.h fills it in).
  bool attach_required = false;
  StringMap publish_context;

  // fsGroup: the pod's, and the policy of the driver's CSIDriver object (kubelet's default
  // ReadWriteOnceWithFSType without one).
  std::optional<int64_t> fs_group;
  std::string fs_group_policy = "ReadWriteOnceWithFSType";
  bool access_modes_include_rwo = false;  // the PV's (inline volumes count as ReadWriteOnce)
};

// "csi-" + lowercase hex SHA-256 of pod UID + volume name: kubelet's inline volume handle.
std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name);
// kubelet's getAttachmentName: "csi-" + hex SHA-256 of handle + driver + node.
std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node);

absl::StatusOr<std::vector<VolumePlan>> PlanVolumes(const Pod& pod, const ObjectSet& objects,
                                                    const DriverRegistry::Snapshot& drivers,
                                                    const NodeOptions& options);

// The data of a Secret, or kubelet's error for `what` ("NodePublishSecretRef",
// "NodeStageSecretRef"); `pod_ns` only adds a hint when the name exists elsewhere.
absl::StatusOr<StringMap> SecretData(const ObjectSet& objects, const SecretRef& ref,
                                     const std::string& what, const std::string& pod_ns);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VOLUME_PLAN_H_

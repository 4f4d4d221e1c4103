// What kubelet knows about each volume of a pod before it calls a driver: its desired state of
// world (pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go,
// cache/desired_state_of_world.go) and the CSI volume spec (pkg/volume/csi/csi_plugin.go,
// csi_util.go getCSISourceFromSpec) resolved from the objects, as plain data.
//
// PlanVolumes checks everything that can be checked without calling a driver, for every volume
// of the pod, before any is published: whether a container uses it, whether it is a CSI volume,
// the claim, its binding and its PV (generic ephemeral volumes too), the volume mode against
// volumeMounts and volumeDevices, the SELinux label, lifecycle modes, the node's inline-driver
// policy, the driver's registration and the secrets of NodePublishVolume, each with kubelet's
// text. The VolumeAttachment of a volume that must be attached is checked next (csi_attacher.go
// WaitForAttach, publisher.h). Every path it plans comes from volume_paths.h.
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
#include "kubeletclient/features/kube_features.h"
#include "kubeletclient/features/kubelet_releases.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/token/token_manager.h"
#include "kubeletclient/volumeutil/selinux.h"

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
  KubeletRelease release;                     // --kubelet-version
  FeatureGates feature_gates;                 // --feature-gates, over the release's defaults
  SeLinuxHost selinux;                        // --host-selinux
  // Whether to make the bind mounts and loop devices of raw block volumes, as kubelet does (it
  // runs as root on the host); when not, `host_skip_reason` says why, for the report.
  bool change_host = false;
  std::string host_skip_reason;
  // Mints the service-account tokens of CSIDrivers with tokenRequests
  // (--service-account-key-file, as the API server would); null when no key was given. Not
  // owned.
  token::TokenManager* tokens = nullptr;
  // Whether the command publishes (publish, republish), so that a CSIDriver's tokenRequests must
  // be mintable before anything is sent; commands that only read (stats, expand) send no token.
  bool publishes = true;
};

using SecretRef = std::pair<std::string, std::string>;  // namespace, name

struct VolumePlan {
  std::string pod_volume;  // the pod's volume name
  std::string pod_uid;
  std::string driver;
  std::string endpoint;
  std::string mode;       // "Persistent" or "Ephemeral" (volumeLifecycleMode)
  std::string spec_name;  // the PV's name, or the pod's volume name for an inline volume
  std::string claim;      // "namespace/name" of the claim, for a PV
  std::string handle;     // the volume handle
  PodVolumePaths paths;   // filesystem volumes: <root>/pods/<uid>/volumes/kubernetes.io~csi/<spec>
  std::optional<DevicePaths> device;  // persistent filesystem volumes: the staging directory
  std::optional<BlockPaths> block;    // raw block volumes (volumeMode: Block): csi_block.go's paths
  VolData vol_data;  // what the pod's vol_data.json holds (a block volume's data/vol_data.json)

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
  std::vector<std::string> access_modes;  // the PV's

  // fsGroup: the pod's, and the policy of the driver's CSIDriver object (kubelet's default
  // ReadWriteOnceWithFSType without one).
  std::optional<int64_t> fs_group;
  std::string fs_group_policy = "ReadWriteOnceWithFSType";
  bool access_modes_include_rwo = false;  // the PV's (inline volumes count as ReadWriteOnce)

  // The SELinux label the volume is mounted with (-o context=...), or empty
  // (desired_state_of_world.go getSELinuxLabel, AddPodToVolume); and whether another pod's
  // different label for the same volume is an error there (the driver mounts with -o context and
  // the volume supports it), or only a warning.
  std::string selinux_label;
  bool selinux_conflict_is_error = false;
  // Expansion (expander.h), persistent volumes only: the claim as read, the PV's capacity and
  // mount options (the expand request's, without an SELinux context), its nodeExpandSecretRef.
  std::optional<PersistentVolumeClaim> claim_object;
  std::optional<Quantity> pv_capacity;
  std::vector<std::string> pv_mount_options;
  std::optional<SecretRef> expand_secret_ref;

  // Service-account tokens (csi_mounter.go podServiceAccountTokenAttrs): the CSIDriver's
  // tokenRequests, for the pod's service account; and whether the driver wants its volumes
  // published again and again (requiresRepublish).
  std::vector<TokenRequest> token_requests;
  std::string pod_name, pod_namespace, service_account;
  bool requires_republish = false;
  // The CSIDriver's serviceAccountTokenInSecrets, at a release that reads it (v1.35+): the
  // tokens go in NodePublishVolume's secrets instead of its volume context.
  bool tokens_in_secrets = false;
  KubeletRelease release;  // the node's, for the steps that differ by release

  // What planning decided that the report should say (SELinux, generic ephemeral claims).
  std::vector<std::string> notes;
};

// What becomes of one volume of the pod, in the pod's order.
struct PlannedVolume {
  std::string name;              // the pod's volume name
  std::string skipped;           // set when kubelet's CSI plugin has nothing to do with it: why
  absl::Status status;           // why a CSI volume cannot be published (kubelet's words)
  // A CSI volume as planned; it keeps its plan when a later check (its attachment, the node's
  // state) refuses it, for the report.
  std::optional<VolumePlan> plan;
};

struct PodPlan {
  std::vector<PlannedVolume> volumes;

  // The first volume that cannot be published, as `volume "name": why`; OK if none.
  absl::Status FirstError() const;
  // The CSI volumes to publish (planned, with no error), in order.
  std::vector<VolumePlan*> ToPublish();
};

// "csi-" + lowercase hex SHA-256 of pod UID + volume name: kubelet's inline volume handle.
std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name);
// kubelet's getAttachmentName: "csi-" + hex SHA-256 of handle + driver + node.
std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node);

// Every volume of the pod, as kubelet's volume manager takes it: a volume no container mounts
// or maps is skipped (desired_state_of_world_populator.go processPodVolumes), a volume that is
// not a CSI volume is skipped (another plugin's), and a CSI volume is checked for everything
// kubelet checks before it calls a driver (claims, claim bindings, volume modes, SELinux labels,
// lifecycle modes, the node's inline policy, registration, secrets) and planned.
PodPlan PlanVolumes(const Pod& pod, const ObjectSet& objects,
                    const DriverRegistry::Snapshot& drivers, const NodeOptions& options);

// kubelet's getCredentialsFromSecret: the data of a Secret, or its error ("kubernetes.io/csi:
// failed to find the secret ..."); `pod_ns` only adds a hint when the name exists elsewhere.
absl::StatusOr<StringMap> CredentialsFromSecret(const ObjectSet& objects, const SecretRef& ref,
                                                const std::string& pod_ns);

// The same, wrapped as csi_mounter.go and csi_attacher.go wrap it for `what`
// ("NodePublishSecretRef", "NodeStageSecretRef"): "fetching <what> ns/name failed: ...".
absl::StatusOr<StringMap> SecretData(const ObjectSet& objects, const SecretRef& ref,
                                     const std::string& what, const std::string& pod_ns);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VOLUME_PLAN_H_

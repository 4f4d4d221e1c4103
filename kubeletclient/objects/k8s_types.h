// The Kubernetes objects kubeletclient works from, as plain data: v1 Pod, PersistentVolumeClaim,
// PersistentVolume, Secret and ServiceAccount, and storage.k8s.io/v1 CSIDriver, StorageClass and
// VolumeAttachment, with only the fields the CSI volume plugin uses. Defaults are the API
// server's (SetDefaults_*). k8s_objects.h reads them from files; object_validation.h checks them.
#ifndef NDR_KUBELETCLIENT_OBJECTS_K8S_TYPES_H_
#define NDR_KUBELETCLIENT_OBJECTS_K8S_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kubeletclient/objects/quantity.h"

namespace ndr::kubelet {

struct CsiVolumeSource {  // a Pod's inline csi volume
  std::string driver;
  bool read_only = false;
  std::string fs_type;
  std::map<std::string, std::string> volume_attributes;
  std::optional<std::string> node_publish_secret_name;  // in the pod's namespace
};

struct PodVolume {
  std::string name;
  // The field names of the volume sources set ("csi", "persistentVolumeClaim", "ephemeral",
  // "emptyDir", "configMap", ...), in the order of the Go struct; validation allows one.
  std::vector<std::string> source_types;
  // The volume's type: its first source, or "emptyDir", to which the API server defaults a
  // volume without one (SetDefaults_Volume).
  std::string source_type() const {
    return source_types.empty() ? "emptyDir" : source_types.front();
  }
  std::optional<CsiVolumeSource> csi;
  std::optional<std::string> claim_name;  // persistentVolumeClaim.claimName
  bool claim_read_only = false;           // persistentVolumeClaim.readOnly
  // ephemeral.volumeClaimTemplate is set: a generic ephemeral volume, whose PVC the ephemeral
  // volume controller names <pod name>-<volume name>.
  bool ephemeral_claim_template = false;
};

// v1.SELinuxOptions: the SELinux context of a container's processes.
struct SeLinuxOptions {
  std::string user;
  std::string role;
  std::string type;
  std::string level;
};

// A container, init container or ephemeral container: what kubelet's volume manager reads of it
// (pkg/volume/util GetPodVolumeNames).
struct Container {
  std::string field;  // where it is in the pod, e.g. "spec.initContainers[0]", for errors
  std::string name;
  std::vector<std::string> volume_mounts;   // volumeMounts[].name
  std::vector<std::string> volume_devices;  // volumeDevices[].name
  std::optional<SeLinuxOptions> se_linux;   // securityContext.seLinuxOptions
};

// A status.volumeHealth entry (1.37+): the health kubelet last wrote for one of the pod's
// volumes.
struct PodVolumeHealth {
  struct Condition {
    std::string status;  // Inaccessible, Degraded, ...
    std::string reason;
    std::string message;
  };
  std::string name;  // the pod's volume
  std::vector<Condition> conditions;
};

struct Pod {
  std::string file;
  std::string name;
  std::string ns = "default";
  std::string uid;
  std::string service_account = "default";
  std::optional<int64_t> fs_group;  // spec.securityContext.fsGroup
  std::optional<SeLinuxOptions> se_linux;  // spec.securityContext.seLinuxOptions
  // spec.securityContext.seLinuxChangePolicy: "MountOption", "Recursive" or unset (v1.32+).
  std::string se_linux_change_policy;
  std::vector<Container> containers;       // init containers, containers, ephemeral containers
  std::vector<PodVolume> volumes;
  std::vector<PodVolumeHealth> volume_health;  // status.volumeHealth
};

// A metadata.ownerReferences entry.
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

// A PersistentVolumeClaim's status.conditions entry.
struct ClaimCondition {
  std::string type;    // Resizing, FileSystemResizePending, ...
  std::string status;  // True, False, Unknown
  std::string reason;
  std::string message;
};

struct PersistentVolumeClaim {
  std::string ns;
  std::string name;
  std::string uid;                // metadata.uid (empty in a hand-written object)
  bool being_deleted = false;     // metadata.deletionTimestamp is set
  std::vector<OwnerReference> owner_references;
  std::string volume_name;        // spec.volumeName: the bound PV
  std::optional<Quantity> requested;  // spec.resources.requests.storage
  std::string phase = "Pending";  // status.phase (the API server's default)
  std::optional<Quantity> capacity;   // status.capacity.storage: what the volume has
  std::vector<ClaimCondition> conditions;  // status.conditions
  std::vector<std::string> access_modes;   // spec.accessModes
  std::set<std::string> annotation_keys;   // metadata.annotations' keys
  // Expansion recovery (v1.23+ alpha, on by default from v1.32), as the external resizer writes
  // them: status.allocatedResources (whether present, and its storage) and
  // status.allocatedResourceStatuses.storage (ControllerResizeInProgress, NodeResizePending, ...).
  bool has_allocated_resources = false;
  std::optional<Quantity> allocated;
  std::string resize_status;
};

// A PersistentVolume's spec.claimRef: the claim it is bound to.
struct ClaimReference {
  std::string ns;
  std::string name;
  std::string uid;
};

struct PersistentVolume {
  std::string name;
  std::vector<std::string> access_modes;
  std::vector<std::string> mount_options;
  std::optional<Quantity> capacity;        // spec.capacity.storage
  std::string volume_mode = "Filesystem";  // or "Block"
  std::optional<ClaimReference> claim_ref;  // spec.claimRef
  // The in-tree volume source's field name when there is no spec.csi ("nfs", "hostPath", ...).
  std::string source_type;
  struct Csi {
    std::string driver;
    std::string volume_handle;
    bool read_only = false;
    std::string fs_type;
    std::map<std::string, std::string> volume_attributes;
    std::optional<std::pair<std::string, std::string>> node_publish_secret;  // namespace, name
    std::optional<std::pair<std::string, std::string>> node_stage_secret;    // namespace, name
    std::optional<std::pair<std::string, std::string>> node_expand_secret;   // namespace, name
  };
  std::optional<Csi> csi;
};

// A CSIDriver's spec.tokenRequests entry: a service-account token kubelet hands the driver in
// NodePublishVolume.
struct TokenRequest {
  std::string audience;  // "" means the API server's own audiences
  std::optional<int64_t> expiration_seconds;
};

struct CsiDriverObject {
  std::string name;
  std::optional<bool> attach_required;  // the API server defaults it to true
  std::optional<bool> pod_info_on_mount;
  std::vector<std::string> volume_lifecycle_modes;  // defaults to ["Persistent"]
  std::string fs_group_policy = "ReadWriteOnceWithFSType";  // or "File", "None"
  std::optional<bool> se_linux_mount;  // spec.seLinuxMount (alpha in v1.25; off when unset)
  std::vector<TokenRequest> token_requests;  // spec.tokenRequests
  bool requires_republish = false;           // spec.requiresRepublish
  // spec.serviceAccountTokenInSecrets (v1.35+): tokens in NodePublishVolume's secrets.
  bool service_account_token_in_secrets = false;
  // spec.nodeAllocatableUpdatePeriodSeconds (v1.33+, at least 10): how often kubelet asks the
  // driver's NodeGetInfo again and updates the CSINode's allocatable count.
  std::optional<int64_t> node_allocatable_update_period_seconds;
};

// A v1 ServiceAccount: whose name and UID go into the tokens kubelet requests for a pod.
struct ServiceAccount {
  std::string ns;
  std::string name;
  std::string uid;  // metadata.uid
};

// A storage.k8s.io/v1 VolumeAttachment: what the external attacher reports about attaching a
// persistent volume to a node (the attach/detach controller creates it; kubelet only reads it).
struct VolumeAttachment {
  std::string name;
  std::string attacher;                // spec.attacher: the CSI driver
  std::string node_name;               // spec.nodeName
  std::string persistent_volume_name;  // spec.source.persistentVolumeName
  bool attached = false;               // status.attached
  std::map<std::string, std::string> attachment_metadata;  // status.attachmentMetadata
  std::optional<std::string> attach_error;                 // status.attachError.message
  bool being_deleted = false;  // metadata.deletionTimestamp is set
};

struct Secret {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> data;  // decoded from base64, merged with stringData
};

// A topology selector term (v1.TopologySelectorTerm): every expression must match; an
// expression matches a label whose value is one of its values.
struct TopologySelectorTerm {
  struct Expression {
    std::string key;
    std::vector<std::string> values;
  };
  std::vector<Expression> match_label_expressions;
};

// A storage.k8s.io/v1 StorageClass: what the external-provisioner makes a volume from (its
// CreateVolume and the PV it writes), and what the PV controller and the scheduler read of it.
// kubelet itself never reads one.
struct StorageClass {
  std::string name;
  std::string provisioner;
  std::map<std::string, std::string> parameters;
  std::string reclaim_policy = "Delete";  // SetDefaults_StorageClass; or "Retain"
  std::vector<std::string> mount_options;
  std::optional<bool> allow_volume_expansion;
  std::string volume_binding_mode = "Immediate";  // SetDefaults_StorageClass; or
                                                  // "WaitForFirstConsumer"
  std::vector<TopologySelectorTerm> allowed_topologies;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_OBJECTS_K8S_TYPES_H_

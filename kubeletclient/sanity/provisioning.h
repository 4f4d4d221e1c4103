// What the external-provisioner makes of a StorageClass for one claim: the CreateVolume request
// (parameters without the reserved csi.storage.k8s.io/ keys, the capability with the class's
// fsType and mount options, the accessibility requirements of the class's allowedTopologies and
// the node's topology, as the binding mode has them) and the secret references it resolves for
// CreateVolume and writes into the PV. `kubeletclient sanity` makes its volumes from it, so that a
// driver is handed what a cluster hands it.
//
// Each rule cites external-provisioner v6.3 (pkg/controller/controller.go prepareProvision,
// getSecretReference, removePrefixedParameters; topology.go GenerateAccessibilityRequirements),
// run as it is deployed by default (--immediate-topology=true, --strict-topology=false,
// --extra-create-metadata=false, no --default-fstype). Pure functions; thread-safe.
#ifndef NDR_KUBELETCLIENT_SANITY_PROVISIONING_H_
#define NDR_KUBELETCLIENT_SANITY_PROVISIONING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/csi/csi.pb.h"
#include "kubeletclient/objects/k8s_types.h"

namespace ndr::kubelet {

// A Secret by namespace and name.
using SecretRef = std::pair<std::string, std::string>;

struct ProvisionInput {
  const StorageClass* storage_class = nullptr;  // required
  std::string pv_name;                          // CreateVolume's name, the PV's name
  std::string claim_namespace, claim_name;
  int64_t bytes = 0;
  std::string access_mode = "ReadWriteOnce";
  bool block = false;
  // The plugin has VOLUME_ACCESSIBILITY_CONSTRAINTS.
  bool topology = false;
  // The (only) node's topology: its NodeGetInfo accessible_topology, which kubelet puts in the
  // Node's labels and whose keys it lists in CSINode.
  std::map<std::string, std::string> node_topology;
};

struct ProvisionPlan {
  csi::v1::CreateVolumeRequest request;  // secrets not filled: see provisioner_secret
  std::string fs_type;                   // the PV's spec.csi.fsType ("" for block)
  std::vector<std::string> mount_options;  // the PV's spec.mountOptions
  // The references the class resolves to (pv.name, pvc.name, pvc.namespace filled in).
  std::optional<SecretRef> provisioner_secret;         // CreateVolume, DeleteVolume
  std::optional<SecretRef> controller_publish_secret;  // ControllerPublish/UnpublishVolume
  std::optional<SecretRef> node_stage_secret;          // the PV's nodeStageSecretRef
  std::optional<SecretRef> node_publish_secret;        // the PV's nodePublishSecretRef
  std::optional<SecretRef> controller_expand_secret;   // the PV's controllerExpandSecretRef
  std::optional<SecretRef> node_expand_secret;         // the PV's nodeExpandSecretRef
  // What the external-provisioner would warn about (deprecated keys).
  std::vector<std::string> warnings;
};

// The request and references for `input`, or InvalidArgument saying what in the class the
// external-provisioner refuses (in its words where it has them) or why the class does not fit
// the node, or FailedPrecondition when the driver claims VOLUME_ACCESSIBILITY_CONSTRAINTS but
// gave the node no topology (the provisioner then never provisions).
absl::StatusOr<ProvisionPlan> PlanProvision(const ProvisionInput& input);

// Whether a volume accessible from `accessible` (a created Volume's accessible_topology) can be
// used on a node with `node` topology labels: the PV's node affinity then has one term per entry
// (topology.go GenerateVolumeNodeAffinity), and a node matches a term that all its segments
// match. No entry: any node.
bool AccessibleFrom(const google::protobuf::RepeatedPtrField<csi::v1::Topology>& accessible,
                    const std::map<std::string, std::string>& node);

// Go's os.Expand as the external-provisioner resolves secret templates with it: ${name} and
// $name replaced from `params`; a name not there is an error naming it.
absl::StatusOr<std::string> ResolveTemplate(const std::string& text,
                                            const std::map<std::string, std::string>& params);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_SANITY_PROVISIONING_H_

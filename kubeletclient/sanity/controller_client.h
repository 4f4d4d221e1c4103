// The Controller calls `kubeletclient sanity` makes to have volumes to judge a node plugin with,
// when no volume handle is given: what the external-provisioner (CreateVolume, DeleteVolume) and
// the external-attacher (ControllerPublishVolume, ControllerUnpublishVolume) do in a cluster, as
// csi-sanity makes them. Kubelet itself never calls the Controller service.
//
// A new connection per call, as csi_client.h. Thread-compatible.
#ifndef NDR_KUBELETCLIENT_SANITY_CONTROLLER_CLIENT_H_
#define NDR_KUBELETCLIENT_SANITY_CONTROLLER_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "kubeletclient/csi/csi_client.h"

namespace ndr::kubelet {

struct ControllerCapabilities {
  bool service = false;            // GetPluginCapabilities: CONTROLLER_SERVICE
  bool accessibility = false;      // ... VOLUME_ACCESSIBILITY_CONSTRAINTS
  bool create_delete = false;      // ControllerGetCapabilities: CREATE_DELETE_VOLUME
  bool publish_unpublish = false;  // ... PUBLISH_UNPUBLISH_VOLUME
};

class SanityController {
 public:
  // Every call is appended to `sent`, if given.
  SanityController(std::string endpoint, absl::Duration timeout,
                   std::vector<SentCall>* sent = nullptr);

  // GetPluginCapabilities, then (with CONTROLLER_SERVICE) ControllerGetCapabilities.
  absl::StatusOr<ControllerCapabilities> Capabilities();
  // A volume of `bytes` with one capability (mount or block, the access mode's CSI mode).
  absl::StatusOr<csi::v1::Volume> CreateVolume(const std::string& name, int64_t bytes,
                                               const CapabilityArgs& capability,
                                               const StringMap& secrets = {});
  // The request as given (made from a StorageClass, provisioning.h).
  absl::StatusOr<csi::v1::Volume> CreateVolume(const csi::v1::CreateVolumeRequest& request);
  absl::Status DeleteVolume(const std::string& volume_id, const StringMap& secrets = {});
  // The publish context, which becomes the VolumeAttachment's status.attachmentMetadata.
  absl::StatusOr<StringMap> ControllerPublishVolume(const std::string& volume_id,
                                                    const std::string& node_id,
                                                    const CapabilityArgs& capability,
                                                    const StringMap& volume_context,
                                                    const StringMap& secrets = {});
  absl::Status ControllerUnpublishVolume(const std::string& volume_id, const std::string& node_id,
                                         const StringMap& secrets = {});

 private:
  std::shared_ptr<grpc::Channel> Channel() const;
  void Record(const std::string& method, const google::protobuf::Message& request);

  const std::string endpoint_;
  const absl::Duration timeout_;
  std::vector<SentCall>* const sent_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_SANITY_CONTROLLER_CLIENT_H_

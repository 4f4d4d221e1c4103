// The only part of kubeletclient's volume side that speaks gRPC to a CSI driver, as kubelet's
// pkg/volume/csi/csi_client.go does: a new connection for every call; a NodeGetCapabilities for
// every question about a capability (kubelet caches none); and, inside NodeStageVolume and
// NodePublishVolume, one more NodeGetCapabilities to choose the access-mode mapping
// (getNodeV1AccessModeMapper), so that a driver sees kubelet's calls, one for one.
//
// Thread-compatible; each call blocks for at most the timeout.
#ifndef NDR_KUBELETCLIENT_CSI_CSI_CLIENT_H_
#define NDR_KUBELETCLIENT_CSI_CSI_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csi_json.h"  // RedactedCsiJson, kServiceAccountTokensKey

namespace ndr::kubelet {

using StringMap = std::map<std::string, std::string>;

// What a VolumeCapability is made of.
struct CapabilityArgs {
  std::string access_mode = "ReadWriteOnce";  // the Kubernetes access mode
  bool block = false;                         // a Block capability instead of Mount
  std::string fs_type;
  std::vector<std::string> mount_flags;
  std::optional<int64_t> mount_group;  // MountVolume.volume_mount_group, when delegated
};

// kubelet's asCSIAccessModeV1 and, for drivers with SINGLE_NODE_MULTI_WRITER,
// asSingleNodeMultiWriterCapableCSIAccessModeV1.
csi::v1::VolumeCapability::AccessMode::Mode CsiAccessMode(const std::string& mode,
                                                          bool single_node_multi_writer);

// A condition of NodeGetVolumeHealth (v1.37 csi_client.go mapVolumeHealthConditions: "Degraded",
// "Inaccessible", "DataLoss"; entries of unknown status dropped) or of NodeGetStorageHealth
// (mapStorageBackendHealth: "StorageDegraded", "StorageUnreachable", with the access and volume
// mode of the entry's capability when it has one).
struct HealthCondition {
  std::string status, reason, message;
  std::string access_mode, volume_mode;  // storage health only, when given
};

// What NodeGetVolumeStats says of a volume, as csi_client.go reads it into volume.Metrics: each
// number 0 unless the driver reports it; abnormal and message only when asked for
// (CSIVolumeHealth) and the driver has VOLUME_CONDITION.
struct VolumeStats {
  int64_t capacity = 0, available = 0, used = 0;        // BYTES
  int64_t inodes = 0, inodes_free = 0, inodes_used = 0;  // INODES
  std::optional<bool> abnormal;
  std::optional<std::string> message;
};

// A call made: the method and its request as JSON (proto field names), secret values replaced
// by "(redacted)". For the command's report of what was sent. `request` is the request itself,
// secrets included, kept in memory only, so that it can be sent again as it was
// (CsiNodeClient::Resend, for `kubeletclient sanity`); never print it.
struct SentCall {
  std::string method;
  std::string request_json;
  std::shared_ptr<const google::protobuf::Message> request;
};

// The SentCall of `request` (a copy of it, and its redacted JSON).
SentCall MakeSentCall(const std::string& method, const google::protobuf::Message& request);

class CsiNodeClient {
 public:
  // Every call is appended to `sent`, if given, as it is made.
  CsiNodeClient(std::string endpoint, absl::Duration timeout,
                std::vector<SentCall>* sent = nullptr);

  // nodeSupportsCapability: one NodeGetCapabilities each.
  absl::StatusOr<bool> NodeSupportsStageUnstage();
  absl::StatusOr<bool> NodeSupportsVolumeMountGroup();
  absl::StatusOr<bool> NodeSupportsNodeExpand();
  absl::StatusOr<bool> NodeSupportsVolumeStats();
  absl::StatusOr<bool> NodeSupportsVolumeCondition();
  absl::StatusOr<bool> NodeSupportsVolumeHealth();   // GET_VOLUME_HEALTH (7)
  absl::StatusOr<bool> NodeSupportsStorageHealth();  // GET_STORAGE_HEALTH (8)

  // kubelet v1.37's health RPCs (csi_client.go NodeGetVolumeHealth, NodeGetStorageHealth), their
  // answers mapped as kubelet maps them; a storage answer kubelet refuses (more than 16
  // conditions, a capability without access type or mode) is an error in its words.
  absl::StatusOr<std::vector<HealthCondition>> NodeGetVolumeHealth(
      const std::string& handle, const std::string& staging_path,
      const std::string& publish_path);
  absl::StatusOr<std::vector<HealthCondition>> NodeGetStorageHealth();

  // Each fills `sent` with the request once it is built, whether or not the call succeeds.
  absl::Status NodeStageVolume(const std::string& handle, const StringMap& publish_context,
                               const std::string& staging_path, const CapabilityArgs& capability,
                               const StringMap& secrets, const StringMap& volume_context,
                               csi::v1::NodeStageVolumeRequest* sent);
  absl::Status NodePublishVolume(const std::string& handle, bool readonly,
                                 const std::string& staging_path, const std::string& target_path,
                                 const CapabilityArgs& capability, const StringMap& publish_context,
                                 const StringMap& volume_context, const StringMap& secrets,
                                 csi::v1::NodePublishVolumeRequest* sent);
  absl::Status NodeUnstageVolume(const std::string& handle, const std::string& staging_path);
  // csi_client.go NodeExpandVolume: the capability's access mode maps directly (no
  // NodeGetCapabilities), a Block capability for block volumes, else Mount with the fs type and
  // mount flags; the staging path only if not empty. The capacity the driver reports.
  absl::StatusOr<int64_t> NodeExpandVolume(const std::string& handle,
                                           const std::string& volume_path,
                                           const std::string& staging_path, int64_t new_size,
                                           const CapabilityArgs& capability,
                                           const StringMap& secrets);
  // csi_client.go NodeGetVolumeStats: volume ID and path only; then, if `ask_condition`
  // (CSIVolumeHealth), NodeGetCapabilities for VOLUME_CONDITION.
  absl::StatusOr<VolumeStats> NodeGetVolumeStats(const std::string& handle,
                                                 const std::string& volume_path,
                                                 bool ask_condition);
  absl::Status NodeUnpublishVolume(const std::string& handle, const std::string& target_path);

  // Sends `call.request` again, byte for byte, as kubelet does after a restart (the same
  // NodeStageVolume and NodePublishVolume for a volume it finds mounted) or when it retries a
  // teardown; for the four calls that set up and tear down a volume only.
  absl::Status Resend(const SentCall& call);

  // Whether the last request this client sent (or tried to) was `method`: tells an RPC's own
  // answer from a failure before it.
  bool LastMethodIs(const std::string& method) const { return last_method_ == method; }

 private:
  absl::StatusOr<bool> NodeSupportsCapability(csi::v1::NodeServiceCapability::RPC::Type type);
  // getNodeV1AccessModeMapper: the capability with SINGLE_NODE_MULTI_WRITER known.
  absl::StatusOr<csi::v1::VolumeCapability> Capability(const CapabilityArgs& args);
  std::unique_ptr<csi::v1::Node::Stub> Stub() const;
  void Record(const std::string& method, const google::protobuf::Message& request);

  const std::string endpoint_;
  const absl::Duration timeout_;
  std::vector<SentCall>* const sent_;
  std::string last_method_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_CLIENT_H_

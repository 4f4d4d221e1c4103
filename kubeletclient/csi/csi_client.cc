#include "kubeletclient/csi/csi_client.h"

#include "absl/strings/str_cat.h"
#include "api/endpoint.h"
#include "kubeletclient/util/grpc_status.h"

namespace ndr::kubelet {

using Mode = csi::v1::VolumeCapability::AccessMode;
using RpcType = csi::v1::NodeServiceCapability::RPC;

Mode::Mode CsiAccessMode(const std::string& mode, bool single_node_multi_writer) {
  if (mode == "ReadWriteOnce") {
    return single_node_multi_writer ? Mode::SINGLE_NODE_MULTI_WRITER : Mode::SINGLE_NODE_WRITER;
  }
  if (mode == "ReadOnlyMany") return Mode::MULTI_NODE_READER_ONLY;
  if (mode == "ReadWriteMany") return Mode::MULTI_NODE_MULTI_WRITER;
  if (mode == "ReadWriteOncePod") {
    return single_node_multi_writer ? Mode::SINGLE_NODE_SINGLE_WRITER : Mode::SINGLE_NODE_WRITER;
  }
  return Mode::UNKNOWN;
}

SentCall MakeSentCall(const std::string& method, const google::protobuf::Message& request) {
  std::shared_ptr<google::protobuf::Message> copy(request.New());
  copy->CopyFrom(request);
  return {method, RedactedCsiJson(request), std::move(copy)};
}

CsiNodeClient::CsiNodeClient(std::string endpoint, absl::Duration timeout,
                             std::vector<SentCall>* sent)
    : endpoint_(std::move(endpoint)), timeout_(timeout), sent_(sent) {}

void CsiNodeClient::Record(const std::string& method, const google::protobuf::Message& request) {
  last_method_ = method;
  if (sent_ != nullptr) sent_->push_back(MakeSentCall(method, request));
}

std::unique_ptr<csi::v1::Node::Stub> CsiNodeClient::Stub() const {
  // A channel of its own for every call, as kubelet dials for every call.
  absl::StatusOr<std::string> path = UnixSocketPath(endpoint_, "CSI endpoint");
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return csi::v1::Node::NewStub(grpc::CreateCustomChannel(
      GrpcUnixTarget(path.ok() ? *path : endpoint_), grpc::InsecureChannelCredentials(), args));
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsCapability(RpcType::Type type) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeGetCapabilitiesResponse response;
  Record("NodeGetCapabilities", csi::v1::NodeGetCapabilitiesRequest());
  grpc::Status status = Stub()->NodeGetCapabilities(&context, {}, &response);
  if (!status.ok()) return FromGrpc(status, "NodeGetCapabilities");
  for (const auto& capability : response.capabilities()) {
    if (capability.rpc().type() == type) return true;
  }
  return false;
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsStageUnstage() {
  return NodeSupportsCapability(RpcType::STAGE_UNSTAGE_VOLUME);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsVolumeMountGroup() {
  return NodeSupportsCapability(RpcType::VOLUME_MOUNT_GROUP);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsNodeExpand() {
  return NodeSupportsCapability(RpcType::EXPAND_VOLUME);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsVolumeStats() {
  return NodeSupportsCapability(RpcType::GET_VOLUME_STATS);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsVolumeCondition() {
  return NodeSupportsCapability(RpcType::VOLUME_CONDITION);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsVolumeHealth() {
  return NodeSupportsCapability(RpcType::GET_VOLUME_HEALTH);
}

absl::StatusOr<bool> CsiNodeClient::NodeSupportsStorageHealth() {
  return NodeSupportsCapability(RpcType::GET_STORAGE_HEALTH);
}

absl::StatusOr<std::vector<HealthCondition>> CsiNodeClient::NodeGetVolumeHealth(
    const std::string& handle, const std::string& staging_path,
    const std::string& publish_path) {
  if (handle.empty()) return absl::InvalidArgumentError("missing volume id");
  csi::v1::NodeGetVolumeHealthRequest request;
  request.set_volume_id(handle);
  request.set_staging_target_path(staging_path);
  request.set_volume_publish_path(publish_path);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeGetVolumeHealthResponse response;
  Record("NodeGetVolumeHealth", request);
  grpc::Status status = Stub()->NodeGetVolumeHealth(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "NodeGetVolumeHealth");
  std::vector<HealthCondition> conditions;
  for (const auto& entry : response.volume_health().health_statuses()) {
    HealthCondition condition;
    switch (entry.status()) {
      case csi::v1::INACCESSIBLE: condition.status = "Inaccessible"; break;
      case csi::v1::DATA_LOSS: condition.status = "DataLoss"; break;
      case csi::v1::DEGRADED: condition.status = "Degraded"; break;
      default: continue;  // kubelet ignores what it does not know
    }
    condition.reason = entry.reason();
    condition.message = entry.message();
    conditions.push_back(condition);
  }
  return conditions;
}

absl::StatusOr<std::vector<HealthCondition>> CsiNodeClient::NodeGetStorageHealth() {
  csi::v1::NodeGetStorageHealthRequest request;  // kubelet sends no secrets
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeGetStorageHealthResponse response;
  Record("NodeGetStorageHealth", request);
  grpc::Status status = Stub()->NodeGetStorageHealth(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "NodeGetStorageHealth");
  constexpr int kMaxStorageHealthConditions = 16;
  if (response.backend_health_size() > kMaxStorageHealthConditions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NodeGetStorageHealth returned ", response.backend_health_size(),
        " conditions, maximum is ", kMaxStorageHealthConditions));
  }
  std::vector<HealthCondition> conditions;
  for (int i = 0; i < response.backend_health_size(); ++i) {
    const auto& entry = response.backend_health(i);
    HealthCondition condition;
    switch (entry.status()) {
      case csi::v1::STORAGE_UNREACHABLE: condition.status = "StorageUnreachable"; break;
      case csi::v1::STORAGE_DEGRADED: condition.status = "StorageDegraded"; break;
      default: continue;
    }
    condition.reason = entry.reason();
    condition.message = entry.message();
    if (entry.has_volume_capability()) {
      const csi::v1::VolumeCapability& capability = entry.volume_capability();
      auto invalid = [i](const std::string& why) {
        return absl::InvalidArgumentError(absl::StrCat(
            "NodeGetStorageHealth condition ", i, " has invalid volume capability: ", why));
      };
      if (capability.has_block()) {
        condition.volume_mode = "Block";
      } else if (capability.has_mount()) {
        condition.volume_mode = "Filesystem";
      } else {
        return invalid("access type is required");
      }
      if (!capability.has_access_mode()) return invalid("access mode is required");
      using Mode = csi::v1::VolumeCapability::AccessMode;
      switch (capability.access_mode().mode()) {
        case Mode::SINGLE_NODE_WRITER:
        case Mode::SINGLE_NODE_READER_ONLY:
        case Mode::SINGLE_NODE_MULTI_WRITER:
          condition.access_mode = "ReadWriteOnce";
          break;
        case Mode::SINGLE_NODE_SINGLE_WRITER:
          condition.access_mode = "ReadWriteOncePod";
          break;
        case Mode::MULTI_NODE_READER_ONLY:
          condition.access_mode = "ReadOnlyMany";
          break;
        case Mode::MULTI_NODE_SINGLE_WRITER:
        case Mode::MULTI_NODE_MULTI_WRITER:
          condition.access_mode = "ReadWriteMany";
          break;
        default:
          return invalid(absl::StrCat("unsupported access mode \"",
                                      Mode::Mode_Name(capability.access_mode().mode()), "\""));
      }
    }
    conditions.push_back(condition);
  }
  return conditions;
}

absl::StatusOr<csi::v1::VolumeCapability> CsiNodeClient::Capability(const CapabilityArgs& args) {
  absl::StatusOr<bool> multi_writer = NodeSupportsCapability(RpcType::SINGLE_NODE_MULTI_WRITER);
  if (!multi_writer.ok()) return multi_writer.status();
  csi::v1::VolumeCapability capability;
  capability.mutable_access_mode()->set_mode(CsiAccessMode(args.access_mode, *multi_writer));
  if (args.block) {
    capability.mutable_block();
  } else {
    auto* mount = capability.mutable_mount();
    mount->set_fs_type(args.fs_type);
    for (const std::string& flag : args.mount_flags) mount->add_mount_flags(flag);
    if (args.mount_group.has_value()) {
      mount->set_volume_mount_group(absl::StrCat(*args.mount_group));
    }
  }
  return capability;
}

absl::Status CsiNodeClient::NodeStageVolume(const std::string& handle,
                                            const StringMap& publish_context,
                                            const std::string& staging_path,
                                            const CapabilityArgs& capability,
                                            const StringMap& secrets,
                                            const StringMap& volume_context,
                                            csi::v1::NodeStageVolumeRequest* sent) {
  absl::StatusOr<csi::v1::VolumeCapability> cap = Capability(capability);
  if (!cap.ok()) return cap.status();
  csi::v1::NodeStageVolumeRequest& request = *sent;
  request.set_volume_id(handle);
  request.mutable_publish_context()->insert(publish_context.begin(), publish_context.end());
  request.set_staging_target_path(staging_path);
  *request.mutable_volume_capability() = *cap;
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  request.mutable_volume_context()->insert(volume_context.begin(), volume_context.end());
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeStageVolumeResponse response;
  Record("NodeStageVolume", request);
  return FromGrpc(Stub()->NodeStageVolume(&context, request, &response), "NodeStageVolume");
}

absl::Status CsiNodeClient::NodePublishVolume(const std::string& handle, bool readonly,
                                              const std::string& staging_path,
                                              const std::string& target_path,
                                              const CapabilityArgs& capability,
                                              const StringMap& publish_context,
                                              const StringMap& volume_context,
                                              const StringMap& secrets,
                                              csi::v1::NodePublishVolumeRequest* sent) {
  absl::StatusOr<csi::v1::VolumeCapability> cap = Capability(capability);
  if (!cap.ok()) return cap.status();
  csi::v1::NodePublishVolumeRequest& request = *sent;
  request.set_volume_id(handle);
  request.set_target_path(target_path);
  request.set_readonly(readonly);
  request.mutable_publish_context()->insert(publish_context.begin(), publish_context.end());
  request.mutable_volume_context()->insert(volume_context.begin(), volume_context.end());
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  if (!staging_path.empty()) request.set_staging_target_path(staging_path);
  *request.mutable_volume_capability() = *cap;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodePublishVolumeResponse response;
  Record("NodePublishVolume", request);
  return FromGrpc(Stub()->NodePublishVolume(&context, request, &response), "NodePublishVolume");
}

absl::Status CsiNodeClient::NodeUnstageVolume(const std::string& handle,
                                              const std::string& staging_path) {
  csi::v1::NodeUnstageVolumeRequest request;
  request.set_volume_id(handle);
  request.set_staging_target_path(staging_path);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeUnstageVolumeResponse response;
  Record("NodeUnstageVolume", request);
  return FromGrpc(Stub()->NodeUnstageVolume(&context, request, &response), "NodeUnstageVolume");
}

absl::Status CsiNodeClient::NodeUnpublishVolume(const std::string& handle,
                                                const std::string& target_path) {
  csi::v1::NodeUnpublishVolumeRequest request;
  request.set_volume_id(handle);
  request.set_target_path(target_path);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeUnpublishVolumeResponse response;
  Record("NodeUnpublishVolume", request);
  return FromGrpc(Stub()->NodeUnpublishVolume(&context, request, &response),
                  "NodeUnpublishVolume");
}

absl::Status CsiNodeClient::Resend(const SentCall& call) {
  if (call.request == nullptr) return absl::InvalidArgumentError("no request to send again");
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  const google::protobuf::Message& request = *call.request;
  Record(call.method, request);
  if (auto* stage = dynamic_cast<const csi::v1::NodeStageVolumeRequest*>(&request)) {
    csi::v1::NodeStageVolumeResponse response;
    return FromGrpc(Stub()->NodeStageVolume(&context, *stage, &response), "NodeStageVolume");
  }
  if (auto* publish = dynamic_cast<const csi::v1::NodePublishVolumeRequest*>(&request)) {
    csi::v1::NodePublishVolumeResponse response;
    return FromGrpc(Stub()->NodePublishVolume(&context, *publish, &response),
                    "NodePublishVolume");
  }
  if (auto* unstage = dynamic_cast<const csi::v1::NodeUnstageVolumeRequest*>(&request)) {
    csi::v1::NodeUnstageVolumeResponse response;
    return FromGrpc(Stub()->NodeUnstageVolume(&context, *unstage, &response),
                    "NodeUnstageVolume");
  }
  if (auto* unpublish = dynamic_cast<const csi::v1::NodeUnpublishVolumeRequest*>(&request)) {
    csi::v1::NodeUnpublishVolumeResponse response;
    return FromGrpc(Stub()->NodeUnpublishVolume(&context, *unpublish, &response),
                    "NodeUnpublishVolume");
  }
  return absl::InvalidArgumentError(absl::StrCat(call.method, " cannot be sent again"));
}

}  // namespace ndr::kubelet

namespace ndr::kubelet {

absl::StatusOr<int64_t> CsiNodeClient::NodeExpandVolume(const std::string& handle,
                                                        const std::string& volume_path,
                                                        const std::string& staging_path,
                                                        int64_t new_size,
                                                        const CapabilityArgs& capability,
                                                        const StringMap& secrets) {
  // csi_client.go's own checks, before anything is sent.
  if (handle.empty()) return absl::InvalidArgumentError("missing volume id");
  if (volume_path.empty()) return absl::InvalidArgumentError("missing volume path");
  if (new_size < 0) return absl::InvalidArgumentError("size can not be less than 0");
  // getNodeV1AccessModeMapper: a NodeGetCapabilities of its own, in every release (v1.26.15 to
  // v1.37.2 csi_client.go NodeExpandVolume); found by the goldens of test/kubelet-goldens.
  absl::StatusOr<bool> multi_writer = NodeSupportsCapability(RpcType::SINGLE_NODE_MULTI_WRITER);
  if (!multi_writer.ok()) return multi_writer.status();
  csi::v1::NodeExpandVolumeRequest request;
  request.set_volume_id(handle);
  request.set_volume_path(volume_path);
  request.mutable_capacity_range()->set_required_bytes(new_size);
  auto* cap = request.mutable_volume_capability();
  cap->mutable_access_mode()->set_mode(CsiAccessMode(capability.access_mode, *multi_writer));
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  if (!staging_path.empty()) request.set_staging_target_path(staging_path);
  if (capability.block) {
    cap->mutable_block();
  } else {
    cap->mutable_mount()->set_fs_type(capability.fs_type);
    for (const std::string& flag : capability.mount_flags) cap->mutable_mount()->add_mount_flags(flag);
  }
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeExpandVolumeResponse response;
  Record("NodeExpandVolume", request);
  grpc::Status status = Stub()->NodeExpandVolume(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "NodeExpandVolume");
  return response.capacity_bytes();
}

absl::StatusOr<VolumeStats> CsiNodeClient::NodeGetVolumeStats(const std::string& handle,
                                                              const std::string& volume_path,
                                                              bool ask_condition) {
  if (handle.empty()) return absl::InvalidArgumentError("missing volume id");
  if (volume_path.empty()) return absl::InvalidArgumentError("missing target path");
  csi::v1::NodeGetVolumeStatsRequest request;
  request.set_volume_id(handle);
  request.set_volume_path(volume_path);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  csi::v1::NodeGetVolumeStatsResponse response;
  Record("NodeGetVolumeStats", request);
  grpc::Status status = Stub()->NodeGetVolumeStats(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "NodeGetVolumeStats");
  if (response.usage_size() == 0) {
    // Go's nil slice: an empty usage list is what "usage is nil" means on the wire.
    return absl::InternalError("failed to get usage from response. usage is nil");
  }
  VolumeStats stats;
  if (ask_condition) {
    absl::StatusOr<bool> condition = NodeSupportsVolumeCondition();
    if (!condition.ok()) return condition.status();
    if (*condition) {
      stats.abnormal = response.volume_condition().abnormal();
      stats.message = response.volume_condition().message();
    }
  }
  for (const csi::v1::VolumeUsage& usage : response.usage()) {
    if (usage.unit() == csi::v1::VolumeUsage::BYTES) {
      stats.available = usage.available();
      stats.capacity = usage.total();
      stats.used = usage.used();
    } else if (usage.unit() == csi::v1::VolumeUsage::INODES) {
      stats.inodes_free = usage.available();
      stats.inodes = usage.total();
      stats.inodes_used = usage.used();
    }  // kubelet logs an unknown unit and goes on
  }
  return stats;
}

}  // namespace ndr::kubelet

#include "test/csidriver/sample_controller.h"

#include "absl/strings/str_cat.h"
#include "logging/logging.h"

namespace ndr::sample {
namespace {

using RpcType = csi::v1::ControllerServiceCapability::RPC;

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

}  // namespace

grpc::Status ControllerService::CreateVolume(grpc::ServerContext*,
                                             const csi::v1::CreateVolumeRequest* request,
                                             csi::v1::CreateVolumeResponse* response) {
  if (record_) record_->Add("CreateVolume", *request);
  NDR_VLOG(4) << "CreateVolume name=" << request->name();
  if (request->name().empty()) return Invalid("name is required");
  if (request->volume_capabilities_size() == 0) {
    return Invalid("volume_capabilities are required");
  }
  for (const csi::v1::VolumeCapability& capability : request->volume_capabilities()) {
    if (!capability.has_mount() && !capability.has_block()) {
      return Invalid("each volume capability needs an access type, mount or block");
    }
    if (refuse_block_ && capability.has_block()) {
      return Invalid("this driver has filesystem volumes only: no block access type");
    }
  }
  const int64_t required = request->capacity_range().required_bytes();
  const int64_t capacity = required > 0 ? required : kDefaultCapacity;
  const std::string id = "sample-" + request->name();
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, created] = capacity_by_id_.emplace(id, capacity);
  if (!created && required > 0 && it->second != required) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                        absl::StrCat("volume ", request->name(), " exists with ", it->second,
                                     " bytes, not ", required));
  }
  response->mutable_volume()->set_volume_id(id);
  response->mutable_volume()->set_capacity_bytes(it->second);
  (*response->mutable_volume()->mutable_volume_context())["sample.csi.example.com/created-as"] =
      request->name();
  return grpc::Status::OK;
}

grpc::Status ControllerService::DeleteVolume(grpc::ServerContext*,
                                             const csi::v1::DeleteVolumeRequest* request,
                                             csi::v1::DeleteVolumeResponse*) {
  if (record_) record_->Add("DeleteVolume", *request);
  NDR_VLOG(4) << "DeleteVolume volume_id=" << request->volume_id();
  if (request->volume_id().empty()) return Invalid("volume_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  capacity_by_id_.erase(request->volume_id());  // an unknown volume is deleted already
  return grpc::Status::OK;
}

grpc::Status ControllerService::ControllerPublishVolume(
    grpc::ServerContext*, const csi::v1::ControllerPublishVolumeRequest* request,
    csi::v1::ControllerPublishVolumeResponse* response) {
  if (record_) record_->Add("ControllerPublishVolume", *request);
  NDR_VLOG(4) << "ControllerPublishVolume volume_id=" << request->volume_id()
              << " node_id=" << request->node_id();
  if (request->volume_id().empty()) return Invalid("volume_id is required");
  if (request->node_id().empty()) return Invalid("node_id is required");
  if (!request->has_volume_capability()) return Invalid("volume_capability is required");
  std::lock_guard<std::mutex> lock(mu_);
  if (capacity_by_id_.count(request->volume_id()) == 0) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("volume ", request->volume_id(), " does not exist"));
  }
  (*response->mutable_publish_context())[kAttachedToKey] = request->node_id();
  return grpc::Status::OK;
}

grpc::Status ControllerService::ControllerUnpublishVolume(
    grpc::ServerContext*, const csi::v1::ControllerUnpublishVolumeRequest* request,
    csi::v1::ControllerUnpublishVolumeResponse*) {
  if (record_) record_->Add("ControllerUnpublishVolume", *request);
  NDR_VLOG(4) << "ControllerUnpublishVolume volume_id=" << request->volume_id()
              << " node_id=" << request->node_id();
  if (request->volume_id().empty()) return Invalid("volume_id is required");
  return grpc::Status::OK;  // nothing is kept per node: detached already, or now
}

grpc::Status ControllerService::ControllerGetCapabilities(
    grpc::ServerContext*, const csi::v1::ControllerGetCapabilitiesRequest*,
    csi::v1::ControllerGetCapabilitiesResponse* response) {
  NDR_VLOG(4) << "ControllerGetCapabilities";
  for (RpcType::Type type : {RpcType::CREATE_DELETE_VOLUME, RpcType::PUBLISH_UNPUBLISH_VOLUME}) {
    response->add_capabilities()->mutable_rpc()->set_type(type);
  }
  return grpc::Status::OK;
}

}  // namespace ndr::sample

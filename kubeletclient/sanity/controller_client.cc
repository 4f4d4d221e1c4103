#include "kubeletclient/sanity/controller_client.h"

#include "api/endpoint.h"
#include "kubeletclient/util/grpc_status.h"

namespace ndr::kubelet {
namespace {

// The VolumeCapability of the calls: mount (fs type, flags) or block, the access mode's CSI mode.
csi::v1::VolumeCapability ToCapability(const CapabilityArgs& args) {
  csi::v1::VolumeCapability capability;
  capability.mutable_access_mode()->set_mode(CsiAccessMode(args.access_mode, false));
  if (args.block) {
    capability.mutable_block();
  } else {
    capability.mutable_mount()->set_fs_type(args.fs_type);
    for (const std::string& flag : args.mount_flags) {
      capability.mutable_mount()->add_mount_flags(flag);
    }
  }
  return capability;
}

}  // namespace

SanityController::SanityController(std::string endpoint, absl::Duration timeout,
                                   std::vector<SentCall>* sent)
    : endpoint_(std::move(endpoint)), timeout_(timeout), sent_(sent) {}

std::shared_ptr<grpc::Channel> SanityController::Channel() const {
  absl::StatusOr<std::string> path = UnixSocketPath(endpoint_, "CSI endpoint");
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(GrpcUnixTarget(path.ok() ? *path : endpoint_),
                                   grpc::InsecureChannelCredentials(), args);
}

void SanityController::Record(const std::string& method, const google::protobuf::Message& request) {
  if (sent_ != nullptr) sent_->push_back(MakeSentCall(method, request));
}

absl::StatusOr<ControllerCapabilities> SanityController::Capabilities() {
  ControllerCapabilities capabilities;
  {
    csi::v1::GetPluginCapabilitiesRequest request;
    csi::v1::GetPluginCapabilitiesResponse response;
    grpc::ClientContext context;
    context.set_deadline(DeadlineIn(timeout_));
    Record("GetPluginCapabilities", request);
    grpc::Status status =
        csi::v1::Identity::NewStub(Channel())->GetPluginCapabilities(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, "GetPluginCapabilities");
    for (const csi::v1::PluginCapability& capability : response.capabilities()) {
      using Service = csi::v1::PluginCapability::Service;
      capabilities.service =
          capabilities.service || capability.service().type() == Service::CONTROLLER_SERVICE;
      capabilities.accessibility =
          capabilities.accessibility ||
          capability.service().type() == Service::VOLUME_ACCESSIBILITY_CONSTRAINTS;
    }
  }
  if (!capabilities.service) return capabilities;
  csi::v1::ControllerGetCapabilitiesRequest request;
  csi::v1::ControllerGetCapabilitiesResponse response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  Record("ControllerGetCapabilities", request);
  grpc::Status status = csi::v1::Controller::NewStub(Channel())->ControllerGetCapabilities(
      &context, request, &response);
  if (!status.ok()) return FromGrpc(status, "ControllerGetCapabilities");
  using Rpc = csi::v1::ControllerServiceCapability::RPC;
  for (const csi::v1::ControllerServiceCapability& capability : response.capabilities()) {
    capabilities.create_delete =
        capabilities.create_delete || capability.rpc().type() == Rpc::CREATE_DELETE_VOLUME;
    capabilities.publish_unpublish =
        capabilities.publish_unpublish || capability.rpc().type() == Rpc::PUBLISH_UNPUBLISH_VOLUME;
  }
  return capabilities;
}

absl::StatusOr<csi::v1::Volume> SanityController::CreateVolume(const std::string& name,
                                                               int64_t bytes,
                                                               const CapabilityArgs& capability,
                                                               const StringMap& secrets) {
  csi::v1::CreateVolumeRequest request;
  request.set_name(name);
  request.mutable_capacity_range()->set_required_bytes(bytes);
  *request.add_volume_capabilities() = ToCapability(capability);
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  return CreateVolume(request);
}

absl::StatusOr<csi::v1::Volume> SanityController::CreateVolume(
    const csi::v1::CreateVolumeRequest& request) {
  csi::v1::CreateVolumeResponse response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  Record("CreateVolume", request);
  grpc::Status status =
      csi::v1::Controller::NewStub(Channel())->CreateVolume(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "CreateVolume");
  if (response.volume().volume_id().empty()) {
    return absl::InternalError("CreateVolume: the answer has no volume_id");
  }
  return response.volume();
}

absl::Status SanityController::DeleteVolume(const std::string& volume_id,
                                            const StringMap& secrets) {
  csi::v1::DeleteVolumeRequest request;
  request.set_volume_id(volume_id);
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  csi::v1::DeleteVolumeResponse response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  Record("DeleteVolume", request);
  return FromGrpc(
      csi::v1::Controller::NewStub(Channel())->DeleteVolume(&context, request, &response),
      "DeleteVolume");
}

absl::StatusOr<StringMap> SanityController::ControllerPublishVolume(
    const std::string& volume_id, const std::string& node_id, const CapabilityArgs& capability,
    const StringMap& volume_context, const StringMap& secrets) {
  csi::v1::ControllerPublishVolumeRequest request;
  request.set_volume_id(volume_id);
  request.set_node_id(node_id);
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  *request.mutable_volume_capability() = ToCapability(capability);
  request.mutable_volume_context()->insert(volume_context.begin(), volume_context.end());
  csi::v1::ControllerPublishVolumeResponse response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  Record("ControllerPublishVolume", request);
  grpc::Status status = csi::v1::Controller::NewStub(Channel())->ControllerPublishVolume(
      &context, request, &response);
  if (!status.ok()) return FromGrpc(status, "ControllerPublishVolume");
  return StringMap(response.publish_context().begin(), response.publish_context().end());
}

absl::Status SanityController::ControllerUnpublishVolume(const std::string& volume_id,
                                                         const std::string& node_id,
                                                         const StringMap& secrets) {
  csi::v1::ControllerUnpublishVolumeRequest request;
  request.set_volume_id(volume_id);
  request.set_node_id(node_id);
  request.mutable_secrets()->insert(secrets.begin(), secrets.end());
  csi::v1::ControllerUnpublishVolumeResponse response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout_));
  Record("ControllerUnpublishVolume", request);
  return FromGrpc(csi::v1::Controller::NewStub(Channel())->ControllerUnpublishVolume(
                      &context, request, &response),
                  "ControllerUnpublishVolume");
}

}  // namespace ndr::kubelet

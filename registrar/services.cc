#include "registrar/services.h"

#include "logging/logging.h"

namespace ndr::registrar {

grpc::Status RegistrationService::GetInfo(grpc::ServerContext* context,
                                          const pluginregistration::InfoRequest*,
                                          pluginregistration::PluginInfo* response) {
  NDR_VLOG(4) << "GetInfo from " << context->peer();
  if (context->client_metadata().count(kHealthCheckMetadata) == 0) {
    ++handshakes_;
    asked_for_info_ = true;
  }
  response->set_type("CSIPlugin");
  response->set_name(info_.driver_name);
  response->set_endpoint(info_.endpoint);
  response->add_supported_versions(kSupportedVersion);
  NDR_VLOG(4) << "GetInfo answer: " << response->ShortDebugString();
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse*) {
  NDR_VLOG(4) << "NotifyRegistrationStatus: " << request->ShortDebugString();
  if (!request->plugin_registered() && request->error().empty()) {
    // Kubelet always says why it refuses. A refusal without a reason is what any malformed
    // message decodes to (proto3 defaults), so it must not stop the registrar.
    NDR_LOG(WARNING) << "Ignoring a NotifyRegistrationStatus that refuses without a reason from "
                 << context->peer();
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "plugin_registered is false but error is empty: kubelet always gives "
                        "the reason for a refusal");
  }
  const int handshakes = handshakes_.exchange(0);
  notify_(Verdict{request->plugin_registered(), request->error(), asked_for_info_.load(),
                  handshakes});
  return grpc::Status::OK;
}

grpc::Status CSIRegistrationService::GetCSIDriverInfo(grpc::ServerContext* context,
                                                      const csiregistration::CSIDriverInfoRequest*,
                                                      csiregistration::CSIDriverInfo* response) {
  NDR_VLOG(4) << "GetCSIDriverInfo from " << context->peer();
  response->set_csi_endpoint(info_.endpoint);
  response->mutable_options()->set_requires_publish_pod(info_.requires_publish_pod);
  NDR_VLOG(4) << "GetCSIDriverInfo answer: " << response->ShortDebugString();
  return grpc::Status::OK;
}

}  // namespace ndr::registrar

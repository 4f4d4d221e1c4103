#include "kubeletclient/csi/csi_handler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/endpoint.h"
#include "logging/logging.h"
#include "kubeletclient/util/grpc_status.h"

namespace ndr::kubelet {
namespace {

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  grpc::ChannelArguments args;
  // Each driver gets its own connection, as kubelet dials each one afresh.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(GrpcUnixTarget(path), grpc::InsecureChannelCredentials(), args);
}

}  // namespace

bool IsTransientCsiRegistrationFailure(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::CANCELLED;
}

CsiDriverInfoResult GetCsiDriverInfo(const std::string& registration_socket,
                                     absl::Duration timeout, CallSet* calls) {
  auto stub = csiregistration::CSIRegistration::NewStub(UnixChannel(registration_socket));
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  CallSet::Scope scope(calls, &context);
  csiregistration::CSIDriverInfo info;
  CsiDriverInfoResult result;
  result.status = stub->GetCSIDriverInfo(&context, csiregistration::CSIDriverInfoRequest(), &info);
  if (result.status.ok()) result.info = info;
  return result;
}

absl::StatusOr<csi::v1::NodeGetInfoResponse> NodeGetInfo(const std::string& endpoint,
                                                         absl::Duration timeout, CallSet* calls) {
  absl::StatusOr<std::string> path = UnixSocketPath(endpoint, "CSI endpoint");
  if (!path.ok()) return path.status();
  auto stub = csi::v1::Node::NewStub(UnixChannel(*path));
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  context.set_wait_for_ready(false);
  CallSet::Scope scope(calls, &context);
  csi::v1::NodeGetInfoResponse response;
  grpc::Status status = stub->NodeGetInfo(&context, csi::v1::NodeGetInfoRequest(), &response);
  if (status.ok()) return response;
  // csi_plugin.go RegisterPlugin (v1.26.15) returns NodeGetInfo's error as it is: gRPC-Go's text,
  // which for a socket that cannot be dialled is the dial error.
  std::optional<std::string> dial;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) dial = GoDialError(*path);
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      dial.has_value() ? absl::StrCat("rpc error: code = Unavailable desc = ", *dial)
                                       : GoRpcError(status));
}

absl::StatusOr<Version> CsiHandler::Validate(const std::string& caller, const std::string& name,
                                             const std::vector<std::string>& versions,
                                             const std::string& registration_socket) const {
  std::optional<DriverInfo> existing = registry_->Get(name);
  std::optional<Version> existing_version;
  // The same socket registering again (after a failed notification, say) replaces itself.
  if (existing.has_value() && existing->registration_socket != registration_socket) {
    existing_version = *Version::ParseGeneric(existing->version);
  }
  return ValidateVersions(caller, name, versions,
                          existing_version.has_value() ? &*existing_version : nullptr,
                          options_.release.Has(ReleaseBehaviour::kShortVersionRefusalTexts)
                              ? VersionTexts::kV129
                              : VersionTexts::kV126);
}

absl::Status CsiHandler::ValidatePlugin(const std::string& name, const std::string& endpoint,
                                        const std::vector<std::string>& versions,
                                        const std::string& registration_socket) {
  NDR_LOG(INFO) << "kubernetes.io/csi: Trying to validate a new CSI Driver with name: " << name
            << " endpoint: " << endpoint << " versions: " << absl::StrJoin(versions, ",");
  absl::StatusOr<Version> version = Validate("ValidatePlugin", name, versions, registration_socket);
  if (!version.ok()) {
    return absl::Status(version.status().code(),
                        absl::StrCat("validation failed for CSI Driver ", name, " at endpoint ",
                                     endpoint, ": ", version.status().message()));
  }
  return absl::OkStatus();
}

absl::Status CsiHandler::RegisterPlugin(const std::string& name, const std::string& endpoint,
                                        const std::vector<std::string>& versions,
                                        const std::string& registration_socket) {
  NDR_LOG(INFO) << "kubernetes.io/csi: Register new plugin with name: " << name
            << " at endpoint: " << endpoint;
  absl::StatusOr<Version> version = Validate("RegisterPlugin", name, versions, registration_socket);
  if (!version.ok()) return version.status();

  DriverInfo driver;
  driver.name = name;
  driver.endpoint = endpoint;
  driver.registration_socket = registration_socket;
  driver.version = version->String();

  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[registration_socket] = CsiAttempt{};
  }
  if (options_.ask_csi_registration) {
    CsiDriverInfoResult csi_info =
        GetCsiDriverInfo(registration_socket, options_.csi_registration_timeout, calls_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      attempts_[registration_socket].csi_driver_info = csi_info;
    }
    if (csi_info.info.has_value()) {
      driver.requires_publish_pod = csi_info.info->options().requires_publish_pod();
      NDR_VLOG(4) << "GetCSIDriverInfo on " << registration_socket << ": "
                  << csi_info.info->ShortDebugString();
    } else if (csi_info.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      NDR_LOG(INFO) << "Registrar of CSI driver " << name << " at " << registration_socket
                    << " does not implement CSIRegistration: the driver gets no pod "
                       "information unless its CSIDriver object asks for it";
    } else if (IsTransientCsiRegistrationFailure(csi_info.status.error_code())) {
      // Our own extension could not reach the socket (deleted and being created again, or a busy
      // registrar): no verdict on the plugin, which kubelet itself would never have asked.
      absl::Status cause =
          FromGrpc(csi_info.status,
                   absl::StrCat("CSIRegistration.GetCSIDriverInfo on ", registration_socket));
      NDR_LOG(WARNING) << "Registration of CSI driver " << name << " at " << registration_socket
                       << " abandoned for now, without refusing it: " << cause.message();
      return AbandonedAttempt(cause);
    } else {
      return FromGrpc(csi_info.status,
                      absl::StrCat("CSIRegistration.GetCSIDriverInfo on ", registration_socket));
    }
  }

  absl::StatusOr<csi::v1::NodeGetInfoResponse> node =
      NodeGetInfo(endpoint, options_.node_get_info_timeout, calls_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[registration_socket].node_get_info = node;
  }
  if (!node.ok()) return node.status();
  if (node->node_id().empty()) {
    return absl::InvalidArgumentError(
        "error adding CSI driver node info: driverNodeID must not be empty");
  }
  driver.node_id = node->node_id();
  driver.max_volumes_per_node = node->max_volumes_per_node();
  driver.topology.insert(node->accessible_topology().segments().begin(),
                         node->accessible_topology().segments().end());
  registry_->Set(driver);
  NDR_LOG(INFO) << "Registered CSI driver " << name << " (node ID " << driver.node_id
            << ", endpoint " << endpoint << ", version " << driver.version
            << ", requires pod info: "
            << (driver.requires_publish_pod.has_value()
                    ? (*driver.requires_publish_pod ? "true" : "false")
                    : "unknown")
            << ")";
  return absl::OkStatus();
}

CsiAttempt CsiHandler::LastAttempt(const std::string& registration_socket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(registration_socket);
  return it == attempts_.end() ? CsiAttempt{} : it->second;
}

void CsiHandler::DeRegisterPlugin(const std::string& name,
                                  const std::string& registration_socket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_.erase(registration_socket);
  }
  if (registry_->Erase(name, registration_socket)) {
    NDR_LOG(INFO) << "kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin "
              << name << ": driver removed";
  } else {
    NDR_LOG(INFO) << "Socket " << registration_socket << " of CSI driver " << name
              << " went away, but the driver is registered from another socket; it stays";
  }
}

}  // namespace ndr::kubelet

#include "kubeletclient/sanity/own_registrar.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/endpoint.h"
#include "kubeletclient/util/grpc_status.h"

namespace ndr::kubelet::sanity {

absl::StatusOr<std::unique_ptr<OwnRegistrar>> OwnRegistrar::Start(const std::string& csi_address,
                                                                   absl::Duration timeout) {
  absl::StatusOr<std::string> path = UnixSocketPath(csi_address, "--csi-address");
  if (!path.ok()) return path.status();
  // The name, as the registrar learns it (node_register.go in the Go registrar: GetPluginInfo).
  csi::v1::GetPluginInfoResponse plugin;
  {
    auto identity = csi::v1::Identity::NewStub(
        grpc::CreateChannel(GrpcUnixTarget(*path), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(DeadlineIn(timeout));
    grpc::Status status =
        identity->GetPluginInfo(&context, csi::v1::GetPluginInfoRequest(), &plugin);
    if (!status.ok()) {
      return absl::UnavailableError(absl::StrCat("GetPluginInfo on --csi-address ", *path, ": ",
                                                 GoRpcError(status)));
    }
  }
  if (plugin.name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GetPluginInfo on --csi-address ", *path,
        " gave no name: a registrar cannot offer a driver without one (the CSI spec requires it)"));
  }
  std::unique_ptr<OwnRegistrar> own(new OwnRegistrar());
  // A directory of its own; the socket's name is fixed, so nothing the driver says is in a path.
  char dir[] = "/tmp/ndr-judge-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp /tmp/ndr-judge-XXXXXX: ", strerror(errno)));
  }
  own->dir_ = dir;
  own->socket_ = own->dir_ + "/registration.sock";
  registrar::RegistrationInfo info;
  info.driver_name = plugin.name();
  info.endpoint = *path;
  OwnRegistrar* self = own.get();
  own->service_ = std::make_unique<registrar::RegistrationService>(
      info, [self](const registrar::Verdict& verdict) {
        std::lock_guard<std::mutex> lock(self->mu_);
        self->verdict_ = verdict;
      });
  grpc::ServerBuilder builder;
  builder.AddListeningPort(GrpcUnixTarget(own->socket_), grpc::InsecureServerCredentials());
  builder.RegisterService(own->service_.get());
  own->server_ = builder.BuildAndStart();
  if (own->server_ == nullptr) {
    return absl::InternalError(
        absl::StrCat("could not serve the judge's registration socket ", own->socket_));
  }
  return own;
}

OwnRegistrar::~OwnRegistrar() {
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  if (!socket_.empty()) unlink(socket_.c_str());
  if (!dir_.empty()) rmdir(dir_.c_str());
}

std::optional<registrar::Verdict> OwnRegistrar::verdict() const {
  std::lock_guard<std::mutex> lock(mu_);
  return verdict_;
}

}  // namespace ndr::kubelet::sanity

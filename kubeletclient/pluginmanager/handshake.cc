#include "kubeletclient/pluginmanager/handshake.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "api/endpoint.h"
#include "logging/logging.h"
#include "kubeletclient/util/grpc_status.h"

namespace ndr::kubelet {
namespace {

grpc::Status Notify(pluginregistration::Registration::StubInterface* stub,
                    const pluginregistration::RegistrationStatus& status, absl::Duration timeout,
                    CallSet* calls) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  CallSet::Scope scope(calls, &context);
  pluginregistration::RegistrationStatusResponse response;
  return stub->NotifyRegistrationStatus(&context, status, &response);
}

}  // namespace

HandshakeResult RegisterSocket(const std::string& socket, const HandlerMap& handlers,
                               const HandshakeTimeouts& timeouts, CallSet* calls,
                               RegistrationVerdict verdict) {
  HandshakeResult result;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateCustomChannel(GrpcUnixTarget(socket), grpc::InsecureChannelCredentials(), args));

  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    context.set_deadline(DeadlineIn(timeouts.get_info));
    CallSet::Scope scope(calls, &context);
    grpc::Status status = stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    if (!status.ok()) {
      result.status = absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at "
                       "socket ",
                       socket, ", err: ", GoRpcError(status)));
      return result;
    }
  }
  NDR_VLOG(4) << "GetInfo at " << socket << ": " << info.ShortDebugString();
  result.info = info;

  // Sends a refusal and reports `why`.
  auto refuse = [&](const std::string& why) {
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(false);
    status.set_error(why);
    if (verdict == RegistrationVerdict::kWithhold) {
      result.withheld = status;
      result.status = absl::FailedPreconditionError(why);
      return result;
    }
    result.notified = status;
    grpc::Status sent = Notify(stub.get(), status, timeouts.notify, calls);
    if (!sent.ok()) {
      result.status = absl::UnavailableError(absl::StrCat(
          "RegisterPlugin error -- failed to send error at socket ", socket, ", err: ",
          GoRpcError(sent)));
    } else {
      result.status = absl::FailedPreconditionError(why);
    }
    return result;
  };

  auto handler = handlers.find(info.type());
  if (handler == handlers.end()) {
    return refuse(absl::StrCat("RegisterPlugin error -- no handler registered for plugin type: ",
                               info.type(), " at socket ", socket));
  }
  result.endpoint = info.endpoint().empty() ? socket : info.endpoint();
  const std::vector<std::string> versions(info.supported_versions().begin(),
                                          info.supported_versions().end());
  if (absl::Status s = handler->second->ValidatePlugin(info.name(), result.endpoint, versions, socket);
      !s.ok()) {
    return refuse(absl::StrCat("RegisterPlugin error -- plugin validation failed with err: ",
                               s.message()));
  }
  result.validated = true;
  if (absl::Status s =
          handler->second->RegisterPlugin(info.name(), result.endpoint, versions, socket);
      !s.ok()) {
    if (IsAbandonedAttempt(s)) {
      // No verdict: the plugin did nothing wrong, and the manager tries again.
      result.status = absl::Status(
          s.code(), absl::StrCat("RegisterPlugin attempt at socket ", socket,
                                 " abandoned without notifying the plugin: ", s.message()));
      return result;
    }
    return refuse(absl::StrCat("RegisterPlugin error -- plugin registration failed with err: ",
                               s.message()));
  }
  result.handler = handler->second;

  pluginregistration::RegistrationStatus registered;
  registered.set_plugin_registered(true);
  if (verdict == RegistrationVerdict::kWithhold) {
    result.withheld = registered;
    return result;
  }
  result.notified = registered;
  grpc::Status sent = Notify(stub.get(), registered, timeouts.notify, calls);
  if (!sent.ok()) {
    result.status = absl::UnavailableError(absl::StrCat(
        "RegisterPlugin error -- failed to send registration status at socket ", socket,
        ", err: ", GoRpcError(sent)));
  }
  return result;
}

}  // namespace ndr::kubelet

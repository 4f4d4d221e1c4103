// One registration handshake with one plugin socket, as kubelet's operation generator does it
// (pkg/kubelet/pluginmanager/operationexecutor: GenerateRegisterPluginFunc):
// GetInfo (1 s) -> the handler for PluginInfo.type -> an empty endpoint means the socket itself ->
// ValidatePlugin -> RegisterPlugin -> NotifyRegistrationStatus (5 s), sending kubelet's texts
// when it refuses. A RegisterPlugin that abandons its attempt (plugin_handler.h) gets no
// notification at all. Thread-safe; blocks for at most the sum of the timeouts.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_HANDSHAKE_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_HANDSHAKE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "kubeletclient/util/call_set.h"
#include "kubeletclient/pluginmanager/plugin_handler.h"

namespace ndr::kubelet {

using HandlerMap = std::map<std::string, PluginHandler*>;  // by PluginInfo.type

struct HandshakeTimeouts {
  absl::Duration get_info = absl::Seconds(1);
  absl::Duration notify = absl::Seconds(5);
};

struct HandshakeResult {
  // GetInfo's answer, if there was one.
  std::optional<pluginregistration::PluginInfo> info;
  // The endpoint used: PluginInfo.endpoint, or the socket when that was empty.
  std::string endpoint;
  // The handler that registered the plugin, when it did.
  PluginHandler* handler = nullptr;
  // What was sent with NotifyRegistrationStatus, if it was sent.
  std::optional<pluginregistration::RegistrationStatus> notified;
  // OK only if the plugin is registered and was told so.
  absl::Status status;
  // The handler's ValidatePlugin accepted the plugin: kubelet had added it to its actual state
  // of world, where kubelet 1.26 to 1.36.0 leaves it whatever happens next.
  bool validated = false;
};

HandshakeResult RegisterSocket(const std::string& socket, const HandlerMap& handlers,
                               const HandshakeTimeouts& timeouts, CallSet* calls);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_HANDSHAKE_H_

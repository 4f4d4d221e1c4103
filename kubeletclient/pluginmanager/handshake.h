// One registration handshake with one plugin socket, as kubelet's operation generator does it
// (pkg/kubelet/pluginmanager/operationexecutor: GenerateRegisterPluginFunc):
// GetInfo (1 s) -> the handler for PluginInfo.type -> an empty endpoint means the socket itself ->
// ValidatePlugin -> RegisterPlugin -> NotifyRegistrationStatus (5 s), sending kubelet's texts
// when it refuses. A RegisterPlugin that abandons its attempt (plugin_handler.h) gets no
// notification at all. With RegistrationVerdict::kWithhold the handshake stops before
// NotifyRegistrationStatus and only reports the verdict it would have sent: for a probe or a
// judge, which must not tell a registrar that a kubelet registered it (a registrar counts the
// registration and its watchdog stops offering the socket). Thread-safe; blocks for at most the
// sum of the timeouts.
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

enum class RegistrationVerdict {
  kSend,      // NotifyRegistrationStatus, as kubelet
  kWithhold,  // nothing sent: the registrar sees only GetInfo
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
  // The verdict kubelet would have sent, when it was withheld (RegistrationVerdict::kWithhold).
  std::optional<pluginregistration::RegistrationStatus> withheld;
  // OK only if the plugin is registered and was told so (or, withheld, would have been).
  absl::Status status;
  // The handler's ValidatePlugin accepted the plugin: kubelet had added it to its actual state
  // of world, where kubelet 1.26 to 1.35 leaves it whatever happens next.
  bool validated = false;
};

HandshakeResult RegisterSocket(const std::string& socket, const HandlerMap& handlers,
                               const HandshakeTimeouts& timeouts, CallSet* calls,
                               RegistrationVerdict verdict = RegistrationVerdict::kSend);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_HANDSHAKE_H_

// The interface kubelet's plugin manager dispatches to, by PluginInfo.type
// (pkg/kubelet/pluginmanager/cache.PluginHandler). The watcher and the registration manager only
// discover sockets and run the handshake; what registering means is up to the handler.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"

namespace ndr::kubelet {

// A registration attempt given up for a reason that says nothing about the plugin: one of our
// own calls could not reach its registration socket (being replaced, say). The handshake then
// sends no verdict (a refusal would end a registrar whose new socket is about to be registered),
// and the registration manager tries again. Kubelet's handlers have no such case; the CSI
// handler's CSIRegistration call, which kubelet does not make, does (csi_handler.h).
inline constexpr char kAbandonedAttemptPayload[] = "ndr.kubelet/abandoned-attempt";

inline absl::Status AbandonedAttempt(absl::Status cause) {
  cause.SetPayload(kAbandonedAttemptPayload, absl::Cord("1"));
  return cause;
}

inline bool IsAbandonedAttempt(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kAbandonedAttemptPayload).has_value();
}

class PluginHandler {
 public:
  virtual ~PluginHandler() = default;

  // Checks whether the plugin may register; the error text is sent back to the plugin.
  // `registration_socket` is where the plugin's registration API is served; kubelet does not pass
  // it, but the CSI handler needs it for CSIRegistration (the pod-info design) and to tell a
  // plugin re-registering from the same socket from a second plugin of the same name.
  virtual absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions,
                                      const std::string& registration_socket) = 0;
  // Registers the plugin. An AbandonedAttempt error means "no verdict: try again".
  virtual absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions,
                                      const std::string& registration_socket) = 0;
  // The plugin's registration socket went away.
  virtual void DeRegisterPlugin(const std::string& name,
                                const std::string& registration_socket) = 0;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_

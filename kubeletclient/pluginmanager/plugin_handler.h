// The interface kubelet's plugin manager dispatches to, by PluginInfo.type
// (pkg/kubelet/pluginmanager/cache.PluginHandler). The watcher and the registration manager only
// discover sockets and run the handshake; what registering means is up to the handler.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ndr::kubelet {

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
  // Registers the plugin.
  virtual absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions,
                                      const std::string& registration_socket) = 0;
  // The plugin's registration socket went away.
  virtual void DeRegisterPlugin(const std::string& name,
                                const std::string& registration_socket) = 0;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_HANDLER_H_

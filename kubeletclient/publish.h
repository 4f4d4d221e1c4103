// `kubeletclient publish` and `kubeletclient unpublish`: a pod's CSI volumes, set up and torn
// down as kubelet would, after a registration handshake with every plugin in the registry
// directory (so the client knows each driver's endpoint and whether it wants pod information).
#ifndef NDR_KUBELETCLIENT_PUBLISH_H_
#define NDR_KUBELETCLIENT_PUBLISH_H_

#include <string>
#include <vector>

#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/csi/publisher.h"

namespace ndr::kubelet {

struct PublishCommand {
  std::string pod_file;
  std::vector<std::string> object_paths;
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  NodeOptions node;
  HandshakeTimeouts handshake;
  CsiHandlerOptions csi;
};

struct CommandOutcome {
  bool ok = false;     // every volume succeeded
  std::string json;    // what happened, secrets redacted
  std::string error;   // why nothing was done, when nothing could be
  std::vector<std::string> volume_errors;  // "volume "x": why", for each volume that failed
};

CommandOutcome RunPublish(const PublishCommand& command);
CommandOutcome RunUnpublish(const PublishCommand& command);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PUBLISH_H_

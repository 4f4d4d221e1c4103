// `kubeletclient publish` and `kubeletclient unpublish`: a pod's CSI volumes, set up and torn
// down as kubelet would, after a registration handshake with every plugin in the registry
// directory (volume_command.h).
#ifndef NDR_KUBELETCLIENT_PUBLISH_H_
#define NDR_KUBELETCLIENT_PUBLISH_H_

#include "kubeletclient/volume_command.h"

namespace ndr::kubelet {

CommandOutcome RunPublish(const PublishCommand& command);
CommandOutcome RunUnpublish(const PublishCommand& command);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PUBLISH_H_

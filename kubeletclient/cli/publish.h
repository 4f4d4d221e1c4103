// `kubeletclient publish` and `kubeletclient unpublish`: a pod's CSI volumes set up and torn down
// as kubelet would (kubeletclient/publish.h).
#ifndef NDR_KUBELETCLIENT_CLI_PUBLISH_H_
#define NDR_KUBELETCLIENT_CLI_PUBLISH_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Publish();
Command Unpublish();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_PUBLISH_H_

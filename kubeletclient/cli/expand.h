// `kubeletclient expand`: online expansion of a published volume (kubeletclient/expand.h).
#ifndef NDR_KUBELETCLIENT_CLI_EXPAND_H_
#define NDR_KUBELETCLIENT_CLI_EXPAND_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Expand();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_EXPAND_H_

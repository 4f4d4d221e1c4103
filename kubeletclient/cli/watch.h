// `kubeletclient watch`: kubelet's plugin manager as a program (kubeletclient/watch.h).
#ifndef NDR_KUBELETCLIENT_CLI_WATCH_H_
#define NDR_KUBELETCLIENT_CLI_WATCH_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Watch();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_WATCH_H_

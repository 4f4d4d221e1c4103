// `kubeletclient republish`: kubelet's periodic remount of the volumes of drivers that ask for it
// (kubeletclient/republish.h).
#ifndef NDR_KUBELETCLIENT_CLI_REPUBLISH_H_
#define NDR_KUBELETCLIENT_CLI_REPUBLISH_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Republish();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_REPUBLISH_H_

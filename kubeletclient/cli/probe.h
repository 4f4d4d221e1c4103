// `kubeletclient probe`: one registration handshake against one registration socket
// (kubeletclient/probe.h).
#ifndef NDR_KUBELETCLIENT_CLI_PROBE_H_
#define NDR_KUBELETCLIENT_CLI_PROBE_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Probe();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_PROBE_H_

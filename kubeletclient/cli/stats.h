// `kubeletclient stats`: the volume statistics kubelet collects for a pod's CSI volumes, in JSON
// or as its Prometheus metric families (kubeletclient/stats.h).
#ifndef NDR_KUBELETCLIENT_CLI_STATS_H_
#define NDR_KUBELETCLIENT_CLI_STATS_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Stats();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_STATS_H_

// `kubeletclient sanity`: the judge of CSI node plugins (kubeletclient/sanity/sanity.h), once per
// kubelet release of --kubelet-version.
#ifndef NDR_KUBELETCLIENT_CLI_SANITY_H_
#define NDR_KUBELETCLIENT_CLI_SANITY_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Sanity();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_SANITY_H_

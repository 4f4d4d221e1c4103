// `kubeletclient jwks`: the public half of --service-account-key-file as a JSON Web Key Set, for
// whoever verifies the service-account tokens the volume commands mint (kubeletclient/token).
#ifndef NDR_KUBELETCLIENT_CLI_JWKS_H_
#define NDR_KUBELETCLIENT_CLI_JWKS_H_

#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

Command Jwks();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_JWKS_H_

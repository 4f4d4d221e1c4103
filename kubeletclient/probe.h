// `kubeletclient probe`: one registration handshake against one registration socket, as `watch`
// would do it, with the outcome as a JSON document. Read-only unless asked
// (RegistrationVerdict::kSend): the verdict kubelet would send is reported, not sent, so a
// registrar in production sees only a GetInfo and its driver a NodeGetInfo.
#ifndef NDR_KUBELETCLIENT_PROBE_H_
#define NDR_KUBELETCLIENT_PROBE_H_

#include <string>

#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/pluginmanager/handshake.h"

namespace ndr::kubelet {

struct ProbeOutcome {
  bool registered = false;  // registered, or (verdict withheld) kubelet would register it
  std::string json;  // pretty-printed, newline-terminated
};

ProbeOutcome Probe(const std::string& registration_socket, const HandshakeTimeouts& handshake,
                   const CsiHandlerOptions& csi, RegistrationVerdict verdict);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PROBE_H_

// `kubeletclient probe`: one registration handshake against one registration socket, exactly
// as `watch` would do it, with the outcome as a JSON document.
#ifndef NDR_KUBELETCLIENT_PROBE_H_
#define NDR_KUBELETCLIENT_PROBE_H_

#include <string>

#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/pluginmanager/handshake.h"

namespace ndr::kubelet {

struct ProbeOutcome {
  bool registered = false;
  std::string json;  // pretty-printed, newline-terminated
};

ProbeOutcome Probe(const std::string& registration_socket, const HandshakeTimeouts& handshake,
                   const CsiHandlerOptions& csi);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PROBE_H_

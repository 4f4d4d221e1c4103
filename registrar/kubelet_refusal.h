// What kubelet's reason for refusing a registration says about trying again.
//
// kubelet sends NotifyRegistrationStatus(plugin_registered=false, error) with one of three texts
// (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go,
// GenerateRegisterPluginFunc, the same in v1.26.0 to v1.37.2):
//   "RegisterPlugin error -- no handler registered for plugin type: T at socket S"
//   "RegisterPlugin error -- plugin validation failed with err: E"
//       (E from csi_plugin.go ValidatePlugin)
//   "RegisterPlugin error -- plugin registration failed with err: E"
//       (E from csi_plugin.go RegisterPlugin)
// Some reasons go away by themselves: the API server was unreachable while kubelet updated the
// Node or the CSINode, or the driver's NodeGetInfo failed while it was starting. Others stay
// until someone changes something: an empty node ID, a topology label another value already
// holds, versions kubelet does not support, a name the API server rejects.
#ifndef NDR_REGISTRAR_KUBELET_REFUSAL_H_
#define NDR_REGISTRAR_KUBELET_REFUSAL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ndr::registrar {

enum class RefusalKind {
  kTransient,  // the same registration succeeds once the API server or the driver answers
  kPermanent,  // no retry can succeed until the driver, the node or the manifest changes
  kUnknown,    // a text kubelet v1.26 to v1.37 does not send
};

struct KubeletRefusal {
  RefusalKind kind = RefusalKind::kUnknown;
  std::string why;  // short, for logs and /healthz: "kubelet could not update the Node object"
};

// Classifies kubelet's refusal text. A permanent cause anywhere in it wins: kubelet wraps the
// causes of its four attempts at updating the Node in one "error updating Node object" text, and
// a topology collision among them stays whatever else went wrong.
KubeletRefusal ClassifyKubeletRefusal(absl::string_view error);

absl::string_view RefusalKindName(RefusalKind kind);  // "transient", "permanent", "unknown"

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_KUBELET_REFUSAL_H_

// What the registrar can tell about wrong paths, the most common reason a driver never
// registers: kubelet never asks the registration socket for its info (it does not watch the
// directory the socket is in), or kubelet asks, then refuses because it cannot dial the driver at
// the endpoint it was given (not the driver socket's path on the host). The Go registrar waits or
// crash-loops without a hint; these are the hints, naming the flag, its value, what kubelet did
// and the usual right values.
#ifndef NDR_REGISTRAR_PATH_HINTS_H_
#define NDR_REGISTRAR_PATH_HINTS_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace ndr::registrar {

// Where kubelet keeps its plugin registry and driver sockets, by distribution: the default
// (/var/lib/kubelet) and common non-default kubelet roots.
inline constexpr const char* kCommonKubeletRoots[] = {
    "/var/lib/kubelet",                           // kubeadm, kind, k3s, most distributions
    "/var/lib/k0s/kubelet",                       // k0s
    "/var/snap/microk8s/common/var/lib/kubelet",  // MicroK8s
};

// The warning when kubelet has not called GetInfo on the registration socket at
// `registration_dir` within `waited`.
std::string UnwatchedRegistryHint(const std::string& registration_dir, absl::Duration waited);

// The socket path kubelet could not dial, when `refusal` (NotifyRegistrationStatus's error) says
// so: gRPC-Go's "dial unix PATH: CAUSE" inside kubelet's "RegisterPlugin error -- plugin
// registration failed with err: ..." (csi_plugin.go RegisterPlugin's NodeGetInfo).
struct UnreachableDriver {
  std::string path;   // what kubelet dialled
  std::string cause;  // e.g. "connect: no such file or directory"
};
std::optional<UnreachableDriver> KubeletCouldNotDial(absl::string_view refusal);

// The warning for that: `endpoint` is --kubelet-registration-path, `csi_address` the driver
// socket as the registrar reaches it, `driver` the driver's name.
std::string UnreachableDriverHint(const UnreachableDriver& unreachable, const std::string& endpoint,
                                  const std::string& csi_address, const std::string& driver);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_PATH_HINTS_H_

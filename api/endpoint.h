// Unix-socket endpoints as CSI drivers, kubelet and the registrar write them.
//
// A CSI endpoint is given either as a plain path ("/csi/csi.sock") or as a URL
// ("unix:///csi/csi.sock", or gRPC's shorter "unix:/csi/csi.sock"); the node-driver-registrar
// and the CSI sidecars accept all three. Whatever
// the spelling, the path must fit into sockaddr_un.sun_path, which holds 107 bytes plus the
// terminating NUL on Linux. These functions are pure and thread-safe.
#ifndef NDR_API_ENDPOINT_H_
#define NDR_API_ENDPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ndr {

// Longest unix socket path Linux accepts, in bytes (sizeof(sun_path) - 1).
inline constexpr size_t kMaxUnixSocketPathLength = 107;

// Returns the filesystem path of `endpoint`, which is a path or a "unix://" or "unix:" URL.
// Fails with InvalidArgument for an empty endpoint, another URL scheme, a relative path, or a
// path longer than kMaxUnixSocketPathLength. `what` names the endpoint in the error, e.g. "--csi-address".
absl::StatusOr<std::string> UnixSocketPath(absl::string_view endpoint, absl::string_view what);

// Checks that `path` fits into sun_path; the error names `what` and both lengths.
absl::Status CheckSocketPathLength(absl::string_view path, absl::string_view what);

// The gRPC target for a unix socket path: "unix:" + path.
std::string GrpcUnixTarget(absl::string_view path);

// Whether a process accepts connections on the unix socket at `path`. A stale socket, left behind
// by a process that was killed, refuses them.
bool UnixSocketAnswers(absl::string_view path);

}  // namespace ndr

#endif  // NDR_API_ENDPOINT_H_

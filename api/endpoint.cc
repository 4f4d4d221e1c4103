#include "api/endpoint.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ndr {

absl::Status CheckSocketPathLength(absl::string_view path, absl::string_view what) {
  if (path.size() > kMaxUnixSocketPathLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": socket path \"", path, "\" is ", path.size(),
        " bytes long, but a unix socket path may have at most ", kMaxUnixSocketPathLength,
        " bytes; use a shorter directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UnixSocketPath(absl::string_view endpoint, absl::string_view what) {
  if (endpoint.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": endpoint is empty; give a socket path or a unix:// URL"));
  }
  absl::string_view path = endpoint;
  if (absl::ConsumePrefix(&path, "unix://")) {
    // "unix://" followed by an absolute path, as in unix:///csi/csi.sock.
  } else if (absl::ConsumePrefix(&path, "unix:")) {
    // gRPC's other spelling, "unix:" and a path (doc/naming.md in grpc/grpc), as in the
    // aws-ebs-csi-driver's Windows manifest's unix:/csi/csi.sock. The Go registrar passes it to
    // grpc-go's unix resolver (csi-lib-utils connection.go, connect), which accepts it; only an
    // absolute path is accepted here, as below.
  } else if (absl::StrContains(endpoint, "://")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": endpoint \"", endpoint,
                     "\" has an unsupported scheme; only unix:// URLs and plain paths are allowed"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": endpoint \"", endpoint, "\" is not an absolute socket path"));
  }
  if (absl::Status s = CheckSocketPathLength(path, what); !s.ok()) return s;
  return std::string(path);
}

std::string GrpcUnixTarget(absl::string_view path) { return absl::StrCat("unix:", path); }

bool UnixSocketAnswers(absl::string_view path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  const bool answers = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return answers;
}

}  // namespace ndr

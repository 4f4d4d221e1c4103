#include "kubeletclient/util/grpc_status.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/go_errno.h"
#include "absl/time/clock.h"

namespace ndr::kubelet {

std::string GoCodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {
      "OK",          "Canceled",          "Unknown",          "InvalidArgument",
      "DeadlineExceeded", "NotFound",     "AlreadyExists",    "PermissionDenied",
      "ResourceExhausted", "FailedPrecondition", "Aborted",   "OutOfRange",
      "Unimplemented", "Internal",        "Unavailable",      "DataLoss",
      "Unauthenticated"};
  const int index = static_cast<int>(code);
  if (index >= 0 && index < static_cast<int>(std::size(kNames))) return kNames[index];
  return absl::StrCat("Code(", index, ")");
}

std::string GoRpcError(const grpc::Status& status) {
  return absl::StrCat("rpc error: code = ", GoCodeName(status.error_code()),
                      " desc = ", status.error_message());
}

absl::Status FromGrpc(const grpc::Status& status, const std::string& context) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(context, ": ", GoRpcError(status)));
}

std::optional<std::string> GoDialError(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return std::nullopt;  // refused before dialling
  path.copy(address.sun_path, path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  const int result = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int err = errno;
  close(fd);
  if (result == 0) return std::nullopt;
  return absl::StrCat("connection error: desc = \"transport: Error while dialing dial unix ", path,
                      ": connect: ", GoErrnoText(err), "\"");
}

std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

}  // namespace ndr::kubelet

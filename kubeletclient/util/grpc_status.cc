#include "kubeletclient/util/grpc_status.h"

#include "absl/strings/str_cat.h"
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

std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

}  // namespace ndr::kubelet

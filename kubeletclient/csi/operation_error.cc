#include "kubeletclient/csi/operation_error.h"

#include "absl/strings/str_cat.h"
#include "kubeletclient/objects/object_validation.h"

namespace ndr::kubelet {

absl::Status OperationFailed(const std::string& operation, const std::string& spec_name,
                             const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(operation, " failed for volume ",
                                                  GoQuote(spec_name), " : ", status.message()));
}

bool IsFinalError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return false;
    default:
      return true;
  }
}

}  // namespace ndr::kubelet

// The CSI spec's rule for driver names (GetPluginInfoResponse.name).
//
// A name is at most 63 characters, begins and ends with an ASCII letter or digit, and has only
// letters, digits, dashes and dots between. The registrar checks a driver's answer against this
// rule before the name becomes part of a socket path, so a name such as "../../etc/x" can never
// leave the registration directory. Pure and thread-safe.
#ifndef NDR_API_CSI_NAME_H_
#define NDR_API_CSI_NAME_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ndr {

inline constexpr size_t kMaxCsiDriverNameLength = 63;

// OK if `name` is a valid CSI driver name, otherwise InvalidArgument saying which rule it broke.
absl::Status ValidateCsiDriverName(absl::string_view name);

}  // namespace ndr

#endif  // NDR_API_CSI_NAME_H_

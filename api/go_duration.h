// Durations on command lines, in Go's syntax ("1s", "500ms", "1m30s"), as the Go sidecars and
// kubelet write them. Pure and thread-safe.
#ifndef NDR_API_GO_DURATION_H_
#define NDR_API_GO_DURATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ndr {

// Parses a non-negative, finite Go duration; `flag` (without dashes) names the flag in the error.
absl::StatusOr<absl::Duration> ParseGoDuration(const std::string& text, const std::string& flag);

// `d` as Go's Duration.String() prints it: "0s", "500ms", "1m30s", "1.5µs".
std::string FormatGoDuration(absl::Duration d);

}  // namespace ndr

#endif  // NDR_API_GO_DURATION_H_

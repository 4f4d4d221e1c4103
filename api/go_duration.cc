#include "api/go_duration.h"

#include "absl/strings/str_cat.h"

namespace ndr {

absl::StatusOr<absl::Duration> ParseGoDuration(const std::string& text, const std::string& flag) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": \"", text, "\" is not a duration such as 1s, 500ms or 1m30s"));
  }
  return d;
}

}  // namespace ndr

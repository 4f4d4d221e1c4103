#include "api/go_duration.h"

#include "absl/strings/match.h"
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

std::string FormatGoDuration(absl::Duration d) {
  if (d == absl::ZeroDuration()) return "0s";
  std::string text = absl::FormatDuration(d);
  // absl writes microseconds "us", Go "µs".
  if (absl::EndsWith(text, "us")) text = text.substr(0, text.size() - 2) + "\xC2\xB5s";
  return text;
}

}  // namespace ndr

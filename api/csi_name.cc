#include "api/csi_name.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"

namespace ndr {
namespace {

// Quotes a name for an error message; a hostile name may be long or hold control bytes.
std::string Quote(absl::string_view name) {
  constexpr size_t kShown = 80;
  std::string shown = absl::StrCat("\"", absl::CHexEscape(name.substr(0, kShown)), "\"");
  if (name.size() > kShown) absl::StrAppend(&shown, "...");
  return shown;
}

}  // namespace

absl::Status ValidateCsiDriverName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("CSI driver name is empty");
  }
  if (name.size() > kMaxCsiDriverNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CSI driver name ", Quote(name), " is ", name.size(), " characters long; at most ",
        kMaxCsiDriverNameLength, " are allowed"));
  }
  if (!absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CSI driver name ", Quote(name), " must begin and end with a letter or digit"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.') {
      return absl::InvalidArgumentError(absl::StrCat(
          "CSI driver name ", Quote(name),
          " may contain only letters, digits, dashes and dots; found ",
          "\"", absl::CHexEscape(absl::string_view(&c, 1)), "\""));
    }
  }
  return absl::OkStatus();
}

}  // namespace ndr

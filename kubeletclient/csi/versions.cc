#include "kubeletclient/csi/versions.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ndr::kubelet {
namespace {

// kubelet prefixes its CSI plugin's messages with the plugin's name.
constexpr char kLogPrefix[] = "kubernetes.io/csi: ";

std::string GoQuote(const std::string& s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

}  // namespace

std::string GoQuoteList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(GoQuote(item));
  return absl::StrCat("[", absl::StrJoin(quoted, " "), "]");
}

absl::StatusOr<Version> Version::ParseGeneric(const std::string& text) {
  // ^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)*$
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(text);
  absl::ConsumePrefix(&rest, "v");
  size_t end = 0;
  while (end < rest.size() && (absl::ascii_isdigit(rest[end]) || rest[end] == '.')) {
    // A dot must be followed by a digit to belong to the numbers.
    if (rest[end] == '.' && (end + 1 >= rest.size() || !absl::ascii_isdigit(rest[end + 1]))) break;
    ++end;
  }
  if (end == 0 || !absl::ascii_isdigit(rest[0])) {
    return absl::InvalidArgumentError(absl::StrCat("could not parse ", GoQuote(text), " as version"));
  }
  std::vector<std::string> parts = absl::StrSplit(rest.substr(0, end), '.');
  if (parts.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("illegal version string ", GoQuote(text)));
  }
  Version version;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i == 0 && parts[i].size() > 1 && parts[i][0] == '0') {
      return absl::InvalidArgumentError(absl::StrCat("illegal zero-prefixed version component ",
                                                     GoQuote(parts[i]), " in ", GoQuote(text)));
    }
    unsigned number = 0;
    if (!absl::SimpleAtoi(parts[i], &number)) {
      return absl::InvalidArgumentError(absl::StrCat("illegal non-numeric version component ",
                                                     GoQuote(parts[i]), " in ", GoQuote(text)));
    }
    version.components_.push_back(number);
  }
  return version;
}

bool Version::LessThan(const Version& other) const {
  const size_t n = std::max(components_.size(), other.components_.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned a = i < components_.size() ? components_[i] : 0;
    unsigned b = i < other.components_.size() ? other.components_[i] : 0;
    if (a != b) return a < b;
  }
  return false;
}

std::string Version::String() const { return absl::StrJoin(components_, "."); }

absl::StatusOr<Version> HighestSupportedVersion(const std::vector<std::string>& versions,
                                                VersionTexts texts) {
  // apimachinery pkg/util/version HighestSupportedVersion, v0.26.15 and v0.29.6.
  const bool short_texts = texts == VersionTexts::kV129;
  if (versions.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLogPrefix, "CSI driver reporting empty array for supported versions"));
  }
  std::optional<Version> highest;
  std::string last_error = "<nil>";
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    absl::StatusOr<Version> version = Version::ParseGeneric(*it);
    if (!version.ok()) {
      last_error = std::string(version.status().message());
      continue;
    }
    if (version->Major() > 1) continue;  // CSI 2.x need not be compatible with 1.x.
    if (!highest.has_value() || highest->LessThan(*version)) highest = *version;
  }
  if (!highest.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("could not find a highest supported version from versions (",
                     "[", absl::StrJoin(versions, " "), "]) reported",
                     short_texts ? "" : " by this driver", ": ", last_error));
  }
  if (highest->Major() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("highest supported version reported ",
                                                   short_texts ? "" : "by driver ", "is ",
                                                   highest->String(), ", must be v1.x"));
  }
  return *highest;
}

absl::StatusOr<Version> ValidateVersions(const std::string& caller, const std::string& plugin_name,
                                         const std::vector<std::string>& versions,
                                         const Version* existing, VersionTexts texts) {
  if (versions.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLogPrefix, caller, " for CSI driver ", GoQuote(plugin_name),
                     " failed. Plugin returned an empty list for supported versions"));
  }
  absl::StatusOr<Version> highest = HighestSupportedVersion(versions, texts);
  if (!highest.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kLogPrefix, caller, " for CSI driver ", GoQuote(plugin_name),
        " failed. None of the versions specified ", GoQuoteList(versions),
        " are supported. err=", highest.status().message()));
  }
  if (existing != nullptr && !existing->LessThan(*highest)) {
    return absl::AlreadyExistsError(absl::StrCat(
        kLogPrefix, caller, " for CSI driver ", GoQuote(plugin_name),
        " failed. Another driver with the same name is already registered with a higher "
        "supported version: ",
        GoQuote(existing->String())));
  }
  return *highest;
}

}  // namespace ndr::kubelet

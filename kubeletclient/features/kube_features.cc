#include "kubeletclient/features/kube_features.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ndr::kubelet {
namespace {

// Each gate's name and where it lives in FeatureGates.
const std::vector<std::pair<std::string, bool FeatureGates::*>>& Gates() {
  static const auto* gates = new std::vector<std::pair<std::string, bool FeatureGates::*>>{
      {"ReadWriteOncePod", &FeatureGates::read_write_once_pod},
      {"SELinuxMountReadWriteOncePod", &FeatureGates::selinux_mount_read_write_once_pod},
      {"CSIVolumeHealth", &FeatureGates::csi_volume_health},
      {"CSINodeExpandSecret", &FeatureGates::csi_node_expand_secret},
      {"SELinuxMount", &FeatureGates::selinux_mount},
      {"SELinuxChangePolicy", &FeatureGates::selinux_change_policy},
      {"RecoverVolumeExpansionFailure", &FeatureGates::recover_volume_expansion_failure},
      {"MutableCSINodeAllocatableCount", &FeatureGates::mutable_csi_node_allocatable_count},
  };
  return *gates;
}

// Go's strconv.ParseBool.
bool ParseGoBool(absl::string_view text, bool* value) {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == t) return *value = true, true;
  }
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == f) return *value = false, true;
  }
  return false;
}

}  // namespace

std::vector<std::string> KnownFeatureGates() {
  std::vector<std::string> names;
  for (const auto& [name, field] : Gates()) names.push_back(name);
  return names;
}

absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateItems(
    const std::string& value) {
  // featuregate.Set: every item is parsed before any is applied.
  std::vector<std::pair<std::string, bool>> settings;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (item.empty()) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(item, absl::MaxSplits('=', 1));
    const std::string key(absl::StripAsciiWhitespace(parts[0]));
    if (parts.size() != 2) return absl::InvalidArgumentError("missing bool value for " + key);
    const std::string text(absl::StripAsciiWhitespace(parts[1]));
    bool on;
    if (!ParseGoBool(text, &on)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid value of ", key, "=", text,
                                                     ", err: strconv.ParseBool: parsing \"", text,
                                                     "\": invalid syntax"));
    }
    settings.emplace_back(key, on);
  }
  return settings;
}

absl::StatusOr<FeatureGates> ApplyFeatureGateItems(
    const std::vector<std::pair<std::string, bool>>& items, FeatureGates gates) {
  for (const auto& [key, on] : items) {
    bool known = false;
    for (const auto& [name, field] : Gates()) {
      if (name == key) {
        gates.*field = on;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unrecognized feature gate: ", key, " (kubeletclient knows ",
                       absl::StrJoin(KnownFeatureGates(), ", "), ")"));
    }
  }
  return gates;
}

absl::StatusOr<FeatureGates> ParseFeatureGates(const std::string& value, FeatureGates gates) {
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> items = ParseFeatureGateItems(value);
  if (!items.ok()) return items.status();
  return ApplyFeatureGateItems(*items, gates);
}

std::string FeatureGatesString(const FeatureGates& gates) {
  std::vector<std::string> items;
  for (const auto& [name, field] : Gates()) {
    items.push_back(absl::StrCat(name, "=", gates.*field ? "true" : "false"));
  }
  return absl::StrJoin(items, ",");
}

}  // namespace ndr::kubelet

// Kubelet's rule for the CSI versions a plugin announces in PluginInfo.supported_versions
// (pkg/volume/csi/csi_plugin.go: highestSupportedVersion, validateVersions), with its texts.
//
// A version is "generic": an optional "v", two or more dot-separated numbers (the first without
// a leading zero), then anything (a suffix such as "-rc1" is ignored). Versions whose major is
// above 1 are skipped; the highest left must have major 1. Pure and thread-safe.
#ifndef NDR_KUBELETCLIENT_CSI_VERSIONS_H_
#define NDR_KUBELETCLIENT_CSI_VERSIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

class Version {
 public:
  // Parses like k8s.io/apimachinery's version.ParseGeneric; errors carry its texts.
  static absl::StatusOr<Version> ParseGeneric(const std::string& text);

  unsigned Major() const { return components_[0]; }
  // Component-wise comparison; missing components count as 0.
  bool LessThan(const Version& other) const;
  // The numeric components joined by dots, as Go's Version.String() prints a generic version.
  std::string String() const;

 private:
  std::vector<unsigned> components_;
};

// Which of apimachinery's texts kubelet refuses unusable versions with: "... reported by this
// driver: ..." / "... reported by driver is ..." (v1.26 to v1.28), or "... reported: ..." /
// "... reported is ..." (from v1.29: ReleaseBehaviour::kShortVersionRefusalTexts).
enum class VersionTexts { kV126, kV129 };

// kubelet's highestSupportedVersion: the error texts are kubelet's at `texts`.
absl::StatusOr<Version> HighestSupportedVersion(const std::vector<std::string>& versions,
                                                VersionTexts texts = VersionTexts::kV126);

// kubelet's validateVersions for `caller` ("ValidatePlugin" or "RegisterPlugin"). `existing` is the
// highest version of an already registered driver with the same name, if any: the new one must
// be strictly higher.
absl::StatusOr<Version> ValidateVersions(const std::string& caller, const std::string& plugin_name,
                                         const std::vector<std::string>& versions,
                                         const Version* existing,
                                         VersionTexts texts = VersionTexts::kV126);

// Go's %q of a []string: ["1.0.0" "2.0.0"].
std::string GoQuoteList(const std::vector<std::string>& items);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VERSIONS_H_

// Fuzzes the checks that untrusted names and versions go through: CSI driver names (from a
// driver's GetPluginInfo), kubelet's version rule (from a plugin's GetInfo), unix endpoints and
// registration socket paths.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "api/csi_name.h"
#include "api/endpoint.h"
#include "kubeletclient/csi/versions.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  // A name that passes may safely become part of a path: nothing that could leave a directory.
  if (ndr::ValidateCsiDriverName(input).ok()) {
    if (input.find('/') != std::string::npos || input.find('\0') != std::string::npos ||
        input.empty() || input.size() > ndr::kMaxCsiDriverNameLength || input[0] == '.') {
      abort();
    }
  }
  absl::StatusOr<std::string> path = ndr::UnixSocketPath(input, "fuzz");
  if (path.ok() && (path->empty() || (*path)[0] != '/' ||
                    path->size() > ndr::kMaxUnixSocketPathLength)) {
    abort();
  }
  (void)ndr::kubelet::Version::ParseGeneric(input);
  const std::vector<std::string> versions = absl::StrSplit(input, ',');
  absl::StatusOr<ndr::kubelet::Version> highest = ndr::kubelet::HighestSupportedVersion(versions);
  if (highest.ok() && highest->Major() != 1) abort();  // kubelet's rule: the highest is 1.x
  (void)ndr::kubelet::ValidateVersions("ValidatePlugin", input, versions,
                                       highest.ok() ? &*highest : nullptr);
  return 0;
}

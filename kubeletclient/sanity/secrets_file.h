// A secrets file in csi-sanity's format (its --csi.secrets): a YAML map from a CSI call's name
// and "Secret" (CreateVolumeSecret, NodeStageVolumeSecret, ...) to the secrets that call
// carries, so that a driver author's existing file serves both judges. csi-sanity ignores keys it
// does not know; here a key that is none of csi-sanity's is an error (a misspelt key would
// otherwise send no secret and fail the driver for nothing), and the keys of calls the judge
// never makes (snapshots, ValidateVolumeCapabilities, ControllerModifyVolume) are reported as not
// used. Pure functions; thread-safe.
#ifndef NDR_KUBELETCLIENT_SANITY_SECRETS_FILE_H_
#define NDR_KUBELETCLIENT_SANITY_SECRETS_FILE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

struct SecretsFile {
  // By csi-sanity's key, e.g. "CreateVolumeSecret"; only the keys present.
  std::map<std::string, std::map<std::string, std::string>> secrets;
  // Keys present that name calls the judge does not make.
  std::vector<std::string> unused;

  // The secrets for `key`, or none.
  const std::map<std::string, std::string>* Find(const std::string& key) const {
    auto it = secrets.find(key);
    return it == secrets.end() ? nullptr : &it->second;
  }
};

// The file at `path` (at most 1 MiB), or an error naming the file and what is wrong.
absl::StatusOr<SecretsFile> ReadSecretsFile(const std::string& path);
// The same from its text.
absl::StatusOr<SecretsFile> ParseSecretsFile(const std::string& text, const std::string& path);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_SANITY_SECRETS_FILE_H_

#include "kubeletclient/sanity/secrets_file.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/objects/k8s_objects.h"  // FirstInvalidUtf8
#include "kubeletclient/util/files.h"
#include "yaml-cpp/yaml.h"

namespace ndr::kubelet {
namespace {

// csi-test v5.4 pkg/sanity/sanity.go CSISecrets: its YAML keys; the first six are the calls
// `kubeletclient sanity` makes.
constexpr const char* kUsed[] = {"CreateVolumeSecret",
                                 "DeleteVolumeSecret",
                                 "ControllerPublishVolumeSecret",
                                 "ControllerUnpublishVolumeSecret",
                                 "NodeStageVolumeSecret",
                                 "NodePublishVolumeSecret"};
constexpr const char* kNotUsed[] = {"ControllerValidateVolumeCapabilitiesSecret",
                                    "CreateSnapshotSecret",
                                    "DeleteSnapshotSecret",
                                    "ControllerExpandVolumeSecret",
                                    "ControllerModifyVolumeSecret",
                                    "ListSnapshotsSecret",
                                    "GetSnapshotSecret"};

constexpr size_t kMaxBytes = 1 << 20;

template <size_t N>
bool Among(const std::string& key, const char* const (&keys)[N]) {
  return std::find_if(std::begin(keys), std::end(keys),
                      [&](const char* k) { return key == k; }) != std::end(keys);
}

}  // namespace

absl::StatusOr<SecretsFile> ReadSecretsFile(const std::string& path) {
  std::string text;
  if (absl::Status s = ReadFileUpTo(path, kMaxBytes, &text); !s.ok()) return s;
  return ParseSecretsFile(text, path);
}

absl::StatusOr<SecretsFile> ParseSecretsFile(const std::string& text, const std::string& path) {
  if (FirstInvalidUtf8(text) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not UTF-8"));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": ", e.msg));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  SecretsFile file;
  if (root.IsNull()) return file;  // an empty file: no secrets, as csi-sanity reads it
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": must be a map from a call's secret key (e.g. CreateVolumeSecret) to its secrets, "
              "as csi-sanity's --csi.secrets file"));
  }
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a key is not a string"));
    }
    const std::string key = entry.first.Scalar();
    const bool used = Among(key, kUsed);
    if (!used && !Among(key, kNotUsed)) {
      std::vector<std::string> known(std::begin(kUsed), std::end(kUsed));
      known.insert(known.end(), std::begin(kNotUsed), std::end(kNotUsed));
      return absl::InvalidArgumentError(absl::StrCat(path, ": unknown key \"", key,
                                                     "\"; csi-sanity's keys are ",
                                                     absl::StrJoin(known, ", ")));
    }
    std::map<std::string, std::string> secrets;
    const YAML::Node& value = entry.second;
    if (!value.IsNull()) {
      if (!value.IsMap()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", key, ": must be a map of secret names to values"));
      }
      for (const auto& secret : value) {
        if (!secret.first.IsScalar() || !(secret.second.IsScalar() || secret.second.IsNull())) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": ", key, ": each secret must be a string key and value"));
        }
        const std::string name = secret.first.Scalar();
        if (name.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": ", key, ": an empty key"));
        }
        if (!secrets.emplace(name, secret.second.IsNull() ? "" : secret.second.Scalar()).second) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": ", key, ": \"", name, "\" is given twice"));
        }
      }
    }
    if (file.secrets.count(key) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", key, "\" is given twice"));
    }
    file.secrets[key] = std::move(secrets);
    if (!used) file.unused.push_back(key);
  }
  return file;
}

}  // namespace ndr::kubelet

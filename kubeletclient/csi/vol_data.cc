#include "kubeletclient/csi/vol_data.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <tuple>

#include "absl/strings/str_cat.h"
#include "api/go_quote.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/files.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

// vol_data.json is a few hundred bytes; anything much bigger was not written by kubelet.
constexpr size_t kMaxVolDataBytes = 64 * 1024;

}  // namespace

std::string EncodeVolData(const VolData& data) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : data) {  // std::map: byte order, as Go sorts map keys
    if (!first) out.push_back(',');
    first = false;
    AppendGoJsonString(key, GoJsonStyle::kEncodingJson, &out);
    out.push_back(':');
    AppendGoJsonString(value, GoJsonStyle::kEncodingJson, &out);
  }
  out += "}\n";
  return out;
}

absl::Status SaveVolData(const std::string& path, const VolData& data) {
  if (absl::Status s = WriteFileAtomically(path, EncodeVolData(data)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("kubernetes.io/csi: failed to save volume info "
                                               "data: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status SaveVolData(const std::string& root, const std::string& path,
                         const VolData& data) {
  if (absl::Status s = WriteFileAtomicallyUnder(root, path, EncodeVolData(data)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("kubernetes.io/csi: failed to save volume info "
                                               "data: ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<VolData> LoadVolData(const std::string& path) {
  std::string text;
  if (absl::Status s = ReadFileUpTo(path, kMaxVolDataBytes, &text); !s.ok()) return s;
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": malformed: not a JSON object"));
  }
  VolData data;
  for (const auto& [key, value] : json.items()) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": malformed: ", GoQuote(key), " is not a string"));
    }
    data[key] = value.get<std::string>();
  }
  return data;
}

absl::StatusOr<VolumeRef> LoadVolumeRef(const std::string& path) {
  absl::StatusOr<VolData> data = LoadVolData(path);
  if (!data.ok()) return data.status();
  VolumeRef ref;
  ref.driver = (*data)[kVolDataDriverName];
  ref.handle = (*data)[kVolDataVolumeHandle];
  FieldErrors errors;
  ValidateCsiDriverName(ref.driver, kVolDataDriverName, &errors);
  ValidateVolumeHandle(ref.handle, kVolDataVolumeHandle, &errors);
  if (absl::Status s = errors.ToStatus(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  ref.data = *std::move(data);
  return ref;
}

absl::Status RemoveMountDir(const std::string& mount_path) {
  const std::string dir = mount_path.substr(0, mount_path.rfind('/'));
  for (const auto& [path, what, remove] :
       {std::tuple{mount_path, "failed to remove dir", &rmdir},
        std::tuple{dir + "/vol_data.json", "failed to delete volume data file", &unlink},
        std::tuple{dir, "failed to delete volume path", &rmdir}}) {
    if (remove(path.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(absl::StrCat("kubernetes.io/csi: ", what, " [", path, "]: ",
                                              strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

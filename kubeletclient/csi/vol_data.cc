#include "kubeletclient/csi/vol_data.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/files.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

// vol_data.json is a few hundred bytes; anything much bigger was not written by kubelet.
constexpr size_t kMaxVolDataBytes = 64 * 1024;

// Go's encoding/json string encoding with HTML escaping (encode.go, encodeState.string).
void AppendGoJsonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '"': *out += "\\\""; break;
        case '\\': *out += "\\\\"; break;
        case '\n': *out += "\\n"; break;
        case '\r': *out += "\\r"; break;
        case '\t': *out += "\\t"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            absl::StrAppendFormat(out, "\\u%04x", c);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: copied when it is valid UTF-8 (U+2028 and U+2029 escaped), else
    // each bad byte becomes \ufffd, as Go does.
    size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    bool valid = length > 0 && c <= 0xF4 && i + length <= s.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (valid && length == 3) {
      const unsigned char c1 = s[i + 1];
      valid = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F);
    } else if (valid && length == 4) {
      const unsigned char c1 = s[i + 1];
      valid = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 > 0x8F);
    }
    if (!valid) {
      *out += "\\ufffd";
      ++i;
      continue;
    }
    const absl::string_view rune = s.substr(i, length);
    if (rune == "\xE2\x80\xA8") {
      *out += "\\u2028";
    } else if (rune == "\xE2\x80\xA9") {
      *out += "\\u2029";
    } else {
      out->append(rune.data(), rune.size());
    }
    i += length;
  }
  out->push_back('"');
}

}  // namespace

std::string EncodeVolData(const VolData& data) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : data) {  // std::map: byte order, as Go sorts map keys
    if (!first) out.push_back(',');
    first = false;
    AppendGoJsonString(key, &out);
    out.push_back(':');
    AppendGoJsonString(value, &out);
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

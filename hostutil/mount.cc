#include "hostutil/mount.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ndr::hostutil {
namespace {

absl::Status ErrnoError(absl::string_view what, int err) {
  return absl::Status(err == EPERM || err == EACCES ? absl::StatusCode::kPermissionDenied
                                                    : absl::StatusCode::kInternal,
                      absl::StrCat(what, ": ", strerror(err)));
}

}  // namespace

std::string UnescapeMountinfo(absl::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        const char c = field[i + k];
        if (c < '0' || c > '7') octal = false;
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

bool CanChangeHost(std::string* reason) {
  if (geteuid() != 0) {
    *reason = "not running as root";
    return false;
  }
  // The initial user namespace maps every ID to itself: "0 0 4294967295".
  std::ifstream in("/proc/self/uid_map");
  std::string inside, outside, count;
  in >> inside >> outside >> count;
  if (inside != "0" || outside != "0" || count != "4294967295") {
    *reason = "running as root in a user namespace, not the host's (a sandbox)";
    return false;
  }
  // Root whose capabilities were dropped (a container's securityContext) cannot mount:
  // CAP_SYS_ADMIN (bit 21) must be in the effective set.
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t effective = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      effective = std::stoull(line.substr(7), nullptr, 16);
      break;
    }
  }
  constexpr int kCapSysAdmin = 21;
  if ((effective & (uint64_t{1} << kCapSysAdmin)) == 0) {
    *reason = "running as root without CAP_SYS_ADMIN";
    return false;
  }
  return true;
}

absl::Status BindMount(const std::string& source, const std::string& target) {
  if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return ErrnoError(absl::StrCat("mount --bind ", source, " ", target), errno);
  }
  return absl::OkStatus();
}

absl::Status Unmount(const std::string& target) {
  if (umount2(target.c_str(), 0) != 0) {
    return ErrnoError(absl::StrCat("umount ", target), errno);
  }
  return absl::OkStatus();
}

bool IsMountPoint(const std::string& path) {
  char resolved[PATH_MAX];
  const std::string real = realpath(path.c_str(), resolved) != nullptr ? resolved : path;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ...
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4 && UnescapeMountinfo(fields[4]) == real) return true;
  }
  return false;
}

absl::StatusOr<bool> IsOnSharedMount(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return ErrnoError(absl::StrCat("realpath ", path), errno);
  }
  const std::string real = resolved;
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return ErrnoError("open /proc/self/mountinfo", errno);
  std::string line, holder;
  bool shared = false, found = false;
  while (std::getline(in, line)) {
    // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL-FIELDS...] - TYPE SOURCE ...
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 7) continue;
    const std::string point = UnescapeMountinfo(fields[4]);
    const bool over = point == "/" || real == point || absl::StartsWith(real, point + "/");
    // The longest mount point over the path holds it; of stacked ones, the last (the top).
    if (!over || (found && point.size() < holder.size())) continue;
    found = true;
    holder = point;
    shared = false;
    for (size_t i = 6; i < fields.size() && fields[i] != "-"; ++i) {
      if (absl::StartsWith(fields[i], "shared:")) shared = true;
    }
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no mount holds ", real));
  return shared;
}

absl::Status MakeRShared(const std::string& path, bool* made) {
  *made = false;
  absl::StatusOr<bool> shared = IsOnSharedMount(path);
  if (!shared.ok()) return shared.status();
  if (*shared) return absl::OkStatus();
  if (absl::Status s = BindMount(path, path); !s.ok()) return s;
  if (mount(nullptr, path.c_str(), nullptr, MS_SHARED | MS_REC, nullptr) != 0) {
    const int err = errno;
    umount2(path.c_str(), 0);
    return ErrnoError(absl::StrCat("mount --make-rshared ", path), err);
  }
  *made = true;
  return absl::OkStatus();
}

}  // namespace ndr::hostutil

#include "registrar/reg_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/csi_name.h"
#include "api/endpoint.h"
#include "logging/logging.h"

namespace ndr::registrar {

using ::ndr::logging::Err;
using ::ndr::logging::Kv;

absl::StatusOr<std::string> RegistrationSocketPath(const std::string& dir,
                                                   const std::string& driver_name) {
  if (absl::Status s = ValidateCsiDriverName(driver_name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the driver's GetPluginInfo answered an invalid name: ", s.message(),
        "; no registration socket was created (fix the driver's name)"));
  }
  std::string path = absl::StrCat(dir, "/", driver_name, "-reg.sock");
  if (absl::Status s = CheckSocketPathLength(path, "registration socket"); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (shorten --plugin-registration-path)"));
  }
  return path;
}

absl::StatusOr<std::string> RegistrationSocketPathAt(const std::string& primary, int index) {
  if (index == 0) return primary;
  constexpr absl::string_view kSuffix = "-reg.sock";
  if (index < 0 || index >= kRegistrationSocketNames || !absl::EndsWith(primary, kSuffix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("no registration socket name ", index, " for ", primary));
  }
  std::string path = absl::StrCat(primary.substr(0, primary.size() - kSuffix.size()), "-reg-",
                                  index, ".sock");
  if (absl::Status s = CheckSocketPathLength(path, "registration socket"); !s.ok()) return s;
  return path;
}

namespace {

// The registration directory is there but this process may not create its socket in it.
absl::Status MayNotCreateIn(const std::string& dir, int err) {
  if (err == EROFS) {
    return absl::PermissionDeniedError(absl::StrCat(
        "registration directory ", dir, " (--plugin-registration-path) is on a read-only "
        "mount, where the registration socket cannot be created; mount kubelet's "
        "plugins_registry directory there read-write"));
  }
  // Kubelet creates its plugins_registry directory as root's, mode 0750
  // (pkg/kubelet/kubelet.go setupDataDirs, v1.26.15 to v1.37.2): only root creates files in it,
  // and root needs no capability for that, being the owner.
  return absl::PermissionDeniedError(absl::StrCat(
      "registration directory ", dir, " (--plugin-registration-path): user ", geteuid(),
      " (group ", getegid(), ") may not create the registration socket there (", strerror(err),
      "); kubelet makes its plugins_registry directory root's with mode 0750, so run the "
      "registrar as root (securityContext runAsUser: 0, which needs no capability), or give "
      "this user write access to that directory on every node"));
}

}  // namespace

absl::Status CheckRegistrationDir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == EACCES) return MayNotCreateIn(dir, err);
    return absl::NotFoundError(absl::StrCat("registration directory ", dir, " (--plugin-registration-path): ",
                                            strerror(err),
                                            "; mount kubelet's plugins_registry directory there"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "registration directory ", dir, " (--plugin-registration-path) is not a directory"));
  }
  // The kernel's own verdict for this process (effective IDs and capabilities), before anything
  // else is started: creating the socket needs write and search permission on the directory.
  if (faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return MayNotCreateIn(dir, errno);
  }
  return absl::OkStatus();
}

PathState Inspect(const std::string& path, const std::optional<FileId>& ours) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return PathState::kMissing;
  if (!S_ISSOCK(st.st_mode)) return PathState::kNotASocket;
  if (ours.has_value() && *ours == FileId{st.st_dev, st.st_ino}) return PathState::kOurs;
  return PathState::kSocket;
}

absl::StatusOr<FileId> SocketId(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("stat ", path, ": ", strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a socket"));
  }
  return FileId{st.st_dev, st.st_ino};
}

void RemoveIfOurs(const std::string& path, const FileId& ours) {
  if (Inspect(path, ours) != PathState::kOurs) {
    NDR_LOG(INFO) << "Not removing " << path << ": it is no longer the socket this process created";
    return;
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    NDR_LOG(WARNING) << "remove " << path << ": " << strerror(errno);
    return;
  }
  NDR_LOG(INFO) << "Removed registration socket" << Kv("path", path);
}

}  // namespace ndr::registrar

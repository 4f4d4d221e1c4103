#include "registrar/reg_socket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

absl::Status CheckRegistrationDir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("registration directory ", dir, " (--plugin-registration-path): ",
                                            strerror(errno),
                                            "; mount kubelet's plugins_registry directory there"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "registration directory ", dir, " (--plugin-registration-path) is not a directory"));
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

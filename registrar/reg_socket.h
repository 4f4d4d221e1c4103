// Where the registration socket goes, and how to tell it apart from whatever else may be at
// that path.
//
// The socket is <plugin-registration-path>/<driver name>-reg.sock. The driver name comes from
// the driver, so it is checked against the CSI naming rules before it becomes part of a path:
// no name can point outside the directory. A file is identified by device and inode, so the
// registrar only ever removes a socket it created itself, even if another process has put its
// own socket at the same path in the meantime.
#ifndef NDR_REGISTRAR_REG_SOCKET_H_
#define NDR_REGISTRAR_REG_SOCKET_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ndr::registrar {

// Device and inode of a file.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId& other) const { return dev == other.dev && ino == other.ino; }
  bool operator!=(const FileId& other) const { return !(*this == other); }
};

// <dir>/<driver_name>-reg.sock, after checking the name against the CSI rules and the result
// against the unix socket path limit.
absl::StatusOr<std::string> RegistrationSocketPath(const std::string& dir,
                                                   const std::string& driver_name);

// How many names release 1.2.0 gave a driver's registration socket: the path above (index 0) and
// <dir>/<driver_name>-reg-<index>.sock for index 1 to 16, which it offered in turn after an
// outage. This registrar serves index 0 only, and removes a stale socket it finds under the
// others at start (registrar.h): kubelet holds a driver by its socket's path until that socket
// is deleted.
inline constexpr int kRegistrationSocketNames = 17;

// The registration socket's path under release 1.2.0's name `index` (0 to
// kRegistrationSocketNames - 1), from its path under index 0 (RegistrationSocketPath); an error if
// the socket path limit forbids it.
absl::StatusOr<std::string> RegistrationSocketPathAt(const std::string& primary, int index);

// OK if `dir` exists, is a directory and this process may create a socket in it; otherwise an
// error naming it and saying what to do.
absl::Status CheckRegistrationDir(const std::string& dir);

// What is at a path, as far as the registrar is concerned.
enum class PathState {
  kMissing,     // nothing
  kOurs,        // the socket with the given FileId
  kSocket,      // some other socket
  kNotASocket,  // a regular file, directory, symlink, ...
};
PathState Inspect(const std::string& path, const std::optional<FileId>& ours);

// The FileId of the socket at `path`.
absl::StatusOr<FileId> SocketId(const std::string& path);

// Removes `path` if it is still the socket `ours`; leaves anything else alone. Call it while
// the socket is still open: a bound socket keeps its inode, whereas the inode number of a closed
// and unlinked one may be given to the next file created.
void RemoveIfOurs(const std::string& path, const FileId& ours);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REG_SOCKET_H_

// Files beneath a directory opened once, for a program that runs as root over a tree others can
// write (a driver, or anyone who may write its root directory): every path is resolved by
// openat2(2) from that directory's file descriptor with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS,
// so that a symbolic link or a ".." put anywhere in the path makes the call fail instead of
// leading outside the directory, and what is done to the file is done through the descriptor
// that was opened, never by resolving the path again. Thread-safe.
#ifndef NDR_KUBELETCLIENT_UTIL_BENEATH_H_
#define NDR_KUBELETCLIENT_UTIL_BENEATH_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ndr::kubelet {

// An open file descriptor, closed when the object goes away.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  ~UniqueFd();
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// Opens `relative` (no leading "/") beneath the directory `dir_fd` with openat2(2),
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, and `flags` | O_NOFOLLOW |
// O_CLOEXEC. "" and "." open the directory itself. Errors name `relative` and why (ELOOP: a
// symbolic link on the way; EXDEV: the path leaves the directory).
absl::StatusOr<UniqueFd> OpenBeneath(int dir_fd, const std::string& relative, int flags,
                                     mode_t mode = 0);

// Opens the root directory `root` as given, O_PATH (a --root-dir that is itself a symbolic link is
// followed, as kubelet follows it), for the *Beneath functions.
absl::StatusOr<UniqueFd> OpenRoot(const std::string& root);

// Opens the absolute `path` with openat2(2) and RESOLVE_NO_SYMLINKS: refused if any component
// is a symbolic link.
absl::StatusOr<UniqueFd> OpenNoSymlinks(const std::string& path, int flags);

// The ID of the mount `fd`'s file is on (statx(2) STATX_MNT_ID): /proc/self/mountinfo's first
// field.
absl::StatusOr<uint64_t> MountIdOf(int fd);

// "/proc/self/fd/N": a name for `fd`'s file that the kernel resolves to the descriptor itself
// (umount2, mount), not by walking a path again.
std::string FdPath(int fd);

// mkdir -p beneath `dir_fd`: each component of `relative` made with `mode` (less the umask)
// unless it is a directory already; a symbolic link or a file on the way is an error naming the
// path. Returns the last directory, opened O_PATH.
absl::StatusOr<UniqueFd> MakeDirsBeneath(int dir_fd, const std::string& relative, mode_t mode);

// WriteFileAtomically (files.h) beneath `dir_fd`: the temporary file is created in the directory
// that `relative`'s parent names when opened beneath `dir_fd`, and renamed within it.
absl::Status WriteFileAtomicallyBeneath(int dir_fd, const std::string& relative,
                                        const std::string& contents);

// MakeDirs (files.h) for `path` inside the directory `root`, both clean absolute paths (as
// volume_paths.h makes them): `root` is opened as given (a --root-dir that is itself a symbolic
// link is followed, as kubelet follows it), each component below it made with mkdirat and opened
// beneath it without following a symbolic link. As MakeDirs, a last component that exists is fine
// whatever it is. An empty `root`: MakeDirs on `path`. Errors name the directory.
absl::Status MakeDirsUnder(const std::string& root, const std::string& path, mode_t mode);

// WriteFileAtomically (files.h) for `path` inside the directory `root`, as MakeDirsUnder: the
// directory it goes in is opened beneath `root` without following a symbolic link. An empty
// `root`: WriteFileAtomically on `path`.
absl::Status WriteFileAtomicallyUnder(const std::string& root, const std::string& path,
                                      const std::string& contents);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_BENEATH_H_

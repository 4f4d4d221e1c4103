#include "kubeletclient/util/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
namespace {

// Why openat2 refused, in words: the errno values RESOLVE_* give their own meaning.
std::string Why(int err) {
  if (err == ELOOP) return "a symbolic link on the way (refused: it could lead anywhere)";
  if (err == EXDEV) return "the path leads outside the directory (refused)";
  if (err == ENOSYS) return "openat2(2) is not supported by this kernel (Linux 5.6 or later)";
  return strerror(err);
}

int OpenAt2(int dir_fd, const char* path, int flags, mode_t mode, uint64_t resolve) {
  struct open_how how = {};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = resolve;
  for (;;) {
    const long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
    // EAGAIN: a rename elsewhere in the file system raced the lookup; RESOLVE_BENEATH asks again.
    if (fd < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return static_cast<int>(fd);
  }
}

// The components of `relative`, without empty ones and "."; false if one is "..".
bool Components(const std::string& relative, std::vector<std::string>* out) {
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") return false;
    out->emplace_back(part);
  }
  return true;
}

// `path` relative to `root` (both clean and absolute), or false if it is not inside it.
bool Inside(const std::string& root, const std::string& path, std::string* relative) {
  if (root == "/") {
    if (path.size() < 2 || path[0] != '/') return false;
    *relative = path.substr(1);
    return true;
  }
  if (!absl::StartsWith(path, root) || path.size() <= root.size() + 1 ||
      path[root.size()] != '/') {
    return false;
  }
  *relative = path.substr(root.size() + 1);
  return true;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

absl::StatusOr<UniqueFd> OpenBeneath(int dir_fd, const std::string& relative, int flags,
                                     mode_t mode) {
  const std::string path = relative.empty() ? "." : relative;
  constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(OpenAt2(dir_fd, path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode, kResolve));
  int err = errno;
  // O_PATH | O_NOFOLLOW opens a last component that is a symbolic link as the link, and
  // O_DIRECTORY then fails with ENOTDIR: either way it is the link that is refused.
  if (!fd.valid() && err == ENOTDIR) {
    UniqueFd what(OpenAt2(dir_fd, path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, kResolve));
    struct stat st;
    if (what.valid() && fstatat(what.get(), "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode)) {
      err = ELOOP;
    }
  } else if (fd.valid()) {
    struct stat st;
    if (fstatat(fd.get(), "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode)) {
      fd = UniqueFd();
      err = ELOOP;
    }
  }
  if (!fd.valid()) {
    return absl::Status(err == ENOENT ? absl::StatusCode::kNotFound
                                      : absl::StatusCode::kFailedPrecondition,
                        absl::StrCat("open ", path, ": ", Why(err)));
  }
  return fd;
}

absl::StatusOr<UniqueFd> OpenRoot(const std::string& root) {
  const int fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("open the root directory ", root, ": ",
                                            strerror(errno)));
  }
  return UniqueFd(fd);
}

absl::StatusOr<UniqueFd> OpenNoSymlinks(const std::string& path, int flags) {
  const int fd = OpenAt2(AT_FDCWD, path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0,
                         RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) {
    const int err = errno;
    return absl::Status(err == ENOENT ? absl::StatusCode::kNotFound
                                      : absl::StatusCode::kFailedPrecondition,
                        absl::StrCat("open ", path, ": ", Why(err)));
  }
  return UniqueFd(fd);
}

absl::StatusOr<uint64_t> MountIdOf(int fd) {
  struct statx stx = {};
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) {
    return absl::InternalError(absl::StrCat("statx ", FdPath(fd), ": ", strerror(errno)));
  }
  if ((stx.stx_mask & STATX_MNT_ID) == 0) {
    return absl::FailedPreconditionError(
        "statx gave no mount ID (STATX_MNT_ID needs Linux 5.8 or later)");
  }
  return static_cast<uint64_t>(stx.stx_mnt_id);
}

std::string FdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

absl::StatusOr<UniqueFd> MakeDirsBeneath(int dir_fd, const std::string& relative, mode_t mode) {
  std::vector<std::string> parts;
  if (!Components(relative, &parts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mkdir ", relative, ": \"..\" in the path (refused: give a path beneath)"));
  }
  absl::StatusOr<UniqueFd> dir = OpenBeneath(dir_fd, ".", O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  std::string made;
  for (const std::string& part : parts) {
    made = made.empty() ? part : absl::StrCat(made, "/", part);
    if (mkdirat(dir->get(), part.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("failed to create dir ", made, ": ",
                                              strerror(errno)));
    }
    absl::StatusOr<UniqueFd> next = OpenBeneath(dir->get(), part, O_PATH | O_DIRECTORY);
    if (!next.ok()) {
      return absl::Status(next.status().code(),
                          absl::StrCat("failed to create dir ", made, ": ",
                                       next.status().message()));
    }
    dir = std::move(next);
  }
  return dir;
}

absl::Status WriteFileAtomicallyBeneath(int dir_fd, const std::string& relative,
                                        const std::string& contents) {
  static std::atomic<int> counter{0};
  const size_t slash = relative.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : relative.substr(0, slash);
  const std::string base = slash == std::string::npos ? relative : relative.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") {
    return absl::InvalidArgumentError(absl::StrCat("write ", relative, ": not a file name"));
  }
  absl::StatusOr<UniqueFd> dir = OpenBeneath(dir_fd, parent, O_PATH | O_DIRECTORY);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(),
                        absl::StrCat("write ", relative, ": ", dir.status().message()));
  }
  const std::string temp = absl::StrCat(".", base, ".", getpid(), ".", counter++, ".tmp");
  const int fd = openat(dir->get(), temp.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("create ", parent, "/", temp, ": ", strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      unlinkat(dir->get(), temp.c_str(), 0);
      return absl::InternalError(absl::StrCat("write ", parent, "/", temp, ": ", strerror(err)));
    }
    written += n;
  }
  // renameat replaces whatever `base` is (a symbolic link too) and follows nothing.
  if (close(fd) != 0 || renameat(dir->get(), temp.c_str(), dir->get(), base.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir->get(), temp.c_str(), 0);
    return absl::InternalError(absl::StrCat("write ", relative, ": ", strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status MakeDirsUnder(const std::string& root, const std::string& path, mode_t mode) {
  if (root.empty()) return MakeDirs(path, mode);
  std::string relative;
  std::vector<std::string> parts;
  if (!Inside(root, path, &relative) || !Components(relative, &parts)) {
    return absl::InvalidArgumentError(absl::StrCat("failed to create dir ", path,
                                                   ": not inside the root directory ", root));
  }
  // The root directory itself is made as MakeDirs makes it (a --root-dir that does not exist
  // yet, a judge's root directory of a release): it is the caller's.
  if (access(root.c_str(), F_OK) != 0 && errno == ENOENT) {
    if (absl::Status s = MakeDirs(root, mode); !s.ok()) return s;
  }
  absl::StatusOr<UniqueFd> dir = OpenRoot(root);
  if (!dir.ok()) return dir.status();
  std::string made = root == "/" ? "" : root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::string next = absl::StrCat(made, "/", part);
    if (mkdirat(dir->get(), part.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("failed to create dir ", next, ": ",
                                              strerror(errno)));
    }
    if (i + 1 == parts.size()) break;
    absl::StatusOr<UniqueFd> opened = OpenBeneath(dir->get(), part, O_PATH | O_DIRECTORY);
    if (!opened.ok()) {
      return absl::Status(opened.status().code(), absl::StrCat("failed to create dir ", next,
                                                               "/", parts[i + 1], ": ",
                                                               opened.status().message()));
    }
    dir = std::move(opened);
    made = next;
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomicallyUnder(const std::string& root, const std::string& path,
                                      const std::string& contents) {
  if (root.empty()) return WriteFileAtomically(path, contents);
  std::string relative;
  std::vector<std::string> parts;
  if (!Inside(root, path, &relative) || !Components(relative, &parts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("write ", path, ": not inside the root directory ", root));
  }
  absl::StatusOr<UniqueFd> dir = OpenRoot(root);
  if (!dir.ok()) return dir.status();
  if (absl::Status s = WriteFileAtomicallyBeneath(dir->get(), relative, contents); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " (beneath ", root, ")"));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

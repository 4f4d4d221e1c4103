#include "kubeletclient/util/files.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"

namespace ndr::kubelet {

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  static std::atomic<int> counter{0};
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string temp = absl::StrCat(dir, "/.", base, ".", getpid(), ".", counter++, ".tmp");
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("create ", temp, ": ", strerror(errno)));
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      unlink(temp.c_str());
      return absl::InternalError(absl::StrCat("write ", temp, ": ", strerror(err)));
    }
    written += n;
  }
  if (close(fd) != 0 || rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("write ", path, ": ", strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("failed to create dir ", prefix, ": ",
                                              strerror(errno)));
    }
    if (at == std::string::npos) return absl::OkStatus();
  }
}

absl::Status ReadFileUpTo(const std::string& path, size_t max_bytes, std::string* contents) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InternalError(absl::StrCat(path, ": cannot be read: ", strerror(err)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  contents->clear();
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat(path, ": read: ", strerror(err)));
    }
    if (n == 0) break;
    if (contents->size() + n > max_bytes) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes: refused"));
    }
    contents->append(buffer, n);
  }
  close(fd);
  return absl::OkStatus();
}

absl::Status RemoveAll(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("lstat ", path, ": ", strerror(errno)));
  }
  // nftw's callback cannot carry state; the first failure is kept per thread.
  static thread_local int failure;
  static thread_local std::string* failed_path;
  std::string first_failure;
  failure = 0;
  failed_path = &first_failure;
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int type, struct FTW*) {
        const int rc = type == FTW_DP ? rmdir(p) : unlink(p);
        if (rc != 0 && errno != ENOENT && failure == 0) {
          failure = errno;
          *failed_path = p;
        }
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
  if (failure != 0) {
    return absl::InternalError(absl::StrCat("unlinkat ", first_failure, ": ", strerror(failure)));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

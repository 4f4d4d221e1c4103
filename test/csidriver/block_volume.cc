#include "test/csidriver/block_volume.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ndr::sample {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(err)));
}

bool IsPlainName(const std::string& id) {
  if (id.empty() || id[0] == 'x') return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ImageFileName(const std::string& volume_id) {
  if (volume_id.size() > kMaxBlockVolumeIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "volume_id is ", volume_id.size(), " bytes long; a block volume's ID names its disk "
        "image, and the CSI spec's limit for strings is ", kMaxBlockVolumeIdBytes, " bytes"));
  }
  if (IsPlainName(volume_id)) return absl::StrCat(volume_id, ".img");
  // Unpadded base64url is one-to-one and never holds '/'.
  return absl::StrCat("x", absl::WebSafeBase64Escape(volume_id), ".img");
}

absl::Status EnsureDataDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError("create data directory", dir, errno);
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return ErrnoError("stat data directory", dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("data directory ", dir, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status EnsureImage(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("disk image ", path, " is a symbolic link; refusing to follow it"));
    }
    return ErrnoError("create disk image", path, errno);
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("stat disk image", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("disk image ", path, " exists and is not a regular file"));
  }
  // ftruncate only grows the file here, with a hole: the image stays sparse.
  if (st.st_size < kImageSize && ftruncate(fd, kImageSize) != 0) {
    return ErrnoError(absl::StrCat("extend to ", kImageSize, " bytes disk image"), path, errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<BlockIndex> ReadBlockIndex(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return BlockIndex();
    return ErrnoError("open block index", path, errno);
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read block index", path, errno);
    if (n == 0) break;
    text.append(buffer, n);
  }
  BlockIndex index;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++number;
    std::pair<absl::string_view, absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits('\t', 1));
    std::string target, fingerprint;
    if (line.find('\t') == absl::string_view::npos || !absl::CUnescape(fields.first, &target) ||
        !absl::CUnescape(fields.second, &fingerprint) || target.empty()) {
      return absl::DataLossError(absl::StrCat("block index ", path, " line ", number,
                                              " is not CEscape(target) TAB CEscape(fingerprint)"));
    }
    index[target] = fingerprint;
  }
  return index;
}

absl::Status WriteBlockIndex(const std::string& path, const BlockIndex& index) {
  std::string text;
  for (const auto& [target, fingerprint] : index) {
    absl::StrAppend(&text, absl::CEscape(target), "\t", absl::CEscape(fingerprint), "\n");
  }
  const std::string temp = absl::StrCat(path, ".tmp");
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", temp, errno);
  absl::Cleanup close_fd = [fd] { close(fd); };
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", temp, errno);
    written += n;
  }
  if (fsync(fd) != 0) return ErrnoError("sync", temp, errno);
  if (rename(temp.c_str(), path.c_str()) != 0) {
    return ErrnoError(absl::StrCat("rename ", temp, " to"), path, errno);
  }
  return absl::OkStatus();
}

}  // namespace ndr::sample

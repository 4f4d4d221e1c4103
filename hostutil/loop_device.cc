#include "hostutil/loop_device.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ndr::hostutil {
namespace {

absl::Status ErrnoError(absl::string_view what, absl::string_view path, int err) {
  return absl::Status(err == EPERM || err == EACCES ? absl::StatusCode::kPermissionDenied
                                                    : absl::StatusCode::kInternal,
                      absl::StrCat(what, " ", path, ": ", strerror(err)));
}

// The number of loop devices the kernel may hand out before giving up on a race.
constexpr int kAttachAttempts = 64;

std::atomic<LoopDeviceObserver> observer{nullptr};

void Tell(const std::string& device, bool attached) {
  if (LoopDeviceObserver o = observer.load()) o(device, attached);
}

}  // namespace

void SetLoopDeviceObserver(LoopDeviceObserver o) { observer.store(o); }

absl::StatusOr<std::string> AttachLoopDevice(const std::string& path) {
  int file = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0 && (errno == EROFS || errno == EACCES)) file = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return ErrnoError("open", path, errno);
  absl::Cleanup close_file = [file] { close(file); };
  const int control = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (control < 0) return ErrnoError("open", "/dev/loop-control", errno);
  absl::Cleanup close_control = [control] { close(control); };
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    const int number = ioctl(control, LOOP_CTL_GET_FREE);
    if (number < 0) return ErrnoError("ioctl LOOP_CTL_GET_FREE on", "/dev/loop-control", errno);
    const std::string device = absl::StrCat("/dev/loop", number);
    const int loop = open(device.c_str(), O_RDWR | O_CLOEXEC);
    if (loop < 0) return ErrnoError("open", device, errno);
    absl::Cleanup close_loop = [loop] { close(loop); };
    if (ioctl(loop, LOOP_SET_FD, file) != 0) {
      if (errno == EBUSY) continue;  // another process took it first
      return ErrnoError(absl::StrCat("ioctl LOOP_SET_FD of ", path, " on"), device, errno);
    }
    Tell(device, true);
    // Name the backing file, as losetup does (sysfs shows the path of the open file anyway).
    struct loop_info64 info = {};
    strncpy(reinterpret_cast<char*>(info.lo_file_name), path.c_str(), LO_NAME_SIZE - 1);
    (void)ioctl(loop, LOOP_SET_STATUS64, &info);
    return device;
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("attach a loop device to ", path, ": every free device was taken by another "
                   "process first, ", kAttachAttempts, " times"));
}

absl::StatusOr<std::optional<std::string>> FindLoopDevice(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) return std::optional<std::string>();
  char resolved[PATH_MAX];
  const std::string real = realpath(path.c_str(), resolved) != nullptr ? resolved : path;
  DIR* block = opendir("/sys/block");
  if (block == nullptr) return ErrnoError("open", "/sys/block", errno);
  absl::Cleanup close_block = [block] { closedir(block); };
  while (dirent* entry = readdir(block)) {
    if (!absl::StartsWith(entry->d_name, "loop")) continue;
    std::ifstream in(absl::StrCat("/sys/block/", entry->d_name, "/loop/backing_file"));
    if (!in) continue;  // not attached
    std::ostringstream text;
    text << in.rdbuf();
    const std::string backing(absl::StripAsciiWhitespace(text.str()));
    if (backing == path || backing == real) {
      return std::optional<std::string>(absl::StrCat("/dev/", entry->d_name));
    }
  }
  return std::optional<std::string>();
}

absl::Status DetachLoopDevice(const std::string& device) {
  const int loop = open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (loop < 0) {
    if (errno == ENOENT || errno == ENXIO) return absl::OkStatus();
    return ErrnoError("open", device, errno);
  }
  absl::Cleanup close_loop = [loop] { close(loop); };
  if (ioctl(loop, LOOP_CLR_FD) != 0 && errno != ENXIO) {
    return ErrnoError("ioctl LOOP_CLR_FD on", device, errno);
  }
  Tell(device, false);
  return absl::OkStatus();
}

absl::Status RefreshLoopDeviceCapacity(const std::string& device) {
  const int loop = open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (loop < 0) return ErrnoError("open", device, errno);
  absl::Cleanup close_loop = [loop] { close(loop); };
  if (ioctl(loop, LOOP_SET_CAPACITY, 0) != 0) {
    return ErrnoError("ioctl LOOP_SET_CAPACITY on", device, errno);
  }
  return absl::OkStatus();
}

}  // namespace ndr::hostutil

#include "program/termination_message.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace ndr::program {
namespace {

// Set before threads start; read from signal handlers, so plain storage, no allocation.
char path_buffer[PATH_MAX] = "/dev/termination-log";
std::atomic<bool> written{false};

}  // namespace

void SetTerminationMessagePath(absl::string_view path) {
  if (path.size() >= sizeof(path_buffer)) path = "";
  memcpy(path_buffer, path.data(), path.size());
  path_buffer[path.size()] = '\0';
}

bool WriteTerminationMessage(const char* message, size_t size) {
  if (path_buffer[0] == '\0' || written.exchange(true)) return false;
  // No O_CREAT: only a file kubelet mounted is written. O_NOFOLLOW: not through a symlink.
  // O_NONBLOCK: a FIFO put there would otherwise hold the exit until someone reads it.
  const int fd = open(path_buffer, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) == 0;
  if (size > kTerminationMessageLimit) size = kTerminationMessageLimit;
  while (ok && size > 0) {
    const ssize_t n = write(fd, message, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    message += n;
    size -= static_cast<size_t>(n);
  }
  close(fd);
  return ok;
}

}  // namespace ndr::program

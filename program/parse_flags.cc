#include "program/parse_flags.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gflags/gflags.h"
#include "program/termination_message.h"

// What gflags calls instead of exit() on an error (gflags.cc, gflags 2.2: `gflags_exitfunc`,
// initially &exit). Not in gflags' headers; gflags' own tests set it.
namespace google {
extern void (*gflags_exitfunc)(int);
}  // namespace google

namespace ndr::program {
namespace {

// Standard error while gflags parses: a memory file, and the real one saved.
int captured_fd = -1;
int saved_stderr_fd = -1;
const std::string* path_flag = nullptr;

// Puts standard error back and returns what was written meanwhile, after writing it there too.
std::string Release() {
  if (saved_stderr_fd < 0) return "";
  fflush(stderr);
  dup2(saved_stderr_fd, STDERR_FILENO);
  close(saved_stderr_fd);
  saved_stderr_fd = -1;
  std::string text;
  char buffer[4096];
  if (lseek(captured_fd, 0, SEEK_SET) == 0) {
    ssize_t n;
    while ((n = read(captured_fd, buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) text.append(buffer, static_cast<size_t>(n));
    }
  }
  close(captured_fd);
  captured_fd = -1;
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return text;
}

void OnFlagError(int status) {
  const std::string text = Release();
  if (path_flag != nullptr) SetTerminationMessagePath(*path_flag);
  WriteTerminationMessage(text);
  exit(status);
}

}  // namespace

void ParseFlags(int* argc, char*** argv, const std::string* termination_message_path) {
  path_flag = termination_message_path;
  fflush(stderr);
  captured_fd = memfd_create("flag-errors", MFD_CLOEXEC);
  if (captured_fd >= 0) {
    saved_stderr_fd = dup(STDERR_FILENO);
    if (saved_stderr_fd < 0 || dup2(captured_fd, STDERR_FILENO) < 0) {
      if (saved_stderr_fd >= 0) close(saved_stderr_fd);
      saved_stderr_fd = -1;
      close(captured_fd);
      captured_fd = -1;
    }
  }
  google::gflags_exitfunc = OnFlagError;
  gflags::ParseCommandLineFlags(argc, argv, true);
  google::gflags_exitfunc = exit;
  Release();
}

}  // namespace ndr::program

#include "test/util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "test/util/temp_dir.h"

namespace ndr::testing {

std::string Runfile(const std::string& workspace_relative_path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/", workspace_relative_path);
  }
  // `bazel run`: the runfiles tree sits beside the program.
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return workspace_relative_path;
  return absl::StrCat(absl::string_view(self, n), ".runfiles/ndr/", workspace_relative_path);
}

Subprocess::Subprocess(std::vector<std::string> argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  // Everything the child needs is made here: between fork() and exec() a child of a threaded
  // process may only make async-signal-safe calls. Allocating there hung a child for good when
  // another thread held the (ASan) allocator's lock at the fork.
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    perror("fork");
    abort();
  }
  if (pid_ == 0) {
    setpgid(0, 0);  // Its own group, so that the destructor also ends what it started.
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    execv(args[0], args.data());
    static constexpr char kFailed[] = "subprocess: execv failed\n";
    (void)!write(2, kFailed, sizeof(kFailed) - 1);
    _exit(127);
  }
}

Subprocess::~Subprocess() {
  // The whole group: children the process started must not outlive the test either.
  kill(-pid_, SIGKILL);
  if (Running()) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
}

bool Subprocess::Signal(int signal) { return Running() && kill(pid_, signal) == 0; }

bool Subprocess::Running() { return !Wait(absl::ZeroDuration()).has_value(); }

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_code_.has_value()) return exit_code_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(2));
  }
}

std::string Subprocess::Log() const {
  std::string log;
  ReadFile(log_path_, &log);
  return log;
}

}  // namespace ndr::testing

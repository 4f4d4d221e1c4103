#include "test/util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "test/util/temp_dir.h"

namespace ndr::testing {
namespace {

// Every Subprocess alive in this program, in the order they started.
std::mutex live_mu;
std::vector<Subprocess*>& Live() {
  static auto* live = new std::vector<Subprocess*>();
  return *live;
}

}  // namespace

void WithLiveSubprocesses(const std::function<void(const std::vector<Subprocess*>&)>& fn) {
  std::lock_guard<std::mutex> lock(live_mu);
  fn(Live());
}

std::string Tail(const std::string& text, int lines) {
  size_t at = text.size();
  if (at > 0 && text[at - 1] == '\n') --at;
  for (int i = 0; i < lines && at > 0; ++i) {
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) return text;
  }
  return at == 0 ? text : text.substr(at + 1);
}

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

Subprocess::Subprocess(std::vector<std::string> argv, std::string log_path, std::string stdout_path)
    : name_(argv.empty() ? "" : argv[0].substr(argv[0].rfind('/') + 1)),
      log_path_(std::move(log_path)) {
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
    if (!stdout_path.empty()) {
      fd = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        close(fd);
      }
    }
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    execv(args[0], args.data());
    static constexpr char kFailed[] = "subprocess: execv failed\n";
    (void)!write(2, kFailed, sizeof(kFailed) - 1);
    _exit(127);
  }
  std::lock_guard<std::mutex> lock(live_mu);
  Live().push_back(this);
}

Subprocess::~Subprocess() {
  {
    std::lock_guard<std::mutex> lock(live_mu);
    Live().erase(std::find(Live().begin(), Live().end(), this));
  }
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
      signaled_ = !WIFEXITED(status);
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

std::string Subprocess::Describe(int lines) {
  std::string state = "running";
  if (std::optional<int> code = Wait(absl::ZeroDuration()); code.has_value()) {
    state = signaled_ ? absl::StrCat("killed by signal ", *code - 128)
                      : absl::StrCat("exited with code ", *code);
  }
  const std::string log = Log();
  return absl::StrCat(name_, " (pid ", pid_, ", ", state, "), log ", log_path_, ", last ", lines,
                      " lines:\n", Tail(log, lines), log.empty() || log.back() == '\n' ? "" : "\n");
}

}  // namespace ndr::testing

// A child process for integration tests and the conformance harness: its output captured to a
// file, in a process group of its own that is killed (and the child reaped) when the object goes
// away.
//
// In a test (linked with //test/util:testing), when an assertion fails while Subprocess objects
// are alive, the output also gets, for each of them, its name, pid, whether it still runs (or how
// it ended) and the tail of its log, so that a failure in CI says which process misbehaved
// without re-running anything (subprocess_printer.cc).
#ifndef NDR_TEST_UTIL_SUBPROCESS_H_
#define NDR_TEST_UTIL_SUBPROCESS_H_

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "test/util/poll.h"

namespace ndr::testing {

// Absolute path of a file in this test's (or `bazel run` program's) runfiles, e.g.
// Runfile("registrar/csi-node-driver-registrar").
std::string Runfile(const std::string& workspace_relative_path);

class Subprocess {
 public:
  // Starts `argv[0]` with `argv`; stdout and stderr go to `log_path` (appended), or stdout to
  // `stdout_path` if one is given.
  Subprocess(std::vector<std::string> argv, std::string log_path, std::string stdout_path = "");
  ~Subprocess();  // SIGKILL and reap if still running.
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool Signal(int signal);

  // Waits up to `timeout` for the process to end. Returns its exit code, or 128 + the signal
  // number if a signal ended it, or nullopt if it is still running.
  std::optional<int> Wait(absl::Duration timeout = kPatience);
  bool Running();
  // Whether a signal ended the process (Wait() then returned 128 + its number).
  bool Signaled() { return Wait(absl::ZeroDuration()).has_value() && signaled_; }

  // Everything the process has written so far.
  std::string Log() const;

  // "csi-node-driver-registrar (pid 123, running), log /tmp/x/registrar.log, last 30 lines:" and
  // those lines: what a failure message needs to say about this process.
  std::string Describe(int lines = 30);

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  bool signaled_ = false;  // a signal ended it; exit_code_ is 128 + the signal
  std::string name_;       // argv[0]'s base name
  std::string log_path_;
};

// Calls `fn` with every Subprocess alive in this program, in the order they started; none is
// destroyed meanwhile.
void WithLiveSubprocesses(const std::function<void(const std::vector<Subprocess*>&)>& fn);

// The last `lines` lines of `text`.
std::string Tail(const std::string& text, int lines);

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_SUBPROCESS_H_

// The crash report, from the programs themselves: the registrar, kubeletclient and the sample
// driver, each sent every fatal signal, and a helper that faults for real, fails a check and
// throws without catching. Each must write one report in its log format (the signal, the thread,
// function names on the stack), the termination message where one is asked for, and die of the
// same signal.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  std::string text;
  return ReadFile(path, &text) ? text : "(unreadable)";
}

// The report in `log`: from its first line to the end of its stack block (klog text).
std::string Report(const std::string& log) {
  const size_t start = log.rfind('\n', log.find("\"Fatal signal\""));
  if (log.find("\"Fatal signal\"") == std::string::npos) return "";
  const size_t begin = start == std::string::npos ? 0 : start + 1;
  const size_t end = log.find("\n >", begin);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end + 3 - begin);
}

// ThreadSanitizer runs the handler of a synchronous signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT) at once, even when the signal was sent by another process and the thread it interrupts
// is inside ThreadSanitizer's own runtime, whose state may then be half updated
// (tsan_interceptors_posix.cpp, rtl_generic_sighandler: "ThreadState can be in inconsistent
// state"); and it holds back SIGALRM until the thread leaves a call it intercepts, so the handler's
// alarm cannot end a handler stuck there. A CI run's registrar sent SIGFPE so hung for 120 s
// without writing a line. Sending a fatal signal to a running multi-threaded program is therefore
// not tested under ThreadSanitizer; the other builds test it, and a program that faults, fails a
// check or throws by itself (RealFaultsFailedChecksAndUncaughtExceptions) is tested in all.
bool SentFatalSignalsAreTestable() {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  return true;
#endif
}

constexpr char kNotUnderTsan[] =
    "ThreadSanitizer may hang a handler for a sent fatal signal inside its own runtime; "
    "the other builds run this test";

// One running program and how to tell it is up.
struct Running {
  std::vector<std::unique_ptr<Subprocess>> helpers;  // what it needs beside it
  std::unique_ptr<Subprocess> program;
  std::string log;
  std::string own_function;  // a function of the program's own that its main thread is in
};

class CrashReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // No core files from the programs this kills on purpose.
    const struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
  }

  Running StartDriver(const std::vector<std::string>& extra = {}) {
    Running r;
    const std::string socket = dir_.Join(absl::StrCat("d", ++runs_, ".sock"));
    r.log = dir_.Join(absl::StrCat("driver", runs_, ".log"));
    std::vector<std::string> argv = {Runfile("test/csidriver/sample-csi-driver"),
                                     "--endpoint=" + socket};
    argv.insert(argv.end(), extra.begin(), extra.end());
    r.program = std::make_unique<Subprocess>(argv, r.log);
    EXPECT_TRUE(PollUntil([&] { return Exists(socket); })) << r.program->Describe();
    r.own_function = "main";
    return r;
  }

  // The registrar with `extra` flags; started through `wrapper` (a command that execs or forks
  // the rest of its arguments) when one is given.
  Running StartRegistrar(const std::vector<std::string>& extra = {},
                         const std::vector<std::string>& wrapper = {}) {
    Running r;
    const std::string run = absl::StrCat(++runs_);
    const std::string csi = dir_.Join("c" + run + ".sock");
    const std::string registration = dir_.Join("reg" + run);
    mkdir(registration.c_str(), 0755);
    r.helpers.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi},
        dir_.Join("helper" + run + ".log")));
    r.log = dir_.Join("registrar" + run + ".log");
    std::vector<std::string> argv = wrapper;
    for (const std::string& arg : std::vector<std::string>{
             Runfile("registrar/csi-node-driver-registrar"),
                                   "--csi-address=" + csi,
                                     "--kubelet-registration-path=/var/lib/kubelet/plugins/x/csi.sock",
                                   "--plugin-registration-path=" + registration,
                                   std::string("--timeout=60s")}) {
      argv.push_back(arg);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    r.program = std::make_unique<Subprocess>(argv, r.log);
    EXPECT_TRUE(PollUntil([&] {
      return Exists(registration + "/sample.csi.example.com-reg.sock");
    })) << r.program->Describe();
    r.own_function = "ndr::registrar::Registrar::Run()";
    return r;
  }

  Running StartKubeletclient() {
    Running r;
    const std::string run = absl::StrCat(++runs_);
    const std::string registry = dir_.Join("registry" + run);
    mkdir(registry.c_str(), 0755);
    r.log = dir_.Join("kubeletclient" + run + ".log");
    r.program = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("kubeletclient/kubeletclient"), "watch",
                                 "--plugin-registry-dir=" + registry,
                                 "--node-status-file=" + dir_.Join("status" + run + ".json"),
                                 "--node-name=node1"},
        r.log);
    // It says when it watches; the crash report is installed before that.
    EXPECT_TRUE(PollUntil([&] { return absl::StrContains(Read(r.log), "atch"); }))
        << r.program->Describe();
    r.own_function = "main";
    return r;
  }

  // Sends `signal` to the main thread of `r`'s program (tgkill: a process-directed signal may go
  // to any thread) and checks the report and the death.
  void SendAndCheck(Running& r, int signal, const char* comm) {
    const char* name = sigabbrev_np(signal);
    SCOPED_TRACE(absl::StrCat(comm, " SIG", name));
    const pid_t pid = r.program->pid();
    ASSERT_EQ(syscall(SYS_tgkill, pid, pid, signal), 0);
    EXPECT_EQ(r.program->Wait(), 128 + signal) << r.program->Describe();
    const std::string log = Read(r.log);
    const std::string report = Report(log);
    ASSERT_NE(report, "") << log;
    EXPECT_THAT(report, ContainsRegex("^F[0-9]{4} [0-9:.]{15} +[0-9]+ crash_report\\.cc:[0-9]+\\] "
                                      "\"Fatal signal\" "));
    EXPECT_THAT(report, HasSubstr(absl::StrCat("signal=\"SIG", name, "\" code=\"SI_TKILL\" sender=",
                                               getpid(), " tid=", pid, " thread=\"", comm, "\"")));
    EXPECT_THAT(report, ContainsRegex("\t@ 0x[0-9a-f]{16} main\n")) << report;
    EXPECT_THAT(report, HasSubstr(" " + r.own_function + "\n")) << report;
    // One report: nothing else wrote one.
    std::vector<absl::string_view> parts = absl::StrSplit(log, "\"Fatal signal\"");
    EXPECT_EQ(parts.size(), 2u) << log;
  }

  TempDir dir_{"crash"};
  int runs_ = 0;
};

TEST_F(CrashReportTest, RegistrarReportsEveryFatalSignal) {
  if (!SentFatalSignalsAreTestable()) GTEST_SKIP() << kNotUnderTsan;
  for (int signal : kFatalSignals) {
    Running r = StartRegistrar();
    SendAndCheck(r, signal, "csi-node-driver");
  }
}

TEST_F(CrashReportTest, SampleDriverReportsEveryFatalSignal) {
  if (!SentFatalSignalsAreTestable()) GTEST_SKIP() << kNotUnderTsan;
  for (int signal : kFatalSignals) {
    Running r = StartDriver();
    SendAndCheck(r, signal, "sample-csi-driv");
  }
}

TEST_F(CrashReportTest, KubeletclientReportsEveryFatalSignal) {
  if (!SentFatalSignalsAreTestable()) GTEST_SKIP() << kNotUnderTsan;
  for (int signal : kFatalSignals) {
    Running r = StartKubeletclient();
    SendAndCheck(r, signal, "kubeletclient");
  }
}

// The first process of a PID namespace, as the registrar is in its container: the kernel drops a
// signal sent to it whose action is the default, its own raise() included, so after its report it
// must end itself, with the status a container runtime reports for that signal's death.
std::vector<std::string> PidNamespace() {
  return {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"};
}

// Sent from outside, as `kill` on the node or a runtime's `kill` does. With its own /proc, as a
// container has: the symbolizer reads /proc/self/task/TID/maps.
TEST_F(CrashReportTest, AContainersFirstProcessDiesOfASentSignal) {
  if (geteuid() != 0) GTEST_SKIP() << "a PID namespace needs root";
  if (!SentFatalSignalsAreTestable()) GTEST_SKIP() << kNotUnderTsan;
  for (int signal : {SIGSEGV, SIGABRT}) {
    SCOPED_TRACE(sigabbrev_np(signal));
    Running r = StartRegistrar({}, PidNamespace());
    // unshare's child is the registrar, the namespace's process 1.
    std::string children;
    ASSERT_TRUE(PollUntil([&] {
      return ReadFile(absl::StrCat("/proc/", r.program->pid(), "/task/", r.program->pid(),
                                   "/children"),
                      &children) &&
             !children.empty();
    }));
    const pid_t registrar = std::stoi(children);
    ASSERT_EQ(syscall(SYS_tgkill, registrar, registrar, signal), 0);  // to its main thread
    EXPECT_EQ(r.program->Wait(), 128 + signal) << r.program->Describe();
    const std::string report = Report(Read(r.log));
    // The sender is outside the namespace, where it has no process ID: si_pid is 0.
    EXPECT_THAT(report, HasSubstr(absl::StrCat("signal=\"SIG", sigabbrev_np(signal),
                                               "\" code=\"SI_TKILL\" sender=0 tid=1 ")))
        << Read(r.log);
    EXPECT_THAT(report, HasSubstr(" ndr::registrar::Registrar::Run()\n")) << report;
  }
}

// From inside: abort(), a failed check, an exception nobody catches.
TEST_F(CrashReportTest, AContainersFirstProcessDiesOfItsOwnAbort) {
  if (geteuid() != 0) GTEST_SKIP() << "a PID namespace needs root";
  for (const char* crash : {"abort", "fatal", "throw"}) {
    SCOPED_TRACE(crash);
    const std::string log = dir_.Join(absl::StrCat("pid1-", crash, ".log"));
    std::vector<std::string> argv = PidNamespace();
    argv.push_back(Runfile("test/crash-helper"));
    argv.push_back(absl::StrCat("--crash=", crash));
    Subprocess helper(argv, log);
    EXPECT_EQ(helper.Wait(), 128 + SIGABRT) << helper.Describe();
    EXPECT_THAT(Report(Read(log)), HasSubstr("signal=\"SIGABRT\" code=\"SI_TKILL\" sender=1 tid=1 "))
        << Read(log);
  }
}

// In JSON, the report is one component-base object, and the registrar's termination message is
// its first part.
TEST_F(CrashReportTest, RegistrarJsonReportAndTerminationMessage) {
  if (!SentFatalSignalsAreTestable()) GTEST_SKIP() << kNotUnderTsan;
  const std::string message = dir_.Join("termination-log");
  ASSERT_TRUE(WriteFile(message, ""));
  Running r = StartRegistrar({"--logging-format=json", "--termination-message-path=" + message});
  const pid_t pid = r.program->pid();
  ASSERT_EQ(syscall(SYS_tgkill, pid, pid, SIGSEGV), 0);
  EXPECT_EQ(r.program->Wait(), 128 + SIGSEGV);
  nlohmann::json report;
  for (absl::string_view line : absl::StrSplit(Read(r.log), '\n')) {
    if (absl::StrContains(line, "Fatal signal")) report = nlohmann::json::parse(line);
  }
  ASSERT_TRUE(report.is_object()) << Read(r.log);
  EXPECT_EQ(report["msg"], "Fatal signal");
  EXPECT_EQ(report["signal"], "SIGSEGV");
  EXPECT_EQ(report["tid"], pid);
  EXPECT_THAT(report["caller"].get<std::string>(), HasSubstr("logging/crash_report.cc:"));
  EXPECT_THAT(report["stack"].get<std::string>(), HasSubstr(" ndr::registrar::Registrar::Run()\n"));
  EXPECT_THAT(Read(message), HasSubstr(absl::StrCat("\"Fatal signal\" signal=\"SIGSEGV\" "
                                                    "code=\"SI_TKILL\" sender=", getpid(),
                                                    " tid=", pid)));
  EXPECT_THAT(Read(message), Not(HasSubstr("stack=")));
}

// Real faults, a failed check and an uncaught exception: the faulting function first, the
// address, the reason in the termination message.
TEST_F(CrashReportTest, RealFaultsFailedChecksAndUncaughtExceptions) {
  struct Case {
    const char* crash;
    int signal;
    const char* first;     // what follows the signal in the report's first line
    const char* function;  // on the stack
    const char* message;   // in the termination message
    const char* before;    // a line logged before the report ("" for none)
  };
  const bool x86 =
#if defined(__x86_64__) || defined(__i386__)
      true;
#else
      false;
#endif
  const Case cases[] = {
      {"segv", SIGSEGV, "code=\"SEGV_ACCERR\" addr=\"0x",
       "ndr::crash_helper::WriteToAnInaccessiblePage()", "signal=\"SIGSEGV\"", ""},
      {"bus", SIGBUS, "code=\"BUS_ADRERR\" addr=\"0x", "ndr::crash_helper::ReadPastTheEndOfAMappedFile()",
       "signal=\"SIGBUS\"", ""},
      {"fpe", SIGFPE, x86 ? "code=\"FPE_INTDIV\" addr=\"0x" : "signal=\"SIGFPE\"",
       "ndr::crash_helper::DivideByZero()", "signal=\"SIGFPE\"", ""},
      {"ill", SIGILL, x86 ? "code=\"ILL_ILLOPN\" addr=\"0x" : "signal=\"SIGILL\"",
       "ndr::crash_helper::ExecuteAnIllegalInstruction()", "signal=\"SIGILL\"", ""},
      {"abort", SIGABRT, "code=\"SI_TKILL\"", "main", "signal=\"SIGABRT\"", ""},
      {"fatal", SIGABRT, "code=\"SI_TKILL\"", "ndr::crash_helper::FailACheck()",
       "\"A check failed\" check=\"2 + 2 == 5\"", "\"A check failed\" check=\"2 + 2 == 5\""},
      {"throw", SIGABRT, "code=\"SI_TKILL\"", "ndr::crash_helper::ThrowWithoutCatching()",
       "type=\"std::runtime_error\" what=\"nobody catches this\"",
       "\"std::terminate called: an exception was not caught\" type=\"std::runtime_error\" "
       "what=\"nobody catches this\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.crash);
    const std::string message = dir_.Join(absl::StrCat("message-", c.crash));
    ASSERT_TRUE(WriteFile(message, ""));
    const std::string log = dir_.Join(absl::StrCat("helper-", c.crash, ".log"));
    Subprocess helper({Runfile("test/crash-helper"), absl::StrCat("--crash=", c.crash),
                       "--termination-message-path=" + message, "--scratch=" + dir_.path()},
                      log);
    EXPECT_EQ(helper.Wait(), 128 + c.signal) << helper.Describe();
    const std::string text = Read(log);
    const std::string report = Report(text);
    ASSERT_NE(report, "") << text;
    EXPECT_THAT(report, HasSubstr(c.first)) << report;
    EXPECT_THAT(report, HasSubstr(absl::StrCat(" ", c.function, "\n"))) << report;
    EXPECT_THAT(report, ContainsRegex("\t@ 0x[0-9a-f]{16} main\n")) << report;
    if (absl::string_view(c.first).find("addr=") != absl::string_view::npos) {
      // The faulting function comes first, named in the first line too.
      EXPECT_THAT(report, HasSubstr(absl::StrCat("function=\"", c.function, "\""))) << report;
    }
    if (c.before[0] != '\0') {
      EXPECT_THAT(text.substr(0, text.find("\"Fatal signal\"")), HasSubstr(c.before)) << text;
    }
    EXPECT_THAT(Read(message), HasSubstr(c.message));
    // The address is the page it wrote to.
    const size_t logged = text.find("Writing to an inaccessible page\" addr=\"");
    if (c.signal == SIGSEGV) {
      ASSERT_NE(logged, std::string::npos) << text;
      const size_t begin = text.find("addr=", logged);
      const std::string addr = text.substr(begin, text.find('\n', begin) - begin);
      EXPECT_THAT(report, HasSubstr(addr)) << report;
    }
  }
}

// JSON from a real fault: one object per line, every line of the log.
TEST_F(CrashReportTest, JsonLogStaysJson) {
  const std::string log = dir_.Join("json.log");
  Subprocess helper({Runfile("test/crash-helper"), "--crash=segv", "--logging-format=json"}, log);
  EXPECT_EQ(helper.Wait(), 128 + SIGSEGV) << helper.Describe();
  int reports = 0;
  for (absl::string_view line : absl::StrSplit(Read(log), '\n', absl::SkipEmpty())) {
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(object.is_discarded()) << line;
    if (object.value("msg", "") == "Fatal signal") {
      ++reports;
      EXPECT_EQ(object["code"], "SEGV_ACCERR");
      EXPECT_EQ(object["function"], "ndr::crash_helper::WriteToAnInaccessiblePage()");
    }
  }
  EXPECT_EQ(reports, 1);
}

}  // namespace
}  // namespace ndr::testing

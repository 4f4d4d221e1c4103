#include "test/conformance_suite/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "test/conformance_suite/fake_driver.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr::conformance {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;

constexpr char kDriverName[] = "conformance.csi.example.com";
constexpr char kRenamedDriver[] = "renamed.conformance.csi.example.com";

std::string Took(absl::Duration d) {
  return d < absl::Seconds(10) ? absl::StrFormat("%.0f ms", absl::ToDoubleMilliseconds(d))
                               : absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

// The last non-empty line of `log`, shortened: enough to say why a process did what it did.
std::string LastLine(const std::string& log) {
  std::vector<absl::string_view> lines = absl::StrSplit(log, '\n', absl::SkipWhitespace());
  if (lines.empty()) return "(nothing in its log)";
  std::string line(lines.back());
  return line.size() > 240 ? line.substr(0, 240) + "..." : line;
}

// A line of `log` at error level that mentions `text`, or "": klog's and glog's text format
// ("E1122 ..." or "F1122 ..."), or component-base's JSON format, whose error lines are the ones
// without a "v" (logs/json, zap's level encoding: only info lines carry a verbosity).
std::string ErrorLineMentioning(const std::string& log, const std::string& text) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const bool text_error = line.size() > 5 && (line[0] == 'E' || line[0] == 'F') &&
                            absl::ascii_isdigit(line[1]) && absl::ascii_isdigit(line[4]);
    const bool json_error =
        absl::StartsWith(line, "{\"ts\":") && !absl::StrContains(line, "\"v\":");
    const bool error = text_error || json_error;
    if (error && absl::StrContains(line, text)) {
      std::string shown(line);
      return shown.size() > 240 ? shown.substr(0, 240) + "..." : shown;
    }
  }
  return "";
}

// A TCP port on 127.0.0.1 that nothing listens on right now, for the registrar's /healthz.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// driver.slow_5s and so on.
std::string SlowCheckName(absl::Duration delay) {
  return absl::StrCat("driver.slow_", absl::ToInt64Seconds(delay), "s");
}

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Every path below `dir`, relative to it.
std::set<std::string> Tree(const std::string& dir) {
  std::set<std::string> paths;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    paths.insert(it->path().string().substr(dir.size() + 1));
  }
  return paths;
}

// One registrar under test with a driver and a directory tree of its own:
//   <root>/t/csi/csi.sock   the driver's socket: --csi-address and --kubelet-registration-path
//   <root>/t/a/b/reg        --plugin-registration-path, two levels down, so that a driver name
//                           such as "../../x" still lands inside <root>/t, where it is seen
//   <root>/registrar.log    what the registrar wrote
// Destroying it kills the registrar's process group, stops the driver and removes the root.
class Instance {
 public:
  Instance(const HarnessConfig& config, std::vector<std::string> extra_flags)
      : config_(config), extra_flags_(std::move(extra_flags)) {
    std::filesystem::create_directories(root_.Join("t/csi"));
    std::filesystem::create_directories(reg_dir());
  }

  std::string tree() const { return root_.Join("t"); }
  std::string reg_dir() const { return root_.Join("t/a/b/reg"); }
  std::string SocketFor(const std::string& name) const {
    return absl::StrCat(reg_dir(), "/", name, "-reg.sock");
  }
  FakeDriver& driver() { return driver_; }
  Subprocess& process() { return *process_; }
  std::string http_endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

  // `flags` go after the harness's extra ones.
  void StartRegistrar(const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = {
        config_.registrar_binary, "--csi-address=" + driver_.socket_path(),
        "--kubelet-registration-path=" + driver_.socket_path(),
        "--plugin-registration-path=" + reg_dir(), "--http-endpoint=" + http_endpoint()};
    argv.insert(argv.end(), extra_flags_.begin(), extra_flags_.end());
    argv.insert(argv.end(), flags.begin(), flags.end());
    started_ = absl::Now();
    process_ = std::make_unique<Subprocess>(argv, root_.Join("registrar.log"));
  }

  absl::Duration SinceStart() const { return absl::Now() - started_; }
  // A registrar never started (the harness's driver would not start) counts as exited.
  bool Exited() { return process_ == nullptr || !process_->Running(); }
  std::string Log() const { return process_ == nullptr ? "" : process_->Log(); }

  // "exit code 1" or "killed by signal 2"; only once Exited().
  std::string HowItEnded() {
    if (process_ == nullptr) return "not started: the harness's own driver did not start";
    const int code = process_->Wait(absl::ZeroDuration()).value_or(-1);
    return process_->Signaled() ? absl::StrCat("killed by signal ", code - 128)
                                : absl::StrCat("exit code ", code);
  }
  bool ExitedCleanly() {
    return process_ != nullptr && Exited() && !process_->Signaled() && process_->Wait() == 0;
  }

  // Whether `name`'s registration socket is there and answers GetInfo with `name`, as kubelet's
  // plugin watcher would find it.
  bool Serves(const std::string& name) { return SocketServes(SocketFor(name), name); }

  // The socket in the registration directory, under any file name not starting with a dot (what
  // kubelet's plugin watcher takes), that answers GetInfo with `name`; empty if none does. A
  // registrar may offer its socket under another name than <name>-reg.sock: kubelet registers
  // whatever socket it finds there (pluginwatcher/plugin_watcher.go handleCreateEvent).
  std::string ServingSocket(const std::string& name) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(reg_dir(), error)) {
      const std::string file = entry.path().filename().string();
      if (absl::StartsWith(file, ".")) continue;
      if (SocketServes(entry.path().string(), name)) return entry.path().string();
    }
    return "";
  }

  bool SocketServes(const std::string& socket, const std::string& name) {
    if (!IsSocket(socket)) return false;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + config_.timeout));
    pluginregistration::PluginInfo info;
    return pluginregistration::Registration::NewStub(UnixChannel(socket))
               ->GetInfo(&context, {}, &info)
               .ok() &&
           info.name() == name;
  }

  // GET /healthz: the status code, or -1 if nothing answered.
  int Healthz() {
    std::string body;
    return HttpGet(http_endpoint(), "/healthz", config_.timeout, &body);
  }

  // Starts the driver as `name` and the registrar, and waits until it serves `name` or exits, for
  // `ready_after` (the driver's delay) plus the timeout. Returns whether it serves.
  bool StartAndWait(const std::string& name, absl::Duration ready_after = absl::ZeroDuration()) {
    if (absl::Status s = driver_.Start(name, ready_after); !s.ok()) return false;
    StartRegistrar();
    return PollUntil([&] { return Serves(name) || Exited(); }, ready_after + config_.timeout) &&
           Serves(name);
  }

  // What a failure message says about the registrar: running or how it ended, and its last line.
  std::string State() {
    return absl::StrCat(Exited() ? HowItEnded() : "still running",
                        "; its log ends: ", LastLine(Log()));
  }

 private:
  const HarnessConfig& config_;
  const std::vector<std::string> extra_flags_;
  TempDir root_{"conf"};
  FakeDriver driver_{root_.Join("t/csi/csi.sock")};
  const int port_ = FreePort();
  absl::Time started_;
  std::unique_ptr<Subprocess> process_;  // last: destroyed (killed) first
};

class Harness {
 public:
  Harness(const HarnessConfig& config, const std::function<void(const CheckResult&)>& on_result)
      : config_(config), on_result_(on_result), extra_flags_(config.extra_flags) {}

  std::vector<CheckResult> Run();

 private:
  void Add(const std::string& name, Outcome outcome, const std::string& reason) {
    results_.push_back({name, outcome, reason});
    if (on_result_) on_result_(results_.back());
  }
  void Pass(const std::string& name, const std::string& reason) {
    Add(name, Outcome::kPass, reason);
  }
  void Fail(const std::string& name, const std::string& reason) {
    Add(name, Outcome::kFail, reason);
  }
  void Skip(const std::string& name, const std::string& reason) {
    Add(name, Outcome::kSkip, reason);
  }

  std::unique_ptr<Instance> NewInstance() {
    return std::make_unique<Instance>(config_, extra_flags_);
  }
  // A registrar serving kDriverName with a well-behaved driver, for a check that needs one; null
  // (and `check` failed) if it does not get that far.
  std::unique_ptr<Instance> Registered(const std::string& check);

  bool CheckStartAndLive();
  void CheckSocketDeletion();
  void CheckNotifyRefused();
  void CheckNotifyRefusedForNow();
  void CheckDriverRestart(bool rename);
  void CheckSlowDriver(absl::Duration delay);
  void CheckConnectionTimeout();
  void CheckName(const std::string& check, const std::string& name, const std::string& what);
  void CheckSignal(int signal);
  void CheckRegistrationRetry();

  const HarnessConfig& config_;
  const std::function<void(const CheckResult&)> on_result_;
  std::vector<std::string> extra_flags_;  // emptied if the registrar refuses them
  std::vector<CheckResult> results_;
};

std::unique_ptr<Instance> Harness::Registered(const std::string& check) {
  std::unique_ptr<Instance> instance = NewInstance();
  if (!instance->StartAndWait(kDriverName)) {
    Fail(check, absl::StrCat("with a well-behaved driver the registrar did not register within ",
                             absl::FormatDuration(config_.timeout), ": ", instance->State()));
    return nullptr;
  }
  return instance;
}

// registrar.starts and flags.extra, then every check of the live mode against that registrar.
bool Harness::CheckStartAndLive() {
  std::unique_ptr<Instance> instance = NewInstance();
  bool serving = instance->StartAndWait(kDriverName);
  if (!extra_flags_.empty()) {
    const std::string flags = absl::StrJoin(extra_flags_, " ");
    if (serving) {
      Pass("flags.extra", absl::StrCat("the registrar runs with ", flags));
    } else if (instance->Exited()) {
      // Most likely a flag this registrar does not know: say so, and judge it without them.
      Skip("flags.extra", absl::StrCat("the registrar refused ", flags, " (", instance->State(),
                                       "); the checks run without them"));
      extra_flags_.clear();
      instance = NewInstance();
      serving = instance->StartAndWait(kDriverName);
    } else {
      Skip("flags.extra", "the registrar did not start with them; see registrar.starts");
    }
  } else {
    Skip("flags.extra", "no extra flags given (after --)");
  }
  if (!serving) {
    Fail("registrar.starts",
         absl::StrCat("with a well-behaved driver the registrar did not serve ",
                      instance->SocketFor(kDriverName), " within ",
                      absl::FormatDuration(config_.timeout), ": ", instance->State()));
    return false;
  }
  Pass("registrar.starts", absl::StrCat("registered as ", kDriverName, " ",
                                        Took(instance->SinceStart()), " after it started"));
  Config live;
  live.registration_socket = instance->SocketFor(kDriverName);
  live.csi_endpoint = instance->driver().socket_path();
  live.http_endpoint = instance->http_endpoint();
  live.timeout = config_.timeout;
  for (const CheckResult& result : RunChecks(live)) {
    // The live mode's destructive checks are this mode's own, below, with their own registrars.
    if (result.outcome == Outcome::kSkip &&
        (result.name == "socket.deletion" || result.name == "signal.sigterm")) {
      continue;
    }
    Add(result.name, result.outcome, result.reason);
  }
  return true;
}

// Deleting the registration socket: recreated (how fast), or /healthz says 404 as the Go
// registrar's does (node_register.go, httpServer: 404 when the socket does not exist).
void Harness::CheckSocketDeletion() {
  const char* const check = "socket.deletion";
  std::unique_ptr<Instance> instance = Registered(check);
  if (instance == nullptr) return;
  const std::string socket = instance->SocketFor(kDriverName);
  if (unlink(socket.c_str()) != 0) {
    Fail(check, absl::StrCat("unlink ", socket, ": ", strerror(errno)));
    return;
  }
  const absl::Time deleted = absl::Now();
  // Either answer ends the wait. A registrar that recreates its socket may say 404 in the moment
  // between; so after the first 404 it still has a second, the shortest period of a liveness
  // probe, to recreate it. Both are a PASS: the grace only decides which one the reason names.
  std::optional<absl::Time> said_404;
  const bool recreated =
      PollUntil(
          [&] {
            if (instance->Serves(kDriverName) || instance->Exited()) return true;
            if (!said_404.has_value() && instance->Healthz() == 404) said_404 = absl::Now();
            return said_404.has_value() && absl::Now() > *said_404 + absl::Seconds(1);
          },
          config_.timeout) &&
      instance->Serves(kDriverName);
  if (instance->Exited()) {
    Fail(check,
         absl::StrCat("the registrar exited when its socket was deleted: ", instance->State()));
  } else if (recreated) {
    Pass(check,
         absl::StrCat("socket recreated ", Took(absl::Now() - deleted), " after it was deleted"));
  } else if (said_404.has_value()) {
    Pass(check, absl::StrCat("not recreated, and /healthz said 404 ", Took(*said_404 - deleted),
                             " after the deletion, so a liveness probe restarts it"));
  } else {
    Fail(check, absl::StrCat("not recreated within ", absl::FormatDuration(config_.timeout),
                             ", and /healthz never said 404: kubelet has lost the driver and "
                             "nothing will restart the registrar"));
  }
}

// Kubelet's NotifyRegistrationStatus(plugin_registered=false): the call is answered before the
// registrar goes, and its socket is removed. The Go registrar calls os.Exit(1) inside the handler
// (main.go, NotifyRegistrationStatus), so kubelet's call fails instead.
// kubelet's words for a refusal no retry changes, and for one that goes away by itself (the API
// server away), as kubelet v1.26.0 to v1.37.2 send them (operation_generator.go
// GenerateRegisterPluginFunc, nodeinfomanager.go InstallCSIDriver).
constexpr char kRefusedForGood[] =
    "RegisterPlugin error -- plugin registration failed with err: error adding CSI driver node "
    "info: driverNodeID must not be empty";
constexpr char kRefusedForNow[] =
    "RegisterPlugin error -- plugin registration failed with err: error updating Node object with "
    "CSI driver node info: error updating node: timed out waiting for the condition; caused by: "
    "Get \"https://10.0.0.1:6443/api/v1/nodes/node-1\": dial tcp 10.0.0.1:6443: connect: "
    "connection refused";

grpc::Status SendRefusal(const std::string& socket, const char* why, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error(why);
  pluginregistration::RegistrationStatusResponse response;
  return pluginregistration::Registration::NewStub(UnixChannel(socket))
      ->NotifyRegistrationStatus(&context, status, &response);
}

// An error the registrar chose to return is still an answer; a dropped connection or no answer
// at all is not.
bool Answered(const grpc::Status& s) {
  return s.error_code() != grpc::StatusCode::UNAVAILABLE &&
         s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
         s.error_code() != grpc::StatusCode::CANCELLED;
}

// A refusal no retry changes: answered, and the socket removed, so that kubelet does not keep
// dialling a plugin that is not there.
void Harness::CheckNotifyRefused() {
  const char* const check = "notify.refused";
  std::unique_ptr<Instance> instance = Registered(check);
  if (instance == nullptr) return;
  const std::string socket = instance->SocketFor(kDriverName);
  const absl::Time sent = absl::Now();
  const grpc::Status s = SendRefusal(socket, kRefusedForGood, config_.timeout);
  const bool answered = Answered(s);
  // Removed, or left behind by a registrar that has exited: nothing will remove it then.
  PollUntil([&] { return !Exists(socket) || instance->Exited(); }, config_.timeout);
  const bool removed = !Exists(socket);
  // Whether it also exits is its choice; give it the same time to do so, and report it.
  if (removed) PollUntil([&] { return instance->Exited(); }, config_.timeout);
  const std::string after =
      instance->Exited() ? absl::StrCat("exited (", instance->HowItEnded(), ")") : "kept running";
  if (!answered) {
    Fail(check,
         absl::StrCat("the call got no answer (code ", s.error_code(), " \"", s.error_message(),
                      "\"): kubelet never learns that the registrar "
                      "heard it; the registrar ",
                      after, removed ? " and removed its socket" : " and left its socket"));
  } else if (!removed) {
    Fail(check,
         absl::StrCat("answered, but the socket is still there ",
                      absl::FormatDuration(config_.timeout), " later; the registrar ", after));
  } else {
    Pass(check, absl::StrCat("answered (code ", s.error_code(), "), socket removed and ", after,
                             " ", Took(absl::Now() - sent), " after the call"));
  }
}

// A refusal that goes away by itself (the API server away): the registrar answers and keeps
// serving. One that exits leaves the driver unregistered until kubelet's crash-loop back-off
// restarts it (10 s doubling to 5 minutes: pkg/kubelet/kubelet.go, v1.37.2), well after the API
// server is back; nothing in kubelet asks for an exit.
void Harness::CheckNotifyRefusedForNow() {
  const char* const check = "notify.refused_for_now";
  std::unique_ptr<Instance> instance = Registered(check);
  if (instance == nullptr) return;
  const std::string socket = instance->SocketFor(kDriverName);
  const grpc::Status s = SendRefusal(socket, kRefusedForNow, config_.timeout);
  // Not exiting is shown over a window, the suite's timeout; an exit ends it at once.
  PollUntil([&] { return instance->Exited(); }, config_.timeout);
  if (!Answered(s)) {
    Fail(check, absl::StrCat("the call got no answer (code ", s.error_code(), " \"",
                             s.error_message(), "\"); the registrar ", instance->State()));
  } else if (instance->Exited()) {
    Fail(check, absl::StrCat("answered, then ended on a refusal that goes away by itself (the API "
                             "server away): ", instance->HowItEnded(),
                             "; kubelet's crash-loop back-off decides when it is registered "
                             "again, up to 5 minutes after the API server is back"));
  } else {
    // Kept running. Whether a socket serves meanwhile is the registrar's retry policy, which no
    // contract fixes: ours withdraws its socket and offers it again after kubelet's back-off
    // (refusals.md), another may keep serving. Reported either way.
    const std::string serving = instance->ServingSocket(kDriverName);
    Pass(check, absl::StrCat("answered (code ", s.error_code(), ") and kept running for ",
                             absl::FormatDuration(config_.timeout), " after the refusal; ",
                             serving.empty()
                                 ? "its socket is withdrawn meanwhile (offered again later)"
                                 : absl::StrCat("serving at ",
                                                serving.substr(serving.find_last_of('/') + 1))));
  }
}

// The driver restarts on the same socket, under the same name or another: the registration
// follows it. The Go registrar asks the name once, at start (main.go, GetDriverName), and keeps
// serving it.
void Harness::CheckDriverRestart(bool rename) {
  const std::string check = rename ? "driver.restart_new_name" : "driver.restart_same_name";
  std::unique_ptr<Instance> instance = Registered(check);
  if (instance == nullptr) return;
  const std::string old_socket = instance->SocketFor(kDriverName);
  const std::string new_name = rename ? kRenamedDriver : kDriverName;
  instance->driver().Stop();
  const absl::Time restarted = absl::Now();
  if (absl::Status s = instance->driver().Start(new_name); !s.ok()) {
    Fail(check, absl::StrCat("the harness could not restart its driver: ", s.message()));
    return;
  }
  if (!rename) {
    const bool ok = PollUntil(
        [&] {
          return instance->Exited() ||
                 (instance->Serves(kDriverName) && instance->Healthz() == 200);
        },
        config_.timeout);
    if (ok && !instance->Exited()) {
      Pass(check, absl::StrCat("still registered as ", kDriverName,
                               " with /healthz 200 after the driver restarted"));
    } else {
      Fail(check, absl::StrCat("after the driver restarted under the same name the registration "
                               "did not stay served with /healthz 200 within ",
                               absl::FormatDuration(config_.timeout), ": ", instance->State()));
    }
    return;
  }
  const bool moved = PollUntil(
      [&] { return instance->Exited() || (instance->Serves(new_name) && !Exists(old_socket)); },
      config_.timeout);
  if (instance->Exited()) {
    Fail(check, absl::StrCat("the registrar exited when the driver restarted as ", new_name, ": ",
                             instance->State()));
  } else if (moved) {
    Pass(check,
         absl::StrCat("re-registered as ", new_name, " and removed ", kDriverName, "'s socket ",
                      Took(absl::Now() - restarted), " after the driver restarted"));
  } else if (instance->Serves(new_name)) {
    Fail(check, absl::StrCat("registered ", new_name, " but left ", kDriverName,
                             "'s socket behind: kubelet still sees a driver that is gone"));
  } else {
    Fail(check, absl::StrCat("still registered as ", kDriverName, " ",
                             absl::FormatDuration(config_.timeout),
                             " after the driver restarted as ", new_name,
                             ": kubelet sends volumes to a name the driver no longer "
                             "answers to"));
  }
}

// A driver that answers GetPluginInfo only `delay` after it started. The Go registrar gives the
// call --timeout (1 s) and exits when it fails (main.go, GetDriverName).
void Harness::CheckSlowDriver(absl::Duration delay) {
  const std::string check = SlowCheckName(delay);
  std::unique_ptr<Instance> instance = NewInstance();
  const bool served = instance->StartAndWait(kDriverName, delay);
  const std::string took = Took(instance->SinceStart());
  if (served) {
    Pass(check, absl::StrCat("waited: registered ", took,
                             " after it started (the driver answered "
                             "after ",
                             absl::FormatDuration(delay), ")"));
  } else if (instance->Exited()) {
    Fail(check,
         absl::StrCat("gave up: ", instance->HowItEnded(), " ", took,
                      " after it started, before the driver answered at ",
                      absl::FormatDuration(delay), "; its log ends: ", LastLine(instance->Log())));
  } else {
    Fail(check, absl::StrCat("neither registered nor exited ", took,
                             " after it started (the "
                             "driver answered after ",
                             absl::FormatDuration(delay), "): ", instance->State()));
  }
}

// A manifest that still carries --connection-timeout, and a driver slower to appear than it. The
// Go registrar has ignored the flag since v2.0 (v2.7.0 and v2.17.0 cmd/csi-node-driver-registrar/
// main.go: "--connection-timeout is deprecated and will have no effect") and waits up to 30 s for
// the driver's socket (csi-lib-utils connection.Connect): it registers. A registrar that honours
// the flag exits, and its pod restarts for as long as the driver is slow.
void Harness::CheckConnectionTimeout() {
  const char* const check = "flags.connection_timeout";
  const absl::Duration appears_after = absl::Seconds(6);
  std::unique_ptr<Instance> instance = NewInstance();
  instance->StartRegistrar({"--connection-timeout=2s"});
  // The driver comes 6 s after the registrar, three times the flag's value; the registrar must
  // not have given up by then.
  PollUntil([&] { return instance->Exited(); }, appears_after);
  if (instance->Exited()) {
    Fail(check, absl::StrCat("with --connection-timeout=2s and no driver yet, the registrar gave "
                             "up: ",
                             instance->HowItEnded(), " ", Took(instance->SinceStart()),
                             " after it started; its log ends: ", LastLine(instance->Log()),
                             ". The Go registrar ignores the flag and waits"));
    return;
  }
  if (absl::Status s = instance->driver().Start(kDriverName); !s.ok()) {
    Fail(check, absl::StrCat("the harness could not start its driver: ", s.message()));
    return;
  }
  const bool served = PollUntil(
      [&] { return instance->Serves(kDriverName) || instance->Exited(); }, config_.timeout);
  if (!served || !instance->Serves(kDriverName)) {
    Fail(check, absl::StrCat("with --connection-timeout=2s the driver appeared ",
                             absl::FormatDuration(appears_after),
                             " after the registrar, which did not register within ",
                             absl::FormatDuration(config_.timeout), ": ", instance->State()));
    return;
  }
  const std::string took = Took(instance->SinceStart());
  // It runs on: a registrar that registers and then exits has not been registered for long.
  PollUntil([&] { return instance->Exited(); }, absl::Seconds(1));
  if (instance->Exited()) {
    Fail(check, absl::StrCat("registered, then ended: ", instance->State()));
    return;
  }
  Pass(check, absl::StrCat("--connection-timeout=2s had no effect: the driver appeared ",
                           absl::FormatDuration(appears_after), " after the registrar, which "
                           "registered ", took, " after it started and runs on"));
}

// A driver name that must not become a path: nothing may appear outside the registration
// directory, and the registrar must say so (exit non-zero, or an error line naming it). The Go
// registrar joins the name into the path unchecked (node_register.go, buildSocketPath).
void Harness::CheckName(const std::string& check, const std::string& name,
                        const std::string& what) {
  std::unique_ptr<Instance> instance = NewInstance();
  if (absl::Status s = instance->driver().Start(name); !s.ok()) {
    Fail(check, absl::StrCat("the harness could not start its driver: ", s.message()));
    return;
  }
  const std::set<std::string> before = Tree(instance->tree());
  const std::string reg = instance->reg_dir().substr(instance->tree().size() + 1);
  // Everything that appeared since, split into inside and outside the registration directory.
  std::vector<std::string> inside, outside;
  auto created = [&] {
    inside.clear();
    outside.clear();
    for (const std::string& path : Tree(instance->tree())) {
      if (before.count(path) != 0) continue;
      (absl::StartsWith(path, reg + "/") ? inside : outside)
          .push_back(absl::StrCat(instance->tree(), "/", path));
    }
    return !inside.empty() || !outside.empty();
  };
  instance->StartRegistrar();
  // It has decided once it exits, says something, or puts a file somewhere.
  PollUntil(
      [&] {
        return instance->Exited() || !ErrorLineMentioning(instance->Log(), name).empty() ||
               created();
      },
      config_.timeout);
  created();
  const std::string error_line = ErrorLineMentioning(instance->Log(), name);
  const bool refused = instance->Exited() && !instance->ExitedCleanly();
  if (!outside.empty()) {
    Fail(check, absl::StrCat("with ", what, " the registrar created ", absl::StrJoin(outside, ", "),
                             " outside the registration directory ", instance->reg_dir()));
  } else if (refused || !error_line.empty()) {
    Pass(check,
         absl::StrCat("nothing outside the directory; the registrar reported ", what,
                      refused ? absl::StrCat(" and ended (", instance->HowItEnded(), ")") : "",
                      ": ", error_line.empty() ? LastLine(instance->Log()) : error_line));
  } else if (!inside.empty()) {
    Fail(check, absl::StrCat("with ", what, " the registrar registered without a word: ",
                             absl::StrJoin(inside, ", ")));
  } else {
    Fail(check, absl::StrCat("with ", what, " the registrar neither refused nor registered within ",
                             absl::FormatDuration(config_.timeout), ": ", instance->State()));
  }
}

// SIGTERM and SIGINT: the socket removed, exit code 0. The Go registrar handles SIGTERM only
// (node_register.go, removeRegSocket); SIGINT kills it with its socket left behind.
void Harness::CheckSignal(int signal) {
  const std::string check = signal == SIGINT ? "signal.sigint" : "signal.sigterm";
  const char* const signal_name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  std::unique_ptr<Instance> instance = Registered(check);
  if (instance == nullptr) return;
  const std::string socket = instance->SocketFor(kDriverName);
  const absl::Time sent = absl::Now();
  instance->process().Signal(signal);
  if (!PollUntil([&] { return instance->Exited(); }, config_.timeout)) {
    Fail(check, absl::StrCat("still running ", absl::FormatDuration(config_.timeout), " after ",
                             signal_name));
    return;
  }
  const std::string took = Took(absl::Now() - sent);
  const bool left = Exists(socket);
  if (instance->ExitedCleanly() && !left) {
    Pass(check, absl::StrCat("socket removed, exit code 0, ", took, " after ", signal_name));
  } else {
    Fail(check, absl::StrCat(signal_name, ": ", instance->HowItEnded(),
                             left ? ", and its socket was left behind" : ", socket removed",
                             "; expected exit code 0 and no socket"));
  }
}

// Appearances and removals of one name in a directory, as kubelet's plugin watcher (fsnotify)
// sees them.
class NameEvents {
 public:
  NameEvents(const std::string& dir, std::string name)
      : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)), name_(std::move(name)) {
    inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
  }
  ~NameEvents() { close(fd_); }
  // How many times the name appeared so far.
  int Added() {
    alignas(inotify_event) char buffer[16 * 1024];
    for (ssize_t n; (n = read(fd_, buffer, sizeof(buffer))) > 0;) {
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + event->len;
        if (event->len != 0 && name_ == event->name && (event->mask & (IN_CREATE | IN_MOVED_TO))) {
          ++added_;
        }
      }
    }
    return added_;
  }

 private:
  const int fd_;
  const std::string name_;
  int added_ = 0;
};

// A kubelet that never confirms the registration (its RegisterPlugin blocked or failed without
// a verdict: kubernetes/kubernetes#138170, #133725). With --registration-retry-after=1s the
// registrar offers its socket again, as a new socket at the same path; once confirmed, it is left
// alone. The Go registrar has no such flag (and sits unregistered until its pod restarts).
void Harness::CheckRegistrationRetry() {
  const char* const check = "registration.retry";
  const absl::Duration retry_after = absl::Seconds(1);
  const std::string flag = "--registration-retry-after=1s";
  std::unique_ptr<Instance> instance = NewInstance();
  if (absl::Status s = instance->driver().Start(kDriverName); !s.ok()) {
    Fail(check, absl::StrCat("the harness could not start its driver: ", s.message()));
    return;
  }
  NameEvents events(instance->reg_dir(), absl::StrCat(kDriverName, "-reg.sock"));
  instance->StartRegistrar({flag});
  if (!PollUntil([&] { return instance->Serves(kDriverName) || instance->Exited(); },
                 config_.timeout) ||
      instance->Exited()) {
    // A registrar without the flag says so in a line naming it, followed by its whole usage.
    std::string said;
    bool unknown_flag = false;
    for (absl::string_view line : absl::StrSplit(instance->Log(), '\n')) {
      if (absl::StrContains(line, "registration-retry-after")) {
        said = absl::StrCat("; it said: ", absl::StripAsciiWhitespace(line));
        // Go's flag package: "flag provided but not defined: -registration-retry-after"; gflags:
        // "unknown command line flag 'registration-retry-after'".
        unknown_flag = absl::StrContains(absl::AsciiStrToLower(line), "not defined") ||
                       absl::StrContains(absl::AsciiStrToLower(line), "unknown");
        break;
      }
    }
    if (instance->Exited() && unknown_flag) {
      // The watchdog is this project's own feature: a registrar without it is not wrong by any
      // contract, it just lacks it. Not applicable, never a FAIL.
      Skip(check, absl::StrCat("not applicable: the registrar has no --registration-retry-after "
                               "(a registration watchdog of this project's registrar only)",
                               said, ". Without it, a registrar that kubelet never confirms "
                               "stays unregistered until its pod is restarted"));
      return;
    }
    Fail(check, absl::StrCat("with ", flag, " the registrar did not register: ",
                             said.empty() ? instance->State()
                                          : absl::StrCat(instance->Exited() ? instance->HowItEnded()
                                                                            : "still running",
                                                         said),
                             ". Without it, a registrar that kubelet never confirms stays "
                             "unregistered until its pod is restarted"));
    return;
  }
  const absl::Time first = absl::Now();
  // Offered again: the name appears a second time (removed in between), and the socket serves.
  const bool reoffered = PollUntil(
      [&] { return instance->Exited() || (events.Added() >= 2 && instance->Serves(kDriverName)); },
      retry_after + config_.timeout);
  if (instance->Exited() || !reoffered) {
    Fail(check, absl::StrCat("kubelet never confirmed the registration, and the registrar did "
                             "not offer its socket again within ",
                             absl::FormatDuration(retry_after + config_.timeout), ": ",
                             instance->State()));
    return;
  }
  const std::string took = Took(absl::Now() - first);
  // Now kubelet confirms; the registration must then be left alone for longer than the
  // registrar's next wait (2 s: doubled once).
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + config_.timeout));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  const grpc::Status s =
      pluginregistration::Registration::NewStub(UnixChannel(instance->SocketFor(kDriverName)))
          ->NotifyRegistrationStatus(&context, status, &response);
  if (!s.ok()) {
    Fail(check, absl::StrCat("NotifyRegistrationStatus(plugin_registered=true) on the offered "
                             "socket failed: ",
                             s.error_message()));
    return;
  }
  const int offers = events.Added();
  const absl::Duration watch = 3 * retry_after;
  PollUntil([&] { return instance->Exited() || events.Added() > offers; }, watch);
  if (instance->Exited() || events.Added() > offers) {
    Fail(check, absl::StrCat("offered the socket again after kubelet confirmed it: ",
                             instance->State()));
    return;
  }
  Pass(check, absl::StrCat("offered the socket again ", took, " after the first offer went "
                           "unconfirmed, and left it alone for ",
                           absl::FormatDuration(watch), " once confirmed"));
}

std::vector<CheckResult> Harness::Run() {
  if (access(config_.registrar_binary.c_str(), X_OK) != 0) {
    Fail("registrar.starts",
         absl::StrCat(config_.registrar_binary, " is not an executable file: ", strerror(errno)));
    return results_;
  }
  if (!CheckStartAndLive()) {
    std::vector<std::string> rest = {"socket.deletion", "notify.refused",
                                     "notify.refused_for_now", "driver.restart_same_name",
                                     "driver.restart_new_name"};
    for (absl::Duration delay : config_.slow_driver_delays) rest.push_back(SlowCheckName(delay));
    for (const char* name :
         {"flags.connection_timeout", "name.escape", "name.too_long", "name.invalid", "signal.sigterm", "signal.sigint",
          "registration.retry"}) {
      rest.push_back(name);
    }
    for (const std::string& name : rest) {
      Skip(name, "the registrar does not register even with a well-behaved driver");
    }
    return results_;
  }
  CheckSocketDeletion();
  CheckNotifyRefused();
  CheckNotifyRefusedForNow();
  CheckDriverRestart(/*rename=*/false);
  CheckDriverRestart(/*rename=*/true);
  for (absl::Duration delay : config_.slow_driver_delays) CheckSlowDriver(delay);
  CheckConnectionTimeout();
  CheckName("name.escape", "../../conformance-escape",
            "a driver name that climbs out of the directory (\"../../conformance-escape\")");
  // One over CSI's limit of 63 characters, short enough that its socket path still fits.
  CheckName("name.too_long", std::string(60, 'a') + ".com",
            "a 64-character driver name (CSI allows 63)");
  CheckName("name.invalid", "Conformance_Driver!",
            "an invalid driver name (\"Conformance_Driver!\")");
  CheckSignal(SIGTERM);
  CheckSignal(SIGINT);
  CheckRegistrationRetry();
  return results_;
}

}  // namespace

std::vector<CheckResult> RunHarness(const HarnessConfig& config,
                                    const std::function<void(const CheckResult&)>& on_result) {
  return Harness(config, on_result).Run();
}

}  // namespace ndr::conformance

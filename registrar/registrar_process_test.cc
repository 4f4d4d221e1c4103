// The csi-node-driver-registrar binary as a real process, against the sample CSI driver (or a
// fake driver in this test process) on real unix sockets, with this test playing kubelet.
// Each test names the point of the registrar's behaviour it covers.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <limits.h>

#include <poll.h>
#include <sys/inotify.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "registrar/registration_lifecycle.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/http_get.h"
#include "test/util/poll.h"
#include "test/util/registrar_log.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::DirEntries;
using ::ndr::testing::HttpGet;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::Runfile;
using ::ndr::testing::ServedHttpPort;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRegistrar[] = "registrar/csi-node-driver-registrar";
constexpr char kDriver[] = "test/csidriver/sample-csi-driver";
constexpr char kKubeletPath[] = "/var/lib/kubelet/plugins/sample/csi.sock";
constexpr char kDriverName[] = "sample.csi.example.com";

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

ino_t Inode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(RpcDeadline());
  return context;
}

std::shared_ptr<grpc::Channel> Channel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

// kubelet's side of the calls.
grpc::Status GetInfo(const std::string& socket, pluginregistration::PluginInfo* info) {
  return pluginregistration::Registration::NewStub(Channel(socket))
      ->GetInfo(Context().get(), {}, info);
}

std::string InfoName(const std::string& socket) {
  pluginregistration::PluginInfo info;
  return GetInfo(socket, &info).ok() ? info.name() : "";
}

grpc::Status Notify(const std::string& socket, bool registered, const std::string& error) {
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(registered);
  status.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  return pluginregistration::Registration::NewStub(Channel(socket))
      ->NotifyRegistrationStatus(Context().get(), status, &response);
}

// A CSI Identity service in this process whose answer the test controls.
class FakeDriver final : public csi::v1::Identity::Service {
 public:
  explicit FakeDriver(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeDriver() override { server_->Shutdown(std::chrono::system_clock::now()); }

  void Answer(const std::string& name, grpc::Status status = grpc::Status::OK) {
    std::lock_guard<std::mutex> lock(mu_);
    name_ = name;
    status_ = status;
  }
  // While hanging, GetPluginInfo answers only when the caller gives up (its deadline passes).
  void Hang(bool hang) {
    std::lock_guard<std::mutex> lock(mu_);
    hang_ = hang;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  grpc::Status GetPluginInfo(grpc::ServerContext* context, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* response) override {
    bool hang;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      response->set_name(name_);
      if (!status_.ok()) return status_;
      hang = hang_;
    }
    if (hang) PollUntil([&] { return context->IsCancelled(); });
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::string name_ ABSL_GUARDED_BY(mu_) = kDriverName;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  bool hang_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Kubelet's plugin watcher and registration, with a policy: it sees each socket appear at
// `socket` (inotify, as kubelet's fsnotify), calls GetInfo, and confirms the registration
// (NotifyRegistrationStatus(registered=true)) when `confirm(n)` says so for the n-th appearance
// (1-based); otherwise it says nothing at all, as a kubelet whose RegisterPlugin blocked or
// failed without a verdict (kubernetes/kubernetes#138170).
class PolicyKubelet {
 public:
  PolicyKubelet(const std::string& socket, std::function<bool(int)> confirm)
      : socket_(socket), confirm_(std::move(confirm)) {
    inotify_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    const std::string dir = socket.substr(0, socket.rfind('/'));
    inotify_add_watch(inotify_, dir.c_str(), IN_CREATE | IN_MOVED_TO);
    thread_ = std::thread([this] { Loop(); });
  }
  ~PolicyKubelet() {
    stop_ = true;
    thread_.join();
    close(inotify_);
  }
  int offers() const { return offers_; }
  int confirmed() const { return confirmed_; }
  // The offer whose registration was first confirmed; 0 before that.
  int first_confirmed_offer() const { return first_confirmed_offer_; }

 private:
  void Loop() {
    const std::string name = socket_.substr(socket_.rfind('/') + 1);
    alignas(inotify_event) char buffer[16 * 1024];
    while (!stop_) {
      pollfd fd = {inotify_, POLLIN, 0};
      if (poll(&fd, 1, 20) <= 0) continue;
      for (ssize_t n; (n = read(inotify_, buffer, sizeof(buffer))) > 0;) {
        for (char* p = buffer; p < buffer + n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(p);
          p += sizeof(inotify_event) + event->len;
          if (event->len == 0 || name != event->name) continue;
          const int offer = ++offers_;
          pluginregistration::PluginInfo info;
          if (!GetInfo(socket_, &info).ok() || !confirm_(offer)) continue;
          if (Notify(socket_, true, "").ok()) {
            ++confirmed_;
            if (first_confirmed_offer_ == 0) first_confirmed_offer_ = offer;
          }
        }
      }
    }
  }

  const std::string socket_;
  const std::function<bool(int)> confirm_;
  int inotify_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> offers_{0};
  std::atomic<int> confirmed_{0};
  std::atomic<int> first_confirmed_offer_{0};
  std::thread thread_;
};

// kubelet's plugin manager as it treats registration sockets, in two releases, reconciling every
// 100 ms (kubelet: every second):
//  - kV136 (v1.36 and later): a failed registration is removed from the actual state of world and
//    retried by itself, each socket path held back by its own back-off (500 ms doubling to `cap`;
//    pkg/util/goroutinemap/exponentialbackoff), which a new socket at that path does not reset;
//  - kV126 (v1.26 to v1.35): a plugin whose registration failed after validation stays in the
//    actual state of world and is never tried again until its socket is created anew; deleting
//    the socket deregisters it (operation_generator.go GenerateRegisterPluginFunc, v1.26.15).
// Both refuse a second socket of a driver name registered under another path (csi_plugin.go
// validateVersions) and forget a socket only when it is deleted (plugin_watcher.go
// handleDeleteEvent). `verdict()` gives the outcome of the part kubelet does against the API
// server: "" registers, anything else is the refusal text. Sockets are dialled at `dial_dir`: the
// registry as the host's kubelet names it.
class BackoffKubelet {
 public:
  enum class Release { kV126, kV136 };
  BackoffKubelet(const std::string& dir, const std::string& dial_dir, Release release,
                 absl::Duration cap, std::function<std::string()> verdict)
      : dial_dir_(dial_dir), release_(release), cap_(cap), verdict_(std::move(verdict)) {
    inotify_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    inotify_add_watch(inotify_, dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
    for (const std::string& name : ::ndr::testing::DirEntries(dir)) Appeared(name);
    thread_ = std::thread([this] { Loop(); });
  }
  ~BackoffKubelet() {
    stop_ = true;
    thread_.join();
    close(inotify_);
  }
  // A kubelet restarted: it forgets every registration and lists the directory again.
  void Restart() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, socket] : sockets_) socket = Socket{socket.present, socket.uuid + 1};
    drivers_.clear();
  }
  // Its attempts on socket `name` (each a dial, and GetInfo when the dial worked), when made.
  std::vector<absl::Time> attempts(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return sockets_[name].attempts;
  }
  bool registered(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return sockets_[name].registered;
  }
  // Every socket name it has seen appear.
  std::set<std::string> names() {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> names;
    for (const auto& [name, socket] : sockets_) names.insert(name);
    return names;
  }

 private:
  struct Socket {
    bool present = false;
    uint64_t uuid = 0;          // bumped each time the socket appears
    bool in_actual = false;     // kubelet holds a registration of it (registered or failed)
    uint64_t actual_uuid = 0;
    bool registered = false;
    std::string driver;
    absl::Duration backoff = absl::ZeroDuration();
    absl::Time retry_at = absl::InfinitePast();
    std::vector<absl::Time> attempts;
  };

  void Appeared(const std::string& name) {
    if (name.empty() || name[0] == '.' || !absl::EndsWith(name, ".sock")) return;
    Socket& socket = sockets_[name];
    socket.present = true;
    ++socket.uuid;
  }
  void Failed(Socket& socket) {
    socket.backoff = socket.backoff == absl::ZeroDuration() ? absl::Milliseconds(500)
                                                            : std::min(socket.backoff * 2, cap_);
    socket.retry_at = absl::Now() + socket.backoff;
  }
  void Deregister(Socket& socket) {
    if (socket.registered && drivers_.count(socket.driver) != 0) drivers_.erase(socket.driver);
    socket.in_actual = socket.registered = false;
  }
  // One registration attempt, as GenerateRegisterPluginFunc makes it.
  void Register(const std::string& name, Socket& socket, std::unique_lock<std::mutex>& lock) {
    socket.attempts.push_back(absl::Now());
    const uint64_t uuid = socket.uuid;
    lock.unlock();
    auto stub = pluginregistration::Registration::NewStub(Channel(dial_dir_ + "/" + name));
    pluginregistration::PluginInfo info;
    grpc::ClientContext get_info;
    get_info.set_deadline(RpcDeadline());
    const bool dialled = stub->GetInfo(&get_info, {}, &info).ok();
    lock.lock();
    if (!dialled) {
      Failed(socket);
      return;
    }
    std::string refusal;
    const auto other = drivers_.find(info.name());
    if (other != drivers_.end() && other->second != name) {
      refusal = absl::StrCat(
          "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI "
          "Driver ", info.name(), " at endpoint ", info.endpoint(),
          ": Another driver with the same name is already registered with a higher supported "
          "version: \"1.0.0\"");
    } else {
      socket.in_actual = true;
      socket.actual_uuid = uuid;
      socket.driver = info.name();
      lock.unlock();
      refusal = verdict_();
      lock.lock();
    }
    if (refusal.empty()) {
      socket.registered = true;
      drivers_[info.name()] = name;
      socket.backoff = absl::ZeroDuration();
    } else {
      socket.registered = false;
      if (release_ == Release::kV136) socket.in_actual = false;
      Failed(socket);
    }
    lock.unlock();
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(refusal.empty());
    status.set_error(refusal);
    pluginregistration::RegistrationStatusResponse response;
    grpc::ClientContext notify;
    notify.set_deadline(RpcDeadline());
    stub->NotifyRegistrationStatus(&notify, status, &response);
    lock.lock();
  }
  void Loop() {
    alignas(inotify_event) char buffer[16 * 1024];
    while (!stop_) {
      pollfd fd = {inotify_, POLLIN, 0};
      poll(&fd, 1, 100);
      std::unique_lock<std::mutex> lock(mu_);
      for (ssize_t n; (n = read(inotify_, buffer, sizeof(buffer))) > 0;) {
        for (char* p = buffer; p < buffer + n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(p);
          p += sizeof(inotify_event) + event->len;
          if (event->len == 0) continue;
          if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
            Appeared(event->name);
          } else if (sockets_.count(event->name) != 0) {
            sockets_[event->name].present = false;
          }
        }
      }
      std::vector<std::string> names;
      for (const auto& [name, socket] : sockets_) names.push_back(name);
      for (const std::string& name : names) {
        Socket& socket = sockets_[name];
        // Gone, or created anew: deregistered first (the reconciler's first loop).
        if (socket.in_actual && (!socket.present || socket.actual_uuid != socket.uuid)) {
          Deregister(socket);
        }
        if (!socket.present || socket.in_actual) continue;
        if (absl::Now() < socket.retry_at) continue;  // held back by the path's back-off
        Register(name, socket, lock);
      }
    }
  }

  const std::string dial_dir_;
  const Release release_;
  const absl::Duration cap_;
  const std::function<std::string()> verdict_;
  int inotify_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, Socket> sockets_;       // by socket name
  std::map<std::string, std::string> drivers_;  // registered driver -> socket name
};

// Whether kubelet's attempts, counted from the first, never came faster than kubelet's own
// back-off on one path would make them (registration_lifecycle.h); the first attempt too soon,
// if not.
std::string OutpacedAt(const std::vector<absl::Time>& attempts, absl::Duration cap) {
  for (size_t i = 0; i < attempts.size(); ++i) {
    // 50 ms for the fake's own reconciling.
    const absl::Duration since = attempts[i] - attempts[0] + absl::Milliseconds(50);
    if (static_cast<int>(i + 1) > registrar::KubeletBackoffAttemptsBy(since, cap)) {
      return absl::StrCat("attempt ", i + 1, " at ", absl::FormatDuration(since));
    }
  }
  return "";
}

// How many times the registrar's log says the watchdog offered the socket again.
int Reoffers(const std::string& log) {
  int count = 0;
  for (size_t at = 0; (at = log.find("offering the socket again", at)) != std::string::npos;
       ++at) {
    ++count;
  }
  return count;
}

class RegistrarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(csi_dir_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(reg_dir_.c_str(), 0755), 0);
  }

  std::unique_ptr<Subprocess> StartDriver(const std::string& name = kDriverName) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile(kDriver), "--endpoint=unix://" + csi_socket_,
                                 "--drivername=" + name, "--nodeid=node-1"},
        dir_.Join("driver.log"));
  }

  // The registrar, with a --timeout no busy machine reaches unless `extra` sets its own: its
  // GetPluginInfo and health-check calls must not fail because this machine is slow.
  std::unique_ptr<Subprocess> StartRegistrar(std::vector<std::string> extra = {},
                                             const std::string& reg_dir = "",
                                             const std::string& log = "registrar.log") {
    std::vector<std::string> argv = {
        Runfile(kRegistrar), "--csi-address=" + csi_socket_,
        std::string("--kubelet-registration-path=") + kKubeletPath,
        "--plugin-registration-path=" + (reg_dir.empty() ? reg_dir_ : reg_dir), "--timeout=60s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Subprocess>(argv, dir_.Join(log));
  }

  // Proves that `wait` has passed, as the registrars' own clocks see it, without guessing how
  // long: a second registrar (the witness), started now with --registration-retry-after=`wait`
  // beside a kubelet that never answers it, has offered its socket again `times` times, that is
  // after wait * (2^times - 1).
  void WaitForWitness(absl::Duration wait, int times) {
    const std::string dir = dir_.Join(absl::StrCat("witness", ++witnesses_));
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    const std::string log = absl::StrCat("witness", witnesses_, ".log");
    auto witness = StartRegistrar(
        {"--registration-retry-after=" + absl::FormatDuration(wait)}, dir, log);
    std::string text;
    ASSERT_TRUE(PollUntil([&] {
      ReadFile(dir_.Join(log), &text);
      return Reoffers(text) >= times;
    })) << text;
  }

  int witnesses_ = 0;

  std::string RegistrarLog() {
    std::string log;
    ReadFile(dir_.Join("registrar.log"), &log);
    return log;
  }

  bool Serving(const std::string& name = kDriverName) {
    return InfoName(reg_dir_ + "/" + name + "-reg.sock") == name;
  }

  TempDir dir_{"reg"};
  const std::string csi_dir_ = dir_.Join("csi");
  const std::string csi_socket_ = dir_.Join("csi/csi.sock");
  const std::string reg_dir_ = dir_.Join("reg");
  const std::string reg_socket_ = reg_dir_ + "/" + kDriverName + "-reg.sock";
};

// 1. Flags: invalid combinations are one-line errors naming the flag, exit 1, nothing on disk.
TEST_F(RegistrarTest, InvalidFlagsExit1BeforeCreatingAnything) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--kubelet-registration-path="}, "--kubelet-registration-path: is required"},
      {{"--timeout=1"}, "--timeout"},
      {{"--timeout=0s"}, "--timeout"},
      {{"--connection-timeout=forever"}, "--connection-timeout"},
      {{"--http-endpoint=:9809", "--health-port=9808"}, "--health-port: may not be combined"},
      {{"--http-endpoint=nohost"}, "--http-endpoint"},
      {{"--csi-address=tcp://127.0.0.1:1"}, "--csi-address"},
      {{"--no-such-flag"}, "unknown command line flag"},
  };
  auto driver = StartDriver();
  for (const Case& c : cases) {
    auto registrar = StartRegistrar(c.args);
    EXPECT_EQ(registrar->Wait(), 1) << c.message;
    std::string log = RegistrarLog();
    EXPECT_THAT(log, HasSubstr(c.message));
    EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty()) << c.message;
    unlink(dir_.Join("registrar.log").c_str());
  }
}

// 1. --version, --mode=kubelet-registration-probe, --enable-pprof, and a --mode that is neither
// mode: the Go registrar registers for it (v2.17.0 main.go, modeIsKubeletRegistrationProbe).
TEST_F(RegistrarTest, VersionProbeModeAndPprof) {
  Subprocess version({Runfile(kRegistrar), "--version"}, dir_.Join("version.log"));
  EXPECT_EQ(version.Wait(), 0);
  // This build's version (//test:versions_test checks its form), and the Go release it matches.
  EXPECT_THAT(version.Log(), ::testing::StartsWith("csi-node-driver-registrar "));
  EXPECT_THAT(version.Log(),
              HasSubstr("\nmatches: node-driver-registrar v2.17.0 (its flags and behaviour)\n"));

  Subprocess probe({Runfile(kRegistrar), "--mode=kubelet-registration-probe"},
                   dir_.Join("probe.log"));
  EXPECT_EQ(probe.Wait(), 0) << probe.Log();

  auto driver = StartDriver();
  auto registrar = StartRegistrar({"--enable-pprof", "--mode=node-register"});
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  EXPECT_THAT(RegistrarLog(), HasSubstr("--enable-pprof has no effect"));
  EXPECT_THAT(RegistrarLog(), HasSubstr("--mode=node-register is neither registration nor "
                                        "kubelet-registration-probe; registering"));
}

// --help as the Go registrar's flag package prints it: the usage line, the registrar's flags and
// the logging flags, each with its default; none of gflags' own nor klog's; exit 0. Any
// spelling Go's flag package takes.
TEST_F(RegistrarTest, HelpListsTheRegistrarsAndTheLoggingFlagsOnly) {
  for (const char* spelling : {"--help", "-help", "-h"}) {
    Subprocess help({Runfile(kRegistrar), spelling}, dir_.Join("help.log"));
    EXPECT_EQ(help.Wait(), 0) << spelling;
    const std::string out = help.Log();
    EXPECT_THAT(out, ::testing::StartsWith("Usage of ")) << spelling;
    for (const char* flag :
         {"  -csi-address string\n", "(default \"/run/csi/socket\")", "  -kubelet-registration-path string\n",
          "  -plugin-registration-path string\n", "(default \"/registration\")",
          "  -timeout duration\n", "(default 1s)", "  -http-endpoint string\n",
          "  -health-port int\n", "  -mode string\n", "  -connection-timeout duration\n",
          "  -registration-retry-after duration\n", "(default 3m)",
          "  -enable-pprof\n", "  -requires-publish-pod\n", "  -version\n",
          "  -release-startup-pages\n", "(default true)",
          "\nLogging flags (component-base):\n", "  -logging-format string\n",
          "  -log-flush-frequency duration\n", "  -v int\n", "  -vmodule string\n"}) {
      EXPECT_THAT(out, HasSubstr(flag)) << spelling;
    }
    for (const char* internal : {"logmailer", "log_link", "flagfile", "helpfull", "/build/",
                                 "logtostderr", "tryfromenv"}) {
      EXPECT_THAT(out, ::testing::Not(HasSubstr(internal))) << spelling;
    }
    EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 60) << out;
    unlink(dir_.Join("help.log").c_str());
  }
}

// 2. The driver may appear long after the registrar; no --connection-timeout means no limit.
TEST_F(RegistrarTest, WaitsForADriverThatAppearsLater) {
  auto registrar = StartRegistrar();
  // The 10-second progress line shows it kept waiting.
  ASSERT_TRUE(PollUntil([&] { return RegistrarLog().find("Still waiting") != std::string::npos; }))
      << RegistrarLog();
  EXPECT_TRUE(registrar->Running());
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
  auto driver = StartDriver();
  EXPECT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
}

// 2. --connection-timeout has no effect, as in the Go registrar (v2.7.0 and v2.17.0 main.go: "is
// deprecated and will have no effect"): a manifest that still carries it and a driver slower than
// it register, where exiting would restart the pod for ever.
TEST_F(RegistrarTest, ConnectionTimeoutHasNoEffect) {
  auto registrar = StartRegistrar({"--connection-timeout=300ms"});
  // Still waiting 10 s in, thirty times the flag's value.
  ASSERT_TRUE(PollUntil([&] { return RegistrarLog().find("Still waiting") != std::string::npos; }))
      << RegistrarLog();
  EXPECT_TRUE(registrar->Running());
  EXPECT_THAT(RegistrarLog(), HasSubstr("--connection-timeout is deprecated and will have no "
                                        "effect"));
  auto driver = StartDriver();
  EXPECT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
}

// 2. UNAVAILABLE and DEADLINE_EXCEEDED are retried; a driver that hangs past --timeout, then
// answers, is registered.
TEST_F(RegistrarTest, RetriesAHangingDriver) {
  FakeDriver driver(csi_socket_);
  driver.Hang(true);
  auto registrar = StartRegistrar({"--timeout=1s", "--v=4"});
  ASSERT_TRUE(PollUntil([&] { return driver.calls() >= 3; })) << RegistrarLog();
  EXPECT_THAT(RegistrarLog(), HasSubstr("Deadline Exceeded"));
  EXPECT_TRUE(registrar->Running());
  driver.Hang(false);
  EXPECT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
}

// 2. Any other error is fatal and carries the driver's message.
TEST_F(RegistrarTest, OtherDriverErrorsAreFatal) {
  FakeDriver driver(csi_socket_);
  driver.Answer("", grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "disk on fire"));
  auto registrar = StartRegistrar();
  EXPECT_EQ(registrar->Wait(), 1);
  EXPECT_THAT(RegistrarLog(), HasSubstr("disk on fire"));
  EXPECT_EQ(driver.calls(), 1);
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
}

// 3. The driver's name is validated before it becomes part of a path.
TEST_F(RegistrarTest, InvalidDriverNamesCreateNothing) {
  struct Case {
    std::string name;
    const char* message;
  } cases[] = {
      {"../../etc/x", "invalid name"},
      {std::string(300, 'a'), "300 characters long"},
      {"", "empty"},
  };
  FakeDriver driver(csi_socket_);
  for (const Case& c : cases) {
    driver.Answer(c.name);
    auto registrar = StartRegistrar();
    EXPECT_EQ(registrar->Wait(), 1) << c.message;
    EXPECT_THAT(RegistrarLog(), HasSubstr(c.message));
    EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
    EXPECT_THAT(DirEntries(dir_.path()), ::testing::UnorderedElementsAre("csi", "reg", "registrar.log"));
    unlink(dir_.Join("registrar.log").c_str());
  }
}

// 3. A registration socket path over 107 bytes is a clear error.
TEST_F(RegistrarTest, OverlongSocketPathIsAnError) {
  const std::string name(60, 'n');
  const std::string long_dir = reg_dir_ + "/" + std::string(40, 'd');
  ASSERT_EQ(mkdir(long_dir.c_str(), 0755), 0);
  FakeDriver driver(csi_socket_);
  driver.Answer(name);
  auto registrar = StartRegistrar({"--plugin-registration-path=" + long_dir});
  EXPECT_EQ(registrar->Wait(), 1);
  EXPECT_THAT(RegistrarLog(), HasSubstr("at most 107 bytes"));
  EXPECT_THAT(DirEntries(long_dir), ::testing::IsEmpty());
}

// 4. The socket is never accessible to group or others; a stale one is replaced.
TEST_F(RegistrarTest, SocketIsPrivateAndReplacesAStaleOne) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, reg_socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  auto driver = StartDriver();
  // A lax umask in the parent must not leak into the socket's mode.
  const mode_t old = umask(0);
  auto registrar = StartRegistrar();
  umask(old);
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  struct stat st;
  ASSERT_EQ(lstat(reg_socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::ElementsAre(std::string(kDriverName) + "-reg.sock"));
}

// 4. A regular file at the path is an error and stays; a missing directory is named.
TEST_F(RegistrarTest, RegularFileAndMissingDirectory) {
  ASSERT_TRUE(WriteFile(reg_socket_, "precious"));
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  EXPECT_EQ(registrar->Wait(), 1);
  EXPECT_THAT(RegistrarLog(), HasSubstr("is not a socket; it was left untouched"));
  std::string contents;
  ASSERT_TRUE(ReadFile(reg_socket_, &contents));
  EXPECT_EQ(contents, "precious");
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::ElementsAre(std::string(kDriverName) + "-reg.sock"));

  auto missing = StartRegistrar({"--plugin-registration-path=" + dir_.Join("nope")});
  EXPECT_EQ(missing->Wait(), 1);
  EXPECT_THAT(RegistrarLog(), HasSubstr("registration directory " + dir_.Join("nope")));
}

// 5. GetInfo and GetCSIDriverInfo, with and without --requires-publish-pod; a confirmed
// registration keeps the registrar running.
TEST_F(RegistrarTest, ServesKubeletsCalls) {
  auto driver = StartDriver();
  for (bool requires_pod : {false, true}) {
    auto registrar = StartRegistrar(
        {std::string("--requires-publish-pod=") + (requires_pod ? "true" : "false")});
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
    pluginregistration::PluginInfo info;
    ASSERT_TRUE(GetInfo(reg_socket_, &info).ok());
    EXPECT_EQ(info.type(), "CSIPlugin");
    EXPECT_EQ(info.name(), kDriverName);
    EXPECT_EQ(info.endpoint(), kKubeletPath);
    EXPECT_THAT(info.supported_versions(), ::testing::ElementsAre("1.0.0"));

    csiregistration::CSIDriverInfo driver_info;
    ASSERT_TRUE(csiregistration::CSIRegistration::NewStub(Channel(reg_socket_))
                    ->GetCSIDriverInfo(Context().get(), {}, &driver_info)
                    .ok());
    EXPECT_EQ(driver_info.csi_endpoint(), kKubeletPath);
    EXPECT_EQ(driver_info.options().requires_publish_pod(), requires_pod);

    EXPECT_TRUE(Notify(reg_socket_, true, "").ok());
    EXPECT_TRUE(registrar->Running());
    EXPECT_TRUE(registrar->Signal(SIGTERM));
    EXPECT_EQ(registrar->Wait(), 0);
  }
}

// --release-startup-pages is accepted either way, so that manifests of earlier releases keep
// working, and changes nothing: the registrar registers and answers as without it.
TEST_F(RegistrarTest, TheRetiredReleaseStartupPagesFlagIsAcceptedAndChangesNothing) {
  for (const char* flag : {"--release-startup-pages=true", "--release-startup-pages=false"}) {
    auto driver = StartDriver();
    auto registrar = StartRegistrar({flag});
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << flag << RegistrarLog();
    EXPECT_TRUE(Notify(reg_socket_, true, "").ok());
    pluginregistration::PluginInfo info;
    ASSERT_TRUE(GetInfo(reg_socket_, &info).ok()) << flag;
    EXPECT_EQ(info.name(), kDriverName);
    EXPECT_TRUE(registrar->Signal(SIGTERM));
    EXPECT_EQ(registrar->Wait(), 0) << flag << RegistrarLog();
  }
}

// The threads of gRPC's that run while it serves (their names as /proc shows them).
int GrpcThreads(pid_t pid) {
  int count = 0;
  for (const std::string& task : DirEntries(absl::StrCat("/proc/", pid, "/task"))) {
    std::string name;
    if (ReadFile(absl::StrCat("/proc/", pid, "/task/", task, "/comm"), &name) &&
        (absl::StartsWith(name, "timer_manager") || absl::StartsWith(name, "grpc_global_tim") ||
         absl::StartsWith(name, "grpcpp_sync_ser"))) {
      ++count;
    }
  }
  return count;
}

// gRPC's threads (whose two timer threads wake every second) run only while the registration
// socket has a connection: once kubelet has registered the driver and hung up, the registrar
// sleeps with none of them, and the next call is served all the same.
TEST_F(RegistrarTest, GrpcThreadsEndOnceKubeletHasHungUp) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  ASSERT_TRUE(Notify(reg_socket_, true, "").ok());
  auto grpc_threads = [&] { return GrpcThreads(registrar->pid()); };
  ASSERT_TRUE(PollUntil([&] { return grpc_threads() == 0; })) << RegistrarLog();
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(GetInfo(reg_socket_, &info).ok());
  EXPECT_EQ(info.name(), kDriverName);
  EXPECT_TRUE(PollUntil([&] { return grpc_threads() == 0; })) << RegistrarLog();
  EXPECT_TRUE(registrar->Running());
}

// Once gRPC's threads have ended, their stacks are gone too: glibc keeps no stack of an ended
// thread for reuse (registrar/main.cc), so an idle registrar holds its live threads' stacks and
// at most the last ended thread's.
// Each thread stack has an inaccessible guard page below it (an anonymous "---p" mapping of one
// page), a cached stack too, so the guard pages are counted.
TEST_F(RegistrarTest, EndedThreadsLeaveNoStacksBehind) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const std::string proc = absl::StrCat("/proc/", registrar->pid());
  std::string maps;
  ASSERT_TRUE(ReadFile(proc + "/maps", &maps));
  if (absl::StrContains(maps, "/libc.so")) {
    GTEST_SKIP() << "the registrar is linked dynamically (a sanitizer build): glibc's stack cache "
                    "can only be turned off from inside a static program";
  }
  ASSERT_TRUE(Notify(reg_socket_, true, "").ok());
  const long page = sysconf(_SC_PAGESIZE);
  auto guard_pages = [&] {
    int count = 0;
    std::string text;
    if (!ReadFile(proc + "/maps", &text)) return -1;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() != 5 || fields[1] != "---p") continue;  // anonymous: no path
      std::vector<absl::string_view> range = absl::StrSplit(fields[0], '-');
      unsigned long start = 0, end = 0;
      if (range.size() == 2 && absl::SimpleHexAtoi(range[0], &start) &&
          absl::SimpleHexAtoi(range[1], &end) && end - start == static_cast<unsigned long>(page)) {
        ++count;
      }
    }
    return count;
  };
  auto threads = [&] { return static_cast<int>(DirEntries(proc + "/task").size()); };
  // gRPC stops a moment after kubelet hung up (kGrpcIdleStop); then only the registrar's own
  // threads are left.
  ASSERT_TRUE(PollUntil([&] { return GrpcThreads(registrar->pid()) == 0; })) << RegistrarLog();
  // The live threads' stacks but the main thread's, and at most the stack of the last thread to
  // end: glibc frees an ended thread's stack when the next one is queued, and a thread cannot
  // free its own. Kept in glibc's cache, as before, there were six for three threads.
  EXPECT_TRUE(PollUntil([&] {
    const int guards = guard_pages();  // -1: maps unreadable, which is no answer
    return guards >= 0 && guards <= threads();
  }))
      << guard_pages() << " thread-stack guard pages for " << threads() << " threads:\n"
      << (ReadFile(proc + "/maps", &maps) ? maps : "(maps unreadable)");
}

// 6. A refusal is answered, logged, and then the socket is removed and the registrar exits 1.
TEST_F(RegistrarTest, RefusalIsAnsweredThenExit1) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const std::string error =
      "RegisterPlugin error -- plugin validation failed with err: highest supported version "
      "reported by driver is 0.3.0";
  grpc::Status status = Notify(reg_socket_, false, error);
  EXPECT_TRUE(status.ok()) << "kubelet got no reply: " << status.error_message();
  EXPECT_EQ(registrar->Wait(), 1);
  EXPECT_THAT(RegistrarLog(), HasSubstr(error));
  EXPECT_FALSE(IsSocket(reg_socket_));
}

// The reason of each deliberate exit is the termination message, which Kubernetes shows as the
// container's last state: kubelet's refusal, and a flag error (gflags' own, and ours). The file is
// written only when it exists, and one that cannot be written changes nothing about the exit.
TEST_F(RegistrarTest, DeliberateExitsWriteTheTerminationMessage) {
  const std::string message = dir_.Join("termination-log");
  auto termination_message = [&] {
    std::string text;
    return ReadFile(message, &text) ? text : std::string("(unreadable)");
  };
  const std::string flag = "--termination-message-path=" + message;
  {
    SCOPED_TRACE("kubelet's refusal");
    ASSERT_TRUE(WriteFile(message, ""));
    auto driver = StartDriver();
    auto registrar = StartRegistrar({flag});
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
    const std::string error =
        "RegisterPlugin error -- plugin validation failed with err: highest supported version "
        "reported by driver is 0.3.0";
    EXPECT_TRUE(Notify(reg_socket_, false, error).ok());
    EXPECT_EQ(registrar->Wait(), 1) << RegistrarLog();
    EXPECT_THAT(termination_message(), HasSubstr(error));
    EXPECT_THAT(termination_message(), HasSubstr("kubelet refused to register the driver"));
  }
  struct Case {
    std::vector<std::string> flags;
    const char* reason;
  };
  for (const Case& c : {
           Case{{"--no-such-flag"}, "unknown command line flag 'no-such-flag'"},
           Case{{"--health-port=many"}, "illegal value 'many'"},
           Case{{"--timeout=soon"}, "--timeout: \"soon\" is not a duration"},
           Case{{"--logging-format=xml"}, "--logging-format"},
       }) {
    SCOPED_TRACE(c.flags[0]);
    ASSERT_TRUE(WriteFile(message, "left from before"));
    std::vector<std::string> flags = c.flags;
    flags.push_back(flag);
    auto registrar = StartRegistrar(flags, "", "flags.log");
    EXPECT_EQ(registrar->Wait(), 1) << registrar->Log();
    EXPECT_THAT(termination_message(), HasSubstr(c.reason));
    EXPECT_THAT(termination_message(), Not(HasSubstr("left from before")));
    // What it says in the log is unchanged.
    EXPECT_THAT(registrar->Log(), HasSubstr(c.reason));
  }
  {
    SCOPED_TRACE("no file: none is made");
    unlink(message.c_str());
    auto registrar = StartRegistrar({"--timeout=soon", flag}, "", "missing.log");
    EXPECT_EQ(registrar->Wait(), 1) << registrar->Log();
    struct stat st;
    EXPECT_NE(lstat(message.c_str(), &st), 0);
  }
  {
    SCOPED_TRACE("a file that cannot be written: the same exit");
    ASSERT_TRUE(WriteFile(message, "kept"));
    ASSERT_EQ(chmod(message.c_str(), 0444), 0);
    // As root, permissions do not stop a write: a directory in its place does.
    const std::string dir_in_place = dir_.Join("termination-dir");
    ASSERT_EQ(mkdir(dir_in_place.c_str(), 0755), 0);
    for (const std::string& path : {message, dir_in_place}) {
      auto registrar = StartRegistrar({"--timeout=soon", "--termination-message-path=" + path},
                                      "", "readonly.log");
      EXPECT_EQ(registrar->Wait(), 1) << registrar->Log();
      EXPECT_THAT(registrar->Log(), HasSubstr("is not a duration"));
    }
    if (geteuid() != 0) {
      EXPECT_EQ(termination_message(), "kept");
    }
  }
  {
    SCOPED_TRACE("a symlink is not followed");
    const std::string target = dir_.Join("target");
    ASSERT_TRUE(WriteFile(target, "untouched"));
    const std::string link = dir_.Join("link");
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    auto registrar =
        StartRegistrar({"--timeout=soon", "--termination-message-path=" + link}, "", "link.log");
    EXPECT_EQ(registrar->Wait(), 1) << registrar->Log();
    std::string text;
    ASSERT_TRUE(ReadFile(target, &text));
    EXPECT_EQ(text, "untouched");
  }
}

// Context switches so far (voluntary and not) of each live thread of process `pid`, by thread.
std::map<std::string, uint64_t> ContextSwitches(pid_t pid) {
  std::map<std::string, uint64_t> switches;
  const std::string task = absl::StrCat("/proc/", pid, "/task");
  for (const std::string& tid : DirEntries(task)) {
    std::string status;
    if (!ReadFile(task + "/" + tid + "/status", &status)) continue;
    for (absl::string_view line : absl::StrSplit(status, '\n')) {
      uint64_t n = 0;
      if ((absl::ConsumePrefix(&line, "voluntary_ctxt_switches:") ||
           absl::ConsumePrefix(&line, "nonvoluntary_ctxt_switches:")) &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n)) {
        switches[tid] += n;
      }
    }
  }
  return switches;
}

// The context switches of process `pid` between two readings of ContextSwitches: those of the
// threads alive at the second (a thread that ended in between no longer switches).
uint64_t SwitchesBetween(const std::map<std::string, uint64_t>& before,
                         const std::map<std::string, uint64_t>& after) {
  uint64_t total = 0;
  for (const auto& [tid, count] : after) {
    const auto was = before.find(tid);
    total += count - (was != before.end() && was->second <= count ? was->second : 0);
  }
  return total;
}

// kubelet's words when the API server is away (nodeinfomanager.go InstallCSIDriver, updateNode
// after its four attempts; the same v1.26.0 to v1.37.2).
constexpr char kApiServerAway[] =
    "RegisterPlugin error -- plugin registration failed with err: error updating Node object with "
    "CSI driver node info: error updating node: timed out waiting for the condition; caused by: "
    "Get \"https://10.0.0.1:6443/api/v1/nodes/node-1\": dial tcp 10.0.0.1:6443: connect: "
    "connection refused";

// A refusal whose reason goes away by itself (the API server away): the registrar keeps running,
// healthy, says on /healthz and /metrics that it is not registered and why, withdraws its socket
// and offers it again after the back-off, and is registered when kubelet confirms it. kubelet here
// is v1.26's, which never tries a refused socket again by itself: every attempt is an offer of
// the registrar's, and they never come faster than kubelet's own back-off on one path would.
TEST_F(RegistrarTest, ATransientRefusalIsRetriedWithoutAnExit) {
  auto driver = StartDriver();
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV126, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  auto registrar =
      StartRegistrar({"--http-endpoint=127.0.0.1:0", "--registration-backoff-cap=2s"});
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 1; })) << RegistrarLog();
  const int port = ServedHttpPort(RegistrarLog());
  ASSERT_NE(port, 0) << RegistrarLog();
  std::string body;
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registration_retrying 1\n");
  })) << body;
  EXPECT_THAT(body, HasSubstr("\ncsi_node_driver_registrar_registered 0\n"));
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 200) << body;
  EXPECT_THAT(body, HasSubstr("not registered: kubelet refused for now (kubelet could not "
                              "update the Node object (API server unreachable or busy))"));
  // Offered again, several times, at kubelet's pace or slower.
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 4; })) << RegistrarLog();
  EXPECT_TRUE(registrar->Running()) << RegistrarLog();
  EXPECT_EQ(OutpacedAt(kubelet.attempts(name), absl::Seconds(2)), "") << RegistrarLog();
  // Between offers it waits without spinning: nothing runs while the socket is withdrawn.
  ASSERT_TRUE(PollUntil([&] { return !IsSocket(reg_socket_); })) << RegistrarLog();
  const auto switches_before = ContextSwitches(registrar->pid());
  absl::SleepFor(absl::Milliseconds(400));  // a window to count in, not a wait for anything
  EXPECT_LT(SwitchesBetween(switches_before, ContextSwitches(registrar->pid())), 100u);
  const std::string log = RegistrarLog();
  EXPECT_THAT(log, HasSubstr("the socket is withdrawn and offered anew after the wait"));
  EXPECT_THAT(log, HasSubstr("attempt=1"));
  EXPECT_THAT(log, HasSubstr("retryIn="));
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    EXPECT_FALSE(absl::StartsWith(line, "E")) << "a transient refusal is no error: " << line;
  }
  // The API server is back: the next offer is confirmed; registered, and /healthz says no more.
  api_away = false;
  ASSERT_TRUE(PollUntil([&] { return kubelet.registered(name); })) << RegistrarLog();
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registered 1\n");
  })) << body;
  EXPECT_THAT(body, HasSubstr("\ncsi_node_driver_registrar_registration_retrying 0\n"));
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 200);
  EXPECT_EQ(body, "ok");
  EXPECT_EQ(kubelet.names(), std::set<std::string>{name});
  EXPECT_TRUE(registrar->Signal(SIGTERM));
  EXPECT_EQ(registrar->Wait(), 0) << RegistrarLog();
}

// kubelet v1.36 and later retry a refused socket by themselves, holding each path back: with the
// socket withdrawn between the registrar's offers, kubelet tries it no more often than its own
// back-off would, at one path, and registers it once the API server is back.
TEST_F(RegistrarTest, AKubeletThatRetriesByItselfIsNeverOutpaced) {
  auto driver = StartDriver();
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV136, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  auto registrar = StartRegistrar({"--registration-backoff-cap=2s"});
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 5; })) << RegistrarLog();
  api_away = false;
  ASSERT_TRUE(PollUntil([&] { return kubelet.registered(name); })) << RegistrarLog();
  EXPECT_EQ(OutpacedAt(kubelet.attempts(name), absl::Seconds(2)), "") << RegistrarLog();
  EXPECT_EQ(kubelet.names(), std::set<std::string>{name});
  EXPECT_TRUE(registrar->Running());
  EXPECT_TRUE(registrar->Signal(SIGTERM));
  EXPECT_EQ(registrar->Wait(), 0) << RegistrarLog();
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
}

// A kubelet restarted while the API server is away registers the driver anew and fails: the
// registration kubelet held is gone, so the registrar is no longer registered (metrics, /healthz)
// and offers its socket again until kubelet confirms it.
TEST_F(RegistrarTest, AConfirmedRegistrationRefusedForNowIsOfferedAgain) {
  auto driver = StartDriver();
  std::atomic<bool> api_away{false};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV126, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  auto registrar =
      StartRegistrar({"--http-endpoint=127.0.0.1:0", "--registration-backoff-cap=2s"});
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.registered(name); })) << RegistrarLog();
  const int port = ServedHttpPort(RegistrarLog());
  ASSERT_NE(port, 0) << RegistrarLog();
  std::string body;
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registered 1\n");
  })) << body;
  api_away = true;
  kubelet.Restart();
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registered 0\n") &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registration_retrying 1\n");
  })) << body << RegistrarLog();
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 200) << body;
  EXPECT_THAT(body, HasSubstr("not registered: kubelet refused for now"));
  // Offered again, as this kubelet (v1.26) never retries by itself.
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 2; })) << RegistrarLog();
  api_away = false;
  ASSERT_TRUE(PollUntil([&] {
    return kubelet.registered(name) && HttpGet(port, "/metrics", &body) == 200 &&
           absl::StrContains(body, "\ncsi_node_driver_registrar_registered 1\n");
  })) << body << RegistrarLog();
  EXPECT_TRUE(registrar->Running());
}

// A permanent reason ends the registrar whenever it comes, here after re-offers made for a
// transient one, with kubelet's reason in its last line.
TEST_F(RegistrarTest, APermanentReasonAfterReOffersEndsIt) {
  auto driver = StartDriver();
  constexpr char kEmptyNodeId[] =
      "RegisterPlugin error -- plugin registration failed with err: error adding CSI driver node "
      "info: driverNodeID must not be empty";
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV126, absl::Seconds(2),
                         [&] { return std::string(api_away ? kApiServerAway : kEmptyNodeId); });
  auto registrar = StartRegistrar({"--registration-backoff-cap=2s"});
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 2; })) << RegistrarLog();
  api_away = false;
  EXPECT_EQ(registrar->Wait(), 1) << RegistrarLog();
  const std::vector<std::string> lines = absl::StrSplit(RegistrarLog(), '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), HasSubstr(kEmptyNodeId));
  EXPECT_THAT(RegistrarLog(), HasSubstr("refusal=\"permanent\""));
  EXPECT_FALSE(IsSocket(reg_socket_));
}

// The rollback to the Go registrar after ours died: ours only ever served <driver>-reg.sock, so
// the Go registrar, which removes what is at that path and serves there (v2.17.0
// node_register.go nodeRegister), is registered on its first start: kubelet deregisters the dead
// socket's plugin when it is deleted and registers the new one.
TEST_F(RegistrarTest, TheGoRegistrarRegistersAfterOursDied) {
  auto driver = StartDriver();
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV136, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  auto registrar = StartRegistrar({"--registration-backoff-cap=2s"});
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 3; })) << RegistrarLog();
  api_away = false;
  ASSERT_TRUE(PollUntil([&] {
    for (const std::string& seen : kubelet.names()) {
      if (kubelet.registered(seen)) return true;
    }
    return false;
  })) << RegistrarLog();
  registrar.reset();  // SIGKILL: its socket stays, as after an OOM kill or a crash
  // The Go registrar's start: remove the file at its path, listen there.
  ASSERT_EQ(unlink(reg_socket_.c_str()), 0) << "ours' socket was not at <driver>-reg.sock";
  class GoRegistrar final : public pluginregistration::Registration::Service {
   public:
    grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                         pluginregistration::PluginInfo* info) override {
      info->set_type("CSIPlugin");
      info->set_name(kDriverName);
      info->set_endpoint(kKubeletPath);
      info->add_supported_versions("1.0.0");
      return grpc::Status::OK;
    }
    grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                          const pluginregistration::RegistrationStatus* status,
                                          pluginregistration::RegistrationStatusResponse*) override {
      (status->plugin_registered() ? registered : refused) = true;
      return grpc::Status::OK;
    }
    std::atomic<bool> registered{false}, refused{false};
  } go;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + reg_socket_, grpc::InsecureServerCredentials());
  builder.RegisterService(&go);
  auto server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(PollUntil([&] { return go.registered || go.refused; }));
  EXPECT_TRUE(go.registered);
  EXPECT_FALSE(go.refused) << "kubelet still held the driver under another socket";
  EXPECT_EQ(kubelet.names(), std::set<std::string>{name});
  server->Shutdown(std::chrono::system_clock::now());
}

// Whoever else calls GetInfo (kubeletclient probe, another registrar's health check during an
// overlap) changes nothing: the socket stays at its one path, and a kubelet that never retries by
// itself (v1.26) gets it again there.
TEST_F(RegistrarTest, AnotherGetInfoCallerNeverMovesTheSocket) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar({"--registration-backoff-cap=2s"});
  ASSERT_TRUE(PollUntil([&] { return IsSocket(reg_socket_); })) << RegistrarLog();
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(GetInfo(reg_socket_, &info).ok());  // the other caller, before kubelet
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, reg_dir_, BackoffKubelet::Release::kV126, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 1; })) << RegistrarLog();
  for (int i = 0; i < 5; ++i) GetInfo(reg_socket_, &info);  // more of them, soon after
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 3; })) << RegistrarLog();
  api_away = false;
  ASSERT_TRUE(PollUntil([&] { return kubelet.registered(name); })) << RegistrarLog();
  EXPECT_EQ(kubelet.names(), std::set<std::string>{name});
  EXPECT_THAT(RegistrarLog(), Not(HasSubstr("-reg-1.sock")));
}

// kubelet dials the socket by its path on the host, which a long kubelet root (k0s, MicroK8s)
// makes longer than the container's: here the host's path leaves room for <driver>-reg.sock and
// not one byte more, and the driver is registered after an outage all the same.
TEST_F(RegistrarTest, ALongHostPathLeavesRoomForTheOneName) {
  auto driver = StartDriver();
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  // sun_path holds 107 bytes: the host's directory is as long as leaves exactly that.
  const std::string host_dir =
      dir_.Join(std::string(107 - 1 - name.size() - dir_.Join("").size(), 'h'));
  ASSERT_EQ(host_dir.size() + 1 + name.size(), 107u);
  ASSERT_EQ(symlink(reg_dir_.c_str(), host_dir.c_str()), 0) << host_dir;
  std::atomic<bool> api_away{true};
  BackoffKubelet kubelet(reg_dir_, host_dir, BackoffKubelet::Release::kV136, absl::Seconds(2),
                         [&] { return api_away ? std::string(kApiServerAway) : ""; });
  auto registrar = StartRegistrar({"--registration-backoff-cap=2s"});
  ASSERT_TRUE(PollUntil([&] { return kubelet.attempts(name).size() >= 4; })) << RegistrarLog();
  api_away = false;
  ASSERT_TRUE(PollUntil([&] { return kubelet.registered(name); })) << RegistrarLog();
  EXPECT_EQ(kubelet.names(), std::set<std::string>{name});
}

// Release 1.2.0 offered its socket under later names after an outage; a stale one it left (a
// registrar killed there) is removed at start, so that kubelet deregisters it, and the socket is
// served at <driver>-reg.sock, where the Go registrar serves too.
TEST_F(RegistrarTest, RemovesAStaleSocketAnEarlierReleaseLeftUnderALaterName) {
  const std::string third = reg_dir_ + "/" + kDriverName + "-reg-3.sock";
  {
    // A stale socket, as a registrar killed there leaves it.
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, third.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  EXPECT_FALSE(IsSocket(third));
  EXPECT_THAT(RegistrarLog(), HasSubstr(absl::StrCat("Removed registration socket\" path=\"",
                                                     third, "\"")));
  EXPECT_TRUE(Notify(reg_socket_, true, "").ok());
  EXPECT_TRUE(registrar->Signal(SIGTERM));
  EXPECT_EQ(registrar->Wait(), 0) << RegistrarLog();
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
}

// Refusals whose reason does not pass by itself end the registrar with kubelet's reason, as the
// Go registrar ends on every refusal: the driver's other NodeGetInfo codes, an admission
// webhook's denial, the Node gone.
TEST_F(RegistrarTest, RefusalsThatDoNotPassByThemselvesEndIt) {
  auto driver = StartDriver();
  for (const std::string& error : {
           std::string("RegisterPlugin error -- plugin registration failed with err: rpc error: "
                       "code = Internal desc = cannot read the node's metadata"),
           std::string("RegisterPlugin error -- plugin registration failed with err: rpc error: "
                       "code = NotFound desc = no such instance"),
           std::string("RegisterPlugin error -- plugin registration failed with err: rpc error: "
                       "code = PermissionDenied desc = the driver's credentials are refused"),
           std::string("RegisterPlugin error -- plugin registration failed with err: error "
                       "updating Node object with CSI driver node info: error updating node: "
                       "timed out waiting for the condition; caused by: admission webhook "
                       "\"nodes.policy.example.com\" denied the request: labels may not change"),
           std::string("RegisterPlugin error -- plugin registration failed with err: error "
                       "updating Node object with CSI driver node info: error updating node: "
                       "timed out waiting for the condition; caused by: nodes \"node-1\" not "
                       "found"),
       }) {
    SCOPED_TRACE(error);
    auto registrar = StartRegistrar();
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
    ASSERT_TRUE(Notify(reg_socket_, false, error).ok());
    EXPECT_EQ(registrar->Wait(), 1) << RegistrarLog();
    const std::vector<std::string> lines =
        absl::StrSplit(RegistrarLog(), '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty());
    EXPECT_THAT(lines.back(), HasSubstr(error));
    EXPECT_THAT(RegistrarLog(), HasSubstr("refusal=\"permanent\""));
    registrar.reset();
    unlink(dir_.Join("registrar.log").c_str());
  }
}

// A refusal no retry gets past, or one kubelet does not send: the registrar exits 1, as the Go
// registrar does for every refusal, and its last line gives kubelet's reason and what it means.
TEST_F(RegistrarTest, PermanentAndUnknownRefusalsEndItWithKubeletsReason) {
  auto driver = StartDriver();
  const struct {
    const char* error;
    const char* kind;
  } cases[] = {
      {"RegisterPlugin error -- plugin registration failed with err: error adding CSI driver "
       "node info: driverNodeID must not be empty",
       "permanent"},
      {"RegisterPlugin error -- plugin registration failed with err: error updating Node object "
       "with CSI driver node info: error updating node: timed out waiting for the condition; "
       "caused by: detected topology value collision: driver reported \"topology.x/zone\":\"a\" "
       "but existing label is \"topology.x/zone\":\"b\"",
       "permanent"},
      {"RegisterPlugin error -- plugin validation failed with err: validation failed for CSI "
       "Driver sample.csi.example.com at endpoint /csi.sock: kubernetes.io/csi: ValidatePlugin "
       "for CSI driver \"sample.csi.example.com\" failed. None of the versions specified "
       "[\"0.3.0\"] are supported. err=highest supported version reported is 0.3.0, must be v1.x",
       "permanent"},
      {"RegisterPlugin error -- plugin registration failed with err: error updating CSINode "
       "object with CSI driver node info: error updating CSINode: timed out waiting for the "
       "condition; caused by: CSINode.storage.k8s.io \"node-1\" is invalid: "
       "spec.drivers[0].nodeID: Too long: may not be more than 256 bytes",
       "permanent"},
      {"a reason no kubelet gives", "unknown"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.error);
    auto registrar = StartRegistrar();
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
    ASSERT_TRUE(Notify(reg_socket_, false, c.error).ok());
    EXPECT_EQ(registrar->Wait(), 1) << RegistrarLog();
    const std::vector<std::string> lines =
        absl::StrSplit(RegistrarLog(), '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty());
    EXPECT_THAT(lines.back(), HasSubstr(c.error));
    const std::string log = RegistrarLog();
    EXPECT_THAT(log, HasSubstr(absl::StrCat("refusal=\"", c.kind, "\"")));
    EXPECT_FALSE(IsSocket(reg_socket_));
    registrar.reset();
    unlink(dir_.Join("registrar.log").c_str());
  }
}

// Kubelet could not dial the driver at the endpoint it was given: before the exit, one warning
// names --kubelet-registration-path, its value, the cause and the usual host paths.
TEST_F(RegistrarTest, ARefusalForAnUndiallableDriverSaysWhichFlagIsWrong) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  // Kubelet v1.26's words (csi_plugin.go RegisterPlugin's NodeGetInfo, gRPC-Go's dial error).
  const std::string error = absl::StrCat(
      "RegisterPlugin error -- plugin registration failed with err: rpc error: code = "
      "Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix ",
      kKubeletPath, ": connect: no such file or directory\"");
  ASSERT_TRUE(Notify(reg_socket_, false, error).ok());
  EXPECT_EQ(registrar->Wait(), 1);
  const std::string log = RegistrarLog();
  EXPECT_THAT(log, HasSubstr(absl::StrCat("Kubelet could not reach the driver at "
                                          "--kubelet-registration-path=",
                                          kKubeletPath, ": connect: no such file or directory. ")));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("/var/lib/kubelet/plugins/", kDriverName, "/csi.sock")));
  EXPECT_THAT(log, HasSubstr(error));  // and the refusal itself, as before
}

// No kubelet ever looks at the socket: at the watchdog's first expiry, one warning names
// --plugin-registration-path and kubelet's usual registry directories, and /metrics shows the
// sign until a kubelet confirms the registration.
TEST_F(RegistrarTest, AnUnwatchedRegistryIsSaidOnceAndShownInMetrics) {
  auto driver = StartDriver();
  auto registrar =
      StartRegistrar({"--registration-retry-after=100ms", "--http-endpoint=127.0.0.1:0"});
  ASSERT_TRUE(PollUntil([&] { return Reoffers(RegistrarLog()) >= 3; })) << RegistrarLog();
  std::string log = RegistrarLog();
  const std::string hint = absl::StrCat(
      "Kubelet has not asked the registration socket for its info (no GetInfo) within 100ms: "
      "kubelet is most likely not watching the directory it is in. --plugin-registration-path=",
      reg_dir_, " must be");
  EXPECT_THAT(log, HasSubstr(hint));
  EXPECT_EQ(log.find(hint), log.rfind(hint)) << "said more than once:\n" << log;
  const int port = ServedHttpPort(log);
  ASSERT_NE(port, 0) << log;
  std::string body;
  ASSERT_EQ(HttpGet(port, "/metrics", &body), 200);
  EXPECT_THAT(body, HasSubstr("\ncsi_node_driver_registrar_path_problem"
                              "{sign=\"unwatched_registry\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("\ncsi_node_driver_registrar_path_problem"
                              "{sign=\"driver_unreachable\"} 0\n"));
  // A kubelet starts watching: the next offer is confirmed, and the sign goes.
  PolicyKubelet kubelet(reg_socket_, [](int) { return true; });
  ASSERT_TRUE(PollUntil([&] { return kubelet.confirmed() >= 1; })) << RegistrarLog();
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           body.find("path_problem{sign=\"unwatched_registry\"} 0\n") != std::string::npos;
  })) << body;
}

// 7. SIGTERM and SIGINT both remove the socket and exit 0.
TEST_F(RegistrarTest, SigtermAndSigintExit0AndRemoveTheSocket) {
  auto driver = StartDriver();
  for (int signal : {SIGTERM, SIGINT}) {
    auto registrar = StartRegistrar();
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
    EXPECT_TRUE(registrar->Signal(signal));
    EXPECT_EQ(registrar->Wait(), 0) << "signal " << signal;
    EXPECT_FALSE(IsSocket(reg_socket_)) << "signal " << signal;
    EXPECT_THAT(DirEntries(reg_dir_), ::testing::IsEmpty());
  }
}

// 7. A registrar stopping must not delete the socket a newer registrar put at the same path
// (a rolling update): the newer one replaced it, so it is no longer ours.
TEST_F(RegistrarTest, StoppingLeavesANewerRegistrarsSocket) {
  auto driver = StartDriver();
  auto old_registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const ino_t old_inode = Inode(reg_socket_);
  auto new_registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Inode(reg_socket_) != old_inode && Serving(); }));
  const ino_t new_inode = Inode(reg_socket_);
  ASSERT_TRUE(PollUntil([&] {
    return RegistrarLog().find("which answers; leaving the registration to that process") !=
           std::string::npos;
  })) << RegistrarLog();
  EXPECT_TRUE(old_registrar->Signal(SIGTERM));
  EXPECT_EQ(old_registrar->Wait(), 0);
  EXPECT_EQ(Inode(reg_socket_), new_inode);
  EXPECT_TRUE(Serving());
}

// The registration watchdog (registration_watchdog.h), against three kinds of kubelet: one that
// never confirms, one that confirms only the second offer, one that confirms at once.
TEST_F(RegistrarTest, WatchdogOffersAgainWhileKubeletNeverConfirms) {
  auto driver = StartDriver();
  PolicyKubelet kubelet(reg_socket_, [](int) { return false; });
  auto registrar = StartRegistrar({"--registration-retry-after=200ms",
                                   "--http-endpoint=127.0.0.1:0"});
  ASSERT_TRUE(PollUntil([&] { return kubelet.offers() >= 4; })) << RegistrarLog();
  EXPECT_TRUE(registrar->Running());
  // Each re-offer says why, and how long the next wait is: doubling from 200ms.
  const std::string log = RegistrarLog();
  EXPECT_THAT(log, HasSubstr("Kubelet has not confirmed the registration (no "
                             "NotifyRegistrationStatus) within 200ms; offering the socket again"));
  EXPECT_THAT(log, HasSubstr("within 400ms; offering"));
  EXPECT_THAT(log, HasSubstr("within 800ms; offering"));
  EXPECT_THAT(log, HasSubstr("offer=2 nextWait=\"400ms\""));
  EXPECT_THAT(log, HasSubstr("offer=4 nextWait=\"1.6s\""));
  // This kubelet asks for the info: the registry is watched, no hint about the directory.
  EXPECT_THAT(log, ::testing::Not(HasSubstr("has not asked the registration socket")));
  const int port = ServedHttpPort(log);
  ASSERT_NE(port, 0) << log;
  std::string body;
  ASSERT_EQ(HttpGet(port, "/metrics", &body), 200);
  EXPECT_THAT(body, ::testing::ContainsRegex(
                        "\ncsi_node_driver_registrar_registration_reoffers_total [3-9]\n"));
  // /healthz is as it always was: the socket is there and answers.
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 200) << body;
}

TEST_F(RegistrarTest, WatchdogStopsOnceKubeletConfirmsTheSecondOffer) {
  auto driver = StartDriver();
  PolicyKubelet kubelet(reg_socket_, [](int offer) { return offer >= 2; });
  auto registrar = StartRegistrar({"--registration-retry-after=300ms"});
  ASSERT_TRUE(PollUntil([&] { return kubelet.confirmed() >= 1; })) << RegistrarLog();
  const int confirmed_offer = kubelet.first_confirmed_offer();
  EXPECT_GE(confirmed_offer, 2);
  // Had the watchdog not stood down, it would have offered again by the time the witness did.
  WaitForWitness(absl::Milliseconds(300), confirmed_offer);
  EXPECT_TRUE(registrar->Running());
  EXPECT_EQ(Reoffers(RegistrarLog()), confirmed_offer - 1) << RegistrarLog();
  EXPECT_EQ(kubelet.offers(), confirmed_offer);
}

TEST_F(RegistrarTest, WatchdogNeverDisturbsAConfirmedRegistration) {
  auto driver = StartDriver();
  PolicyKubelet kubelet(reg_socket_, [](int) { return true; });
  // 3s: far longer than kubelet here takes to answer (an inotify event and two local calls).
  auto registrar = StartRegistrar({"--registration-retry-after=3s"});
  ASSERT_TRUE(PollUntil([&] { return kubelet.confirmed() >= 1; })) << RegistrarLog();
  WaitForWitness(absl::Seconds(3), 1);
  EXPECT_TRUE(registrar->Running());
  EXPECT_EQ(Reoffers(RegistrarLog()), 0) << RegistrarLog();
  EXPECT_EQ(kubelet.offers(), 1);
  EXPECT_TRUE(Serving());
}

// The default watchdog outlasts kubelet's longest registration (2 min 17.7 s: registration_
// watchdog.h). A kubelet that asks GetInfo at once and confirms over the same connection 2 min 10 s
// later, as one whose driver took nearly all of csiTimeout for NodeGetInfo does, sees no second
// offer: not before it confirms, nor by the time the default's first wait (3 min) has passed.
TEST_F(RegistrarTest, TheDefaultWatchdogLetsAKubeletConfirmAfter2m10s) {
  const std::string name = reg_socket_.substr(reg_socket_.rfind('/') + 1);
  const int watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(watch, 0);
  inotify_add_watch(watch, reg_dir_.c_str(), IN_CREATE | IN_MOVED_TO);
  int appeared = 0;  // the socket's appearances, as kubelet's plugin watcher sees them
  auto appearances = [&] {
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = read(watch, buffer, sizeof(buffer))) > 0;) {
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + event->len;
        if (event->len != 0 && name == event->name) ++appeared;
      }
    }
    return appeared;
  };
  auto driver = StartDriver();
  auto registrar = StartRegistrar();  // --registration-retry-after left at its default
  ASSERT_TRUE(PollUntil([&] { return appearances() >= 1; })) << RegistrarLog();
  // The witness: the same wait as the default, started after ours, so that once it has offered
  // again ours would have too.
  const std::string witness_dir = dir_.Join("witness");
  ASSERT_EQ(mkdir(witness_dir.c_str(), 0755), 0);
  auto witness = StartRegistrar({"--registration-retry-after=3m"}, witness_dir, "witness.log");
  // Kubelet's connection, kept from GetInfo to its verdict (operation_generator.go).
  std::shared_ptr<grpc::Channel> kubelet = Channel(reg_socket_);
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(pluginregistration::Registration::NewStub(kubelet)
                  ->GetInfo(Context().get(), {}, &info)
                  .ok())
      << RegistrarLog();
  const ino_t first = Inode(reg_socket_);
  // Kubelet is busy with NodeGetInfo and the CSINode for 2 min 10 s; the socket must stay.
  EXPECT_FALSE(PollUntil([&] { return appearances() > 1 || !registrar->Running(); },
                         absl::Minutes(2) + absl::Seconds(10), absl::Milliseconds(100)))
      << RegistrarLog();
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  EXPECT_TRUE(pluginregistration::Registration::NewStub(kubelet)
                  ->NotifyRegistrationStatus(Context().get(), status, &response)
                  .ok())
      << RegistrarLog();
  std::string witness_log;
  ASSERT_TRUE(PollUntil(
      [&] {
        ReadFile(dir_.Join("witness.log"), &witness_log);
        return Reoffers(witness_log) >= 1;
      },
      absl::Minutes(3) + ::ndr::testing::kPatience))
      << witness_log;
  close(watch);
  EXPECT_TRUE(registrar->Running());
  EXPECT_EQ(Reoffers(RegistrarLog()), 0) << RegistrarLog();
  EXPECT_EQ(appeared, 1);
  EXPECT_EQ(Inode(reg_socket_), first);
  EXPECT_TRUE(Serving());
}

// 8. A deleted registration socket is recreated, from the filesystem event.
TEST_F(RegistrarTest, RecreatesADeletedSocket) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ(unlink(reg_socket_.c_str()), 0);
    ASSERT_TRUE(PollUntil([&] { return IsSocket(reg_socket_); })) << RegistrarLog();
    EXPECT_TRUE(Serving());
    const std::string log = RegistrarLog();
    size_t recreations = 0;
    for (size_t at = 0; (at = log.find("was deleted; creating it again", at)) != std::string::npos;
         ++at) {
      ++recreations;
    }
    EXPECT_EQ(recreations, static_cast<size_t>(i));
  }
}

// 8. Replaced by a regular file: left untouched, an error logged, /healthz 404; once the file is
// gone the socket comes back.
TEST_F(RegistrarTest, ReplacedByARegularFile) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar({"--http-endpoint=127.0.0.1:0"});
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const int port = ServedHttpPort(RegistrarLog());
  ASSERT_NE(port, 0) << RegistrarLog();
  const std::string temp = reg_dir_ + "/.tmp";
  ASSERT_TRUE(WriteFile(temp, "not a socket"));
  ASSERT_EQ(rename(temp.c_str(), reg_socket_.c_str()), 0);
  ASSERT_TRUE(PollUntil([&] {
    return RegistrarLog().find("replaced by a file that is not a socket") != std::string::npos;
  })) << RegistrarLog();
  std::string body;
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 404);
  std::string contents;
  ASSERT_TRUE(ReadFile(reg_socket_, &contents));
  EXPECT_EQ(contents, "not a socket");
  EXPECT_TRUE(registrar->Running());

  ASSERT_EQ(unlink(reg_socket_.c_str()), 0);
  EXPECT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  EXPECT_EQ(HttpGet(port, "/healthz", &body), 200);
}

// 8. A driver restart is noticed; the same name keeps the socket, a new name moves it.
TEST_F(RegistrarTest, FollowsDriverRestarts) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();

  driver.reset();  // SIGKILL: the socket file stays behind, as after a crash.
  driver = StartDriver();
  ASSERT_TRUE(PollUntil([&] {
    return RegistrarLog().find("answered again with the same name") != std::string::npos;
  })) << RegistrarLog();
  EXPECT_TRUE(Serving());

  ASSERT_TRUE(driver->Signal(SIGTERM));
  ASSERT_EQ(driver->Wait(), 0);
  driver = StartDriver("renamed.example.com");
  ASSERT_TRUE(PollUntil([&] { return Serving("renamed.example.com"); })) << RegistrarLog();
  EXPECT_FALSE(IsSocket(reg_socket_));
  EXPECT_THAT(DirEntries(reg_dir_), ::testing::ElementsAre("renamed.example.com-reg.sock"));
  const std::string log = RegistrarLog();
  EXPECT_THAT(log, HasSubstr("appeared again: the driver restarted"));
  EXPECT_THAT(log, HasSubstr("\"CSI driver name changed: moving the registration socket\" "
                             "from=\"sample.csi.example.com\" to=\"renamed.example.com\""));
}

// 9. /healthz with the Go semantics and /metrics in Prometheus format.
TEST_F(RegistrarTest, HealthzAndMetrics) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar({"--http-endpoint=127.0.0.1:0"});
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const int port = ServedHttpPort(RegistrarLog());
  ASSERT_NE(port, 0) << RegistrarLog();
  std::string body;
  ASSERT_EQ(HttpGet(port, "/healthz", &body), 200);
  EXPECT_EQ(body, "ok");

  // Another live registration server for another driver takes the path: GetInfo names another
  // driver, so /healthz answers 500.
  class Other final : public pluginregistration::Registration::Service {
    grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                         pluginregistration::PluginInfo* info) override {
      info->set_name("impostor.example.com");
      return grpc::Status::OK;
    }
  } other;
  const std::string other_bind = reg_dir_ + "/.other.sock";
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + other_bind, grpc::InsecureServerCredentials());
  builder.RegisterService(&other);
  auto other_server = builder.BuildAndStart();
  ASSERT_EQ(rename(other_bind.c_str(), reg_socket_.c_str()), 0);
  ASSERT_TRUE(PollUntil([&] { return HttpGet(port, "/healthz", &body) == 500; })) << body;
  EXPECT_THAT(body, HasSubstr("impostor.example.com"));
  // The registrar left the other process's live socket alone.
  EXPECT_EQ(InfoName(reg_socket_), "impostor.example.com");
  other_server->Shutdown(std::chrono::system_clock::now());

  ASSERT_EQ(HttpGet(port, "/metrics", &body), 200);
  EXPECT_THAT(body, HasSubstr("# TYPE csi_node_driver_registrar_registrations_total counter"));
  EXPECT_THAT(body, HasSubstr("csi_node_driver_registrar_health_checks_total{result=\"ok\"} 1"));
  EXPECT_THAT(body,
              HasSubstr("csi_node_driver_registrar_health_checks_total{result=\"failed\"}"));
  EXPECT_THAT(body, Not(HasSubstr("csi_node_driver_registrar_health_checks_total{result=\"failed\"} 0")));
  ASSERT_EQ(HttpGet(port, "/nope", &body), 404);
}

// 9. /metrics counts registrations, refusals, recreations and driver reconnects.
TEST_F(RegistrarTest, MetricsCountEvents) {
  auto driver = StartDriver();
  auto registrar = StartRegistrar({"--http-endpoint=127.0.0.1:0"});
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  const int port = ServedHttpPort(RegistrarLog());
  ASSERT_NE(port, 0) << RegistrarLog();
  ASSERT_TRUE(Notify(reg_socket_, true, "").ok());
  ASSERT_TRUE(Notify(reg_socket_, true, "").ok());
  ASSERT_EQ(unlink(reg_socket_.c_str()), 0);
  ASSERT_TRUE(PollUntil([&] { return Serving(); }));
  driver.reset();
  driver = StartDriver();
  std::string body;
  ASSERT_TRUE(PollUntil([&] {
    return HttpGet(port, "/metrics", &body) == 200 &&
           body.find("csi_node_driver_registrar_driver_reconnects_total 1") != std::string::npos;
  })) << body;
  EXPECT_THAT(body, HasSubstr("csi_node_driver_registrar_registrations_total 2\n"));
  EXPECT_THAT(body, HasSubstr("csi_node_driver_registrar_registration_refusals_total 0\n"));
  EXPECT_THAT(body, HasSubstr("csi_node_driver_registrar_socket_recreations_total 1\n"));
}

// 10. One line per state change at --v=0; each RPC's details at --v=4.
TEST_F(RegistrarTest, VerbosityShowsRpcDetails) {
  auto driver = StartDriver();
  auto quiet = StartRegistrar();
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  EXPECT_THAT(RegistrarLog(), Not(HasSubstr("GetInfo answer")));
  quiet->Signal(SIGTERM);
  ASSERT_EQ(quiet->Wait(), 0);

  auto verbose = StartRegistrar({"--v=4"});
  ASSERT_TRUE(PollUntil([&] { return Serving(); })) << RegistrarLog();
  ASSERT_TRUE(PollUntil([&] { return RegistrarLog().find("GetInfo answer") != std::string::npos; }));
  EXPECT_THAT(RegistrarLog(), HasSubstr("GetPluginInfo on " + csi_socket_));
}

}  // namespace
}  // namespace ndr

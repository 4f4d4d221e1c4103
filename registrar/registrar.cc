#include "registrar/registrar.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <mutex>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/endpoint.h"
#include "api/go_duration.h"
#include "grpc/grpc.h"
#include "logging/logging.h"
#include "registrar/health.h"
#include "registrar/path_hints.h"
#include "registrar/reg_socket.h"
#include "registrar/registration_watchdog.h"

namespace ndr::registrar {

using ::ndr::logging::Err;
using ::ndr::logging::Kv;
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

absl::Status ErrnoError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Registrar::GrpcLifetime::GrpcLifetime() { grpc_init(); }
Registrar::GrpcLifetime::~GrpcLifetime() { Release(); }
void Registrar::GrpcLifetime::Release() {
  if (!held) return;
  held = false;
  grpc_shutdown();
}

namespace {

// Seeded from the kernel, so that no two registrars of a fleet draw the same waits.
uint64_t RandomSeed() {
  absl::StatusOr<uint64_t> seed = registration_server_internal::KernelRandom();
  return seed.ok() ? *seed : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^ getpid();
}

}  // namespace

Registrar::Registrar(Options options)
    : options_(std::move(options)),
      random_(RandomSeed()),
      lifecycle_({options_.registration_retry_after, options_.registration_backoff_cap},
                 [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }) {}

Registrar::~Registrar() {
  prober_.reset();
  http_.reset();
  server_.reset();
  for (int fd : {signal_fd_, inotify_fd_, wake_fd_, timer_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void Registrar::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

absl::Status Registrar::Start() {
  // Sockets are created 0700 and files 0600 from the start: never accessible to group or others.
  umask(077);
  if (options_.pprof_requested) {
    NDR_LOG(WARNING) << "--enable-pprof has no effect: this registrar is not a Go program";
  }
  // The Go registrar's words (v2.17.0 cmd/csi-node-driver-registrar/main.go, main): the flag is
  // accepted and ignored, and the registrar waits for its driver however long it takes.
  if (options_.connection_timeout != absl::ZeroDuration()) {
    NDR_LOG(INFO) << "--connection-timeout is deprecated and will have no effect";
  }
  if (!options_.unknown_mode.empty()) {
    NDR_LOG(WARNING) << "--mode=" << options_.unknown_mode
                     << " is neither registration nor kubelet-registration-probe; registering, "
                        "as the Go registrar does for any value but kubelet-registration-probe";
  }
  if (absl::Status s = CheckRegistrationDir(options_.plugin_registration_dir); !s.ok()) return s;

  sigset_t signals = TerminationSignals();
  signal_fd_ = signalfd(-1, &signals, SFD_CLOEXEC);
  if (signal_fd_ < 0) return ErrnoError("signalfd");
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return ErrnoError("eventfd");
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer_fd_ < 0) return ErrnoError("timerfd_create");
  // The driver is asked first, so that its answer is on its way while the rest is set up: the
  // round trip is most of the time from exec to the registration socket. Nothing it reports is
  // looked at before Start() returns.
  prober_ = std::make_unique<DriverProber>(options_.csi_socket_path, options_.timeout,
                                           [this] { Wake(); });
  // At -v=2: the default log is no chattier than the Go registrar's (docs/registrar.md, "Logs");
  // a driver that does not answer is reported at -v=0 after 10 s, with the address and the error.
  NDR_VLOG(2) << "Asking the CSI driver for its name" << Kv("csiAddress", options_.csi_socket_path);
  prober_->Query();
  inotify_fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd_ < 0 && errno == EMFILE) {
    return absl::ResourceExhaustedError(
        "inotify_init1: this user has no inotify instances left; each registrar needs one, so "
        "raise the node's fs.inotify.max_user_instances (sysctl)");
  }
  if (inotify_fd_ < 0) return ErrnoError("inotify_init1");

  registration_dir_watch_ = inotify_add_watch(
      inotify_fd_, options_.plugin_registration_dir.c_str(),
      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
          IN_ONLYDIR);
  if (registration_dir_watch_ < 0) {
    return ErrnoError(absl::StrCat("watch ", options_.plugin_registration_dir));
  }
  const std::string csi_dir = DirName(options_.csi_socket_path);
  csi_socket_name_ = BaseName(options_.csi_socket_path);
  csi_dir_watch_ = inotify_add_watch(inotify_fd_, csi_dir.c_str(),
                                     IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                         IN_ONLYDIR);
  if (csi_dir_watch_ < 0) {
    NDR_LOG(WARNING) << "Cannot watch the CSI driver's socket directory " << csi_dir << " ("
                 << strerror(errno) << "): a restarting driver will not be noticed";
  }

  if (options_.serve_http) {
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
        options_.http_host, options_.http_port,
        [this](const std::string& path) { return HandleHttp(path); });
    if (!http.ok()) {
      return absl::Status(http.status().code(),
                          absl::StrCat("--http-endpoint: ", http.status().message()));
    }
    http_ = *std::move(http);
    NDR_LOG(INFO) << "Serving /healthz and /metrics"
                  << Kv("address", absl::StrCat(options_.http_host.empty() ? "*"
                                                                           : options_.http_host,
                                                ":", http_->port()));
  }
  return absl::OkStatus();
}

absl::Status Registrar::Run() {
  if (absl::Status s = Start(); !s.ok()) return s;
  while (true) {
    absl::StatusOr<bool> running = HandleEvents(absl::InfiniteDuration());
    if (!running.ok()) return running.status();
    if (!*running) return absl::OkStatus();
  }
}


absl::StatusOr<bool> Registrar::HandleEvents(absl::Duration timeout) {
  pollfd fds[] = {{signal_fd_, POLLIN, 0},
                  {inotify_fd_, POLLIN, 0},
                  {wake_fd_, POLLIN, 0},
                  {timer_fd_, POLLIN, 0}};
  const int timeout_ms =
      timeout == absl::InfiniteDuration() ? -1 : static_cast<int>(absl::ToInt64Milliseconds(timeout));
  if (poll(fds, 4, timeout_ms) < 0) {
    if (errno == EINTR) return true;
    return ErrnoError("poll");
  }
  if (fds[0].revents & POLLIN) {
    if (absl::Status s = HandleSignal(); !s.ok()) return s;
    return false;
  }
  // The socket's own changes first, so that a verdict that arrived meanwhile is judged against
  // the socket as it is now.
  if (fds[1].revents & POLLIN) {
    if (absl::Status s = HandleInotify(); !s.ok()) return s;
  }
  if (fds[2].revents & POLLIN) {
    if (absl::Status s = HandleWakeup(); !s.ok()) return s;
  }
  if (fds[3].revents & POLLIN) {
    if (absl::Status s = HandleWatchdog(); !s.ok()) return s;
  }
  return true;
}

absl::Status Registrar::HandleSignal() {
  signalfd_siginfo info;
  (void)!read(signal_fd_, &info, sizeof(info));
  NDR_LOG(INFO) << "Received a signal: removing the registration socket and exiting"
                << Kv("signal", info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
  prober_->Stop();
  StopServer();
  lifecycle_.Stopped();
  return absl::OkStatus();
}

void Registrar::StopServer() {
  if (server_ == nullptr) return;
  // The socket goes first, so that kubelet deregisters the driver at once.
  RemoveIfOurs(server_->path(), server_->id());
  server_.reset();
}

absl::Status Registrar::HandleWakeup() {
  uint64_t count;
  (void)!read(wake_fd_, &count, sizeof(count));
  std::vector<Notice> notices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    notices.swap(notices_);
  }
  for (const Notice& notice : notices) {
    if (absl::Status s = HandleNotice(notice); !s.ok()) return s;
  }
  std::optional<absl::StatusOr<std::string>> result = prober_->TakeResult();
  if (!result.has_value()) return absl::OkStatus();
  if (!result->ok()) {
    if (absl::IsCancelled(result->status())) return absl::OkStatus();
    return result->status();
  }
  return HandleDriverName(**result);
}

absl::Status Registrar::HandleDriverName(const std::string& name) {
  if (wanted_.has_value() && wanted_->driver_name == name) {
    NDR_LOG(INFO) << "CSI driver answered again with the same name: the registration stays as it is"
                  << Kv("driver", name);
    return Reconcile();
  }
  absl::StatusOr<std::string> path =
      RegistrationSocketPath(options_.plugin_registration_dir, name);
  if (!path.ok()) return path.status();
  RegistrationInfo info{name, options_.kubelet_registration_path, options_.requires_publish_pod};
  if (wanted_.has_value()) {
    NDR_LOG(INFO) << "CSI driver name changed: moving the registration socket"
                  << Kv("from", wanted_->driver_name) << Kv("to", name)
                  << Kv("oldPath", wanted_path_) << Kv("path", *path);
  } else {
    NDR_LOG(INFO) << "CSI driver name learnt" << Kv("driver", name);
  }
  StopServer();
  blocked_ = yielded_ = false;
  wanted_ = info;
  wanted_path_ = *path;
  const bool removed = RemoveReleasedRotatedSockets(*path);
  const RegistrationLifecycle::Decision named = lifecycle_.DriverNamed(removed);
  if (named.timer.has_value()) SetTimer(*named.timer);
  SyncState();
  // A socket already at the path is replaced, live or stale, as the Go registrar does at start:
  // during a rolling update the newer registrar must win. A file that is not a socket there ends
  // it, as it ends the Go one.
  return StartServer(wanted_path_, info);
}

bool Registrar::RemoveReleasedRotatedSockets(const std::string& primary) {
  bool removed = false;
  for (int i = 1; i < kRegistrationSocketNames; ++i) {
    absl::StatusOr<std::string> other = RegistrationSocketPathAt(primary, i);
    if (!other.ok() || Inspect(*other, std::nullopt) != PathState::kSocket) continue;
    absl::StatusOr<FileId> id = SocketId(*other);
    if (!id.ok()) continue;
    if (UnixSocketAnswers(*other)) {
      NDR_LOG(WARNING) << "Another process serves this driver's registration under a name release "
                          "1.2.0 used after an outage; kubelet refuses a second socket of the "
                          "driver until that one goes (it is left alone)"
                       << Kv("path", *other) << Kv("ours", primary);
      continue;
    }
    // A registrar of release 1.2.0 killed there left it. kubelet holds the driver by that path
    // until the socket is deleted (plugin_watcher.go handleDeleteEvent), and would refuse this
    // one, or the Go registrar's after a rollback, as a second driver of the same name.
    RemoveIfOurs(*other, *id);
    removed = true;
  }
  return removed;
}

absl::Status Registrar::StartServer(const std::string& path, const RegistrationInfo& info) {
  const uint64_t generation = generation_ + 1;
  absl::StatusOr<std::unique_ptr<RegistrationServer>> server = RegistrationServer::Start(
      path, info, [this, generation](const Verdict& verdict) { OnNotify(generation, verdict); },
      options_.max_pollers);
  if (!server.ok()) return server.status();
  server_ = *std::move(server);
  generation_ = generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    health_path_ = path;
    health_name_ = info.driver_name;
  }
  NDR_LOG(INFO) << "Registration socket serving" << Kv("path", path)
                << Kv("driver", info.driver_name) << Kv("endpoint", info.endpoint)
                << Kv("requiresPublishPod", info.requires_publish_pod);
  return Apply(lifecycle_.SocketServed(generation));
}

void Registrar::SetTimer(absl::Duration wait) {
  itimerspec spec{};  // all zero: disarmed
  if (wait != absl::InfiniteDuration()) {
    spec.it_value = absl::ToTimespec(wait);
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  }
  timerfd_settime(timer_fd_, 0, &spec, nullptr);
}

void Registrar::SyncState() {
  metrics_.registered = lifecycle_.registered() ? 1 : 0;
  metrics_.retrying = lifecycle_.retrying() ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  retrying_why_ = lifecycle_.retrying() ? lifecycle_.retrying_why() : "";
  withdrawn_ = lifecycle_.state() == RegistrationLifecycle::State::kBackingOff;
}

absl::Status Registrar::Apply(const RegistrationLifecycle::Decision& decision) {
  if (decision.timer.has_value()) SetTimer(*decision.timer);
  SyncState();
  switch (decision.step) {
    case RegistrationLifecycle::Step::kNothing:
      return absl::OkStatus();
    case RegistrationLifecycle::Step::kServe:
      return Reconcile(/*lost=*/false);
    case RegistrationLifecycle::Step::kRecreate:
      return Reconcile();
    case RegistrationLifecycle::Step::kReOffer:
      return ReOffer();
    case RegistrationLifecycle::Step::kWithdraw:
      // While the socket is not there, no kubelet tries it; when it is back, every kubelet tries
      // it at once (registration_lifecycle.h).
      StopServer();
      return absl::OkStatus();
    case RegistrationLifecycle::Step::kExit:
      prober_->Stop();
      StopServer();
      return absl::FailedPreconditionError(
          absl::StrCat("kubelet refused to register the driver: ", decision.reason));
  }
  return absl::OkStatus();
}

absl::Status Registrar::HandleWatchdog() {
  uint64_t expirations;
  if (read(timer_fd_, &expirations, sizeof(expirations)) != sizeof(expirations)) {
    return absl::OkStatus();  // Disarmed or re-armed since it fired.
  }
  if (!wanted_.has_value()) return absl::OkStatus();
  const RegistrationLifecycle::State state = lifecycle_.state();
  if (state == RegistrationLifecycle::State::kBackingOff) {
    ++metrics_.reoffers;
    NDR_LOG(INFO) << "Offering the registration socket again after kubelet's transient refusal"
                  << Kv("path", wanted_path_)
                  << Kv("attempt", lifecycle_.transient_refusals() + 1);
    return Apply(lifecycle_.TimerFired());
  }
  if (state != RegistrationLifecycle::State::kOffered) return absl::OkStatus();
  // Only the socket we serve, unconfirmed, is offered again; a path held by another file or
  // process is Reconcile's business.
  if (server_ == nullptr) return absl::OkStatus();
  if (Inspect(wanted_path_, server_->id()) != PathState::kOurs) return Reconcile();
  if (!server_->asked_for_info()) {
    // Not a slow kubelet: none has looked at this socket at all. Said once, until one does.
    if (metrics_.unwatched_registry.exchange(1) == 0) {
      NDR_LOG(WARNING) << UnwatchedRegistryHint(options_.plugin_registration_dir,
                                                RegistrationWait(options_.registration_retry_after,
                                                                 lifecycle_.unanswered_offers()))
                       << Kv("path", wanted_path_);
    }
  } else {
    metrics_.unwatched_registry = 0;
  }
  const absl::Duration waited =
      RegistrationWait(options_.registration_retry_after, lifecycle_.unanswered_offers());
  const absl::Duration next =
      RegistrationWait(options_.registration_retry_after, lifecycle_.unanswered_offers() + 1);
  ++metrics_.reoffers;
  NDR_LOG(WARNING) << "Kubelet has not confirmed the registration (no NotifyRegistrationStatus) "
                      "within "
                   << FormatGoDuration(waited)
                   << "; offering the socket again, as a new socket at the same path, so that "
                      "kubelet's plugin watcher sees it anew (kubelets before v1.36 do not retry "
                      "a registration that blocked or failed without a verdict)"
                   << Kv("path", wanted_path_) << Kv("offer", lifecycle_.unanswered_offers() + 2)
                   << Kv("nextWait", FormatGoDuration(next));
  return Apply(lifecycle_.TimerFired());
}

absl::Status Registrar::ReOffer() {
  // The old socket goes first, then a new one is served at the same path: kubelet sees the plugin
  // removed and added, and drops whatever it held for the old one.
  StopServer();
  absl::Status status = StartServer(wanted_path_, *wanted_);
  if (absl::IsFailedPrecondition(status)) {
    // A non-socket appeared in the moment between; wait for it to go away, as Reconcile does.
    NDR_LOG(ERROR) << status.message();
    blocked_ = true;
    return absl::OkStatus();
  }
  return status;
}

absl::Status Registrar::HandleNotice(const Notice& notice) {
  const Verdict& verdict = notice.verdict;
  if (verdict.registered) {
    if (notice.generation != generation_ || !lifecycle_.wants_socket()) {
      NDR_VLOG(2) << "Registration confirmed for a socket since replaced; the new one waits for "
                     "its own"
                  << Kv("path", wanted_path_);
      return absl::OkStatus();
    }
    if (absl::Status s = Apply(lifecycle_.Confirmed(notice.generation)); !s.ok()) return s;
    if (lifecycle_.registered()) {
      grpc_.Release();  // start-up is over: gRPC runs while there are connections, no longer
      metrics_.unwatched_registry = 0;
      metrics_.driver_unreachable = 0;
    }
    return absl::OkStatus();
  }
  // Kubelet's reason, by what it says of a retry (kubelet_refusal.h).
  const KubeletRefusal refusal = ClassifyKubeletRefusal(verdict.error);
  // A dial that fails for good names the flag to fix; one that fails for now (a driver restarting:
  // connection refused) is retried, and the flag is not to blame.
  if (std::optional<UnreachableDriver> unreachable = KubeletCouldNotDial(verdict.error);
      unreachable.has_value() && wanted_.has_value() &&
      refusal.kind != RefusalKind::kTransient) {
    metrics_.driver_unreachable = 1;
    NDR_LOG(WARNING) << UnreachableDriverHint(*unreachable, options_.kubelet_registration_path,
                                              options_.csi_socket_path, wanted_->driver_name);
  }
  RegistrationLifecycle::Refusal event;
  event.generation = notice.generation;
  event.after_get_info = verdict.after_get_info;
  event.path_still_ours =
      server_ != nullptr && Inspect(wanted_path_, server_->id()) == PathState::kOurs;
  event.kubelet = refusal;
  event.error = verdict.error;
  RegistrationLifecycle::RefusalOutcome outcome;
  const RegistrationLifecycle::Decision decision =
      lifecycle_.Refused(event, absl::Now(), &outcome);
  switch (outcome) {
    case RegistrationLifecycle::RefusalOutcome::kRetried:
      ++metrics_.refusals_transient;
      NDR_LOG(WARNING) << "Kubelet could not complete the registration for now; the socket is "
                          "withdrawn and offered anew after the wait, no sooner than kubelet's "
                          "own back-off would retry it"
                       << Kv("why", lifecycle_.retrying_why())
                       << Kv("attempt", lifecycle_.transient_refusals())
                       << Kv("handshakes", verdict.handshakes)
                       << Kv("retryIn", FormatGoDuration(absl::Trunc(
                                            lifecycle_.timer_wait(), absl::Milliseconds(1))))
                       << Err(verdict.error);
      break;
    case RegistrationLifecycle::RefusalOutcome::kEnded:
      // As the Go registrar does for every refusal (main.go, NotifyRegistrationStatus): a reason
      // no retry removes, or one kubelet does not give, ends it with that reason. An unknown one
      // is not retried: a pod that restarts shows the problem, one that keeps retrying hides it.
      if (refusal.kind == RefusalKind::kUnknown) {
        ++metrics_.refusals_unknown;
      } else {
        ++metrics_.refusals_permanent;
      }
      NDR_LOG(ERROR) << "Kubelet refused the registration" << Kv("registered", false)
                     << Kv("refusal", RefusalKindName(refusal.kind)) << Kv("why", refusal.why)
                     << Err(verdict.error);
      break;
    case RegistrationLifecycle::RefusalOutcome::kReplacedSocket:
      ++metrics_.refusals_replaced_socket;
      NDR_LOG(WARNING) << "Kubelet refused a registration socket that has since been replaced or "
                          "withdrawn; not its verdict on the socket served now"
                       << Kv("path", wanted_path_)
                       << Kv("cameOn", notice.generation != generation_ || !lifecycle_.wants_socket()
                                           ? "the old socket"
                                           : "the new socket, which kubelet never asked for its "
                                             "info: a connection to the old one, re-dialled")
                       << Err(verdict.error);
      break;
    case RegistrationLifecycle::RefusalOutcome::kSocketGone:
      ++metrics_.refusals_socket_gone;
      NDR_LOG(WARNING) << "Kubelet refused the registration socket, which is no longer at its "
                          "path (kubelet may have failed to reach it there); creating it again"
                       << Kv("path", wanted_path_) << Err(verdict.error);
      break;
  }
  return Apply(decision);
}

absl::Status Registrar::Reconcile(bool lost) {
  // Withdrawn after a transient refusal (the timer serves it again), or ended.
  if (!wanted_.has_value() || !lifecycle_.wants_socket()) return absl::OkStatus();
  const std::optional<FileId> ours =
      server_ != nullptr ? std::optional<FileId>(server_->id()) : std::nullopt;
  switch (Inspect(wanted_path_, ours)) {
    case PathState::kOurs:
      return absl::OkStatus();
    case PathState::kNotASocket:
      if (!blocked_) {
        NDR_LOG(ERROR) << "Registration socket was replaced by a file that is not a socket; "
                          "leaving it untouched. Kubelet cannot reach this driver until that file "
                          "is removed."
                       << Kv("path", wanted_path_);
        server_.reset();
        blocked_ = true;
        return Apply(lifecycle_.SocketLost());
      }
      return absl::OkStatus();
    case PathState::kSocket:
      if (UnixSocketAnswers(wanted_path_)) {
        if (!yielded_) {
          NDR_LOG(WARNING) << "Registration socket was replaced by another process's socket, "
                              "which answers; leaving the registration to that process"
                           << Kv("path", wanted_path_);
          server_.reset();
          yielded_ = true;
          return Apply(lifecycle_.SocketLost());
        }
        return absl::OkStatus();
      }
      if (lost) {
        NDR_LOG(INFO) << "Registration socket was replaced by a stale socket; creating ours again"
                      << Kv("path", wanted_path_);
      }
      break;
    case PathState::kMissing:
      if (lost) {
        NDR_LOG(INFO) << "Registration socket was deleted; creating it again"
                      << Kv("path", wanted_path_);
      }
      break;
  }
  lost = lost || blocked_ || yielded_;
  server_.reset();
  blocked_ = yielded_ = false;
  absl::Status status = StartServer(wanted_path_, *wanted_);
  if (status.ok() && lost) ++metrics_.socket_recreations;
  if (absl::IsFailedPrecondition(status)) {
    // A non-socket appeared between our check and the rename; wait for it to go away.
    NDR_LOG(ERROR) << status.message();
    blocked_ = true;
    return absl::OkStatus();
  }
  return status;
}

absl::Status Registrar::HandleInotify() {
  alignas(inotify_event) char buffer[16 * 1024];
  bool registration_changed = false;
  bool driver_appeared = false;
  while (true) {
    ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (char* p = buffer; p < buffer + n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      const std::string name = event->len > 0 ? event->name : "";
      if (event->mask & IN_Q_OVERFLOW) {
        registration_changed = true;  // Events were lost: check everything.
        driver_appeared = true;
        continue;
      }
      if (event->wd == registration_dir_watch_) {
        if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "registration directory ", options_.plugin_registration_dir,
              " was removed or moved away; the registration socket cannot be kept there"));
        }
        if (wanted_.has_value() && name == BaseName(wanted_path_)) registration_changed = true;
      } else if (event->wd == csi_dir_watch_ && name == csi_socket_name_) {
        if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
          driver_appeared = true;
        } else {
          NDR_LOG(INFO) << "CSI driver socket was removed; waiting for the driver to come back"
                        << Kv("csiAddress", options_.csi_socket_path);
        }
      }
    }
  }
  if (driver_appeared) {
    if (wanted_.has_value()) {
      NDR_LOG(INFO) << "CSI driver socket appeared again: the driver restarted; asking its name "
                       "again"
                    << Kv("csiAddress", options_.csi_socket_path);
      ++metrics_.driver_reconnects;
      prober_->Query();
    } else {
      prober_->Nudge();  // Still starting up: try right away.
    }
  }
  if (registration_changed) return Reconcile();
  return absl::OkStatus();
}

void Registrar::OnNotify(uint64_t generation, const Verdict& verdict) {
  if (verdict.registered) {
    ++metrics_.registrations;
    NDR_LOG(INFO) << "Registration notified" << Kv("registered", true);
  } else {
    ++metrics_.refusals;
    // The main thread decides whether this is kubelet's verdict on the socket served now.
    NDR_LOG(INFO) << "Registration notified" << Kv("registered", false) << Err(verdict.error);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    notices_.push_back({generation, verdict});
  }
  Wake();
}

HttpResponse Registrar::HandleHttp(const std::string& path) {
  if (path == "/healthz") {
    std::string socket_path, name, retrying_why;
    bool withdrawn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      socket_path = health_path_;
      name = health_name_;
      retrying_why = retrying_why_;
      withdrawn = withdrawn_;
    }
    // While the socket is withdrawn after a transient refusal there is nothing to ask: healthy,
    // and it says why (below).
    HttpResponse response = withdrawn ? HttpResponse{200, "ok"}
                                      : CheckHealth(socket_path, name, options_.timeout);
    // Healthy all the same: a liveness probe must not turn a refusal that goes away by itself
    // into a restart. It says so.
    if (response.code == 200 && !retrying_why.empty()) {
      if (!response.body.empty() && response.body.back() != '\n') response.body += "\n";
      absl::StrAppend(&response.body, "not registered: kubelet refused for now (", retrying_why,
                      "); the registration socket is offered again until kubelet confirms it\n");
    }
    if (response.code == 200) {
      ++metrics_.health_ok;
    } else if (response.code == 404) {
      ++metrics_.health_socket_missing;
    } else {
      ++metrics_.health_failed;
    }
    if (response.code != 200) NDR_LOG(WARNING) << "Health check failed: " << response.body;
    return response;
  }
  if (path == "/metrics") {
    return {200, RenderPrometheus(metrics_), "text/plain; version=0.0.4; charset=utf-8"};
  }
  return {404, "not found: try /healthz or /metrics\n"};
}

}  // namespace ndr::registrar

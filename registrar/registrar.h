// The node-driver-registrar: learns the CSI driver's name, serves kubelet's plugin-registration
// API on <plugin-registration-path>/<name>-reg.sock, and keeps that socket there.
//
// Everything is driven by events on one thread: a signalfd (SIGTERM, SIGINT), an inotify
// descriptor watching the registration directory and the driver's socket directory, an eventfd
// through which the driver prober and kubelet's NotifyRegistrationStatus report, and a timerfd,
// the registration watchdog's (registration_watchdog.h). There is no polling loop; an idle
// registrar sleeps in poll(2).
//
// Beyond the Go registrar it
//  - waits for a slow driver for as long as it takes, where the Go one exits when the driver's
//    socket is not there after 30 s or GetPluginInfo outlasts --timeout (--connection-timeout
//    has no effect in either);
//  - validates the driver's name before it becomes part of a path;
//  - recreates its socket within milliseconds when it is deleted, or replaced by a stale socket;
//    a live socket of another process (a newer registrar during a rolling update) is left alone,
//    and so is a file that is not a socket, with an error in the log;
//  - notices the driver restarting (its socket reappearing), asks its name again and moves the
//    registration socket when the name changed;
//  - answers kubelet's refusal before exiting 1, and handles SIGINT like SIGTERM;
//  - offers its socket again when kubelet never confirms it (--registration-retry-after), and
//    does not take a refusal for a socket it has since replaced as kubelet's verdict
//    (registration_watchdog.h);
//  - rides out a refusal that goes away by itself (the API server away) without an exit: it
//    withdraws its socket and offers it again, at the same path, no sooner than kubelet's own
//    per-socket back-off would retry it, with a random part that spreads a fleet's registrars
//    (registration_lifecycle.h, which holds the registration's states and events);
//  - removes only the socket it created, never one another process put at the same path.
#ifndef NDR_REGISTRAR_REGISTRAR_H_
#define NDR_REGISTRAR_REGISTRAR_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "registrar/driver_prober.h"
#include "registrar/http_server.h"
#include "registrar/kubelet_refusal.h"
#include "registrar/metrics.h"
#include "registrar/options.h"
#include "registrar/registration_lifecycle.h"
#include "registrar/registration_server.h"

namespace ndr::registrar {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later. main()
// calls it before anything starts a thread, so that Run() can take the signals from a signalfd.
void BlockTerminationSignals();

class Registrar {
 public:
  explicit Registrar(Options options);
  ~Registrar();
  Registrar(const Registrar&) = delete;
  Registrar& operator=(const Registrar&) = delete;

  // Runs until SIGTERM or SIGINT (returns OK after removing the socket) or a fatal error
  // (returned; the caller exits 1).
  absl::Status Run();

  // Run() in steps, so that a test can decide when the main thread looks at what happened (and
  // so order events deterministically): Start() once, then HandleEvents() until it returns false
  // (stopped by a signal) or an error (fatal, as Run's).
  absl::Status Start();
  absl::StatusOr<bool> HandleEvents(absl::Duration timeout);

  const Metrics& metrics() const { return metrics_; }

 private:
  // A NotifyRegistrationStatus call, as the gRPC thread hands it to the main thread.
  struct Notice {
    uint64_t generation;  // of the socket it came on
    Verdict verdict;
  };
  absl::Status HandleSignal();
  absl::Status HandleInotify();
  absl::Status HandleWakeup();
  absl::Status HandleNotice(const Notice& notice);
  absl::Status HandleWatchdog();
  // Does what the lifecycle decided: serve, re-offer, withdraw, exit; arms the timer.
  absl::Status Apply(const RegistrationLifecycle::Decision& decision);
  // The metrics' gauges and /healthz's state, from the lifecycle's.
  void SyncState();
  // Sets the timer to fire after `wait` (InfiniteDuration: disarmed).
  void SetTimer(absl::Duration wait);
  // Replaces the socket served with a new one at the same path, for kubelet to see anew.
  absl::Status ReOffer();
  absl::Status HandleDriverName(const std::string& name);
  // Removes the stale sockets of this driver under the later names release 1.2.0 used after an
  // outage (reg_socket.h); whether it removed one.
  bool RemoveReleasedRotatedSockets(const std::string& primary);
  // Makes the registration socket path hold our socket if it does not: `lost` when it was
  // deleted or replaced (logged, counted as a recreation), not when the lifecycle serves it anew.
  absl::Status Reconcile(bool lost = true);
  absl::Status StartServer(const std::string& path, const RegistrationInfo& info);
  void StopServer();
  void OnNotify(uint64_t generation, const Verdict& verdict);
  HttpResponse HandleHttp(const std::string& path);
  void Wake();

  // Keeps gRPC initialised through start-up; declared first, so destroyed last. Without it gRPC
  // shuts itself down when the prober's channel, its only object at start-up, goes away, and
  // starts all its threads again for the registration server a moment later: a third of the time
  // from exec to serving GetInfo (docs/figures.md, "Where start-up time goes"). Released at the
  // first confirmed registration: from then on gRPC lives only while the registration socket has
  // connections (registration_server.h), or the prober asks the driver again.
  struct GrpcLifetime {
    GrpcLifetime();
    ~GrpcLifetime();
    void Release();
    bool held = true;
  } grpc_;
  const Options options_;
  Metrics metrics_;
  int signal_fd_ = -1;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  int registration_dir_watch_ = -1;
  int csi_dir_watch_ = -1;
  std::string csi_socket_name_;
  std::unique_ptr<DriverProber> prober_;
  std::unique_ptr<HttpServer> http_;

  // Main-thread state.
  std::optional<RegistrationInfo> wanted_;  // what the socket should serve, once the name is known
  std::string wanted_path_;                 // <dir>/<name>-reg.sock
  std::unique_ptr<RegistrationServer> server_;  // null while withdrawn, or another file holds the path
  bool blocked_ = false;  // a file that is not a socket holds the path
  bool yielded_ = false;  // another process's live socket holds the path
  uint64_t generation_ = 0;  // each socket created gets the next one
  std::mt19937_64 random_;   // the waits' jitter
  // The registration's states and the events that move them (registration_lifecycle.h).
  RegistrationLifecycle lifecycle_;

  // Shared with gRPC and HTTP threads.
  std::mutex mu_;
  std::vector<Notice> notices_ ABSL_GUARDED_BY(mu_);
  std::string health_path_ ABSL_GUARDED_BY(mu_);
  std::string health_name_ ABSL_GUARDED_BY(mu_);
  std::string retrying_why_ ABSL_GUARDED_BY(mu_);  // for /healthz; empty unless retrying
  bool withdrawn_ ABSL_GUARDED_BY(mu_) = false;     // the socket is withdrawn, backing off
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRAR_H_

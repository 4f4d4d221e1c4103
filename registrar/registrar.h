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
//    does not take a refusal for a socket it has since replaced, or one that follows its own
//    re-offer, as kubelet's verdict (registration_watchdog.h);
//  - keeps serving through a refusal that goes away by itself (the API server away), and offers
//    its socket again after 3, 4, then every 8 s; when kubelet tries the socket again by itself
//    within the first 3 s (v1.36 and later), under the driver's next socket name (reg_socket.h),
//    as kubelet holds back each retry of one path for up to 2 min 2 s. Earlier kubelets get the
//    same path: they still hold the refused plugin, and deregister it when its path goes, which
//    only the same path orders before the new registration;
//  - removes only the socket it created, never one another process put at the same path.
#ifndef NDR_REGISTRAR_REGISTRAR_H_
#define NDR_REGISTRAR_REGISTRAR_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
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
  // Arms the watchdog for the socket just offered (or disarms it: watchdog off, or notified).
  void ArmWatchdog();
  // Sets the watchdog's timer to fire after `wait` (InfiniteDuration: disarmed).
  void SetTimer(absl::Duration wait);
  // Keeps serving after a refusal whose reason goes away by itself, and offers the socket again
  // after a back-off (TransientRefusalWait).
  absl::Status RetryAfterTransientRefusal(const KubeletRefusal& refusal, const std::string& error);
  // Ends that: kubelet confirmed, or the driver's name changed.
  void EndTransientRetry();
  // Replaces the socket served with a new one at the same path, for kubelet to see anew.
  absl::Status ReOffer();
  // Replaces it with a new one under the driver's next socket name (reg_socket.h), unless kubelet
  // is registering it right now: a kubelet that retries failed registrations by itself holds
  // each one back by its socket's path, up to 2 min 2 s, and tries a new path at once.
  absl::Status OfferUnderNextName();
  absl::Status HandleDriverName(const std::string& name);
  // Makes the registration socket path hold our socket again if it was deleted or replaced.
  absl::Status Reconcile();
  // `reoffer`: the watchdog offers the socket again (see registration_watchdog.h).
  absl::Status StartServer(const std::string& path, const RegistrationInfo& info,
                           bool reoffer = false);
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
  std::string wanted_path_;
  std::string primary_path_;  // the socket's path under its first name, <name>-reg.sock
  int socket_index_ = 0;      // which of the driver's socket names wanted_path_ is
  std::unique_ptr<RegistrationServer> server_;  // null while another file holds the path
  bool blocked_ = false;  // a file that is not a socket holds the path
  bool yielded_ = false;  // another process's live socket holds the path
  // The watchdog's state, about the socket served now (server_).
  uint64_t generation_ = 0;      // each socket created gets the next one
  bool notified_ = false;        // kubelet confirmed it (registered=true)
  bool current_is_reoffer_ = false;
  int unanswered_offers_ = 0;    // offers since the last confirmation, for the backoff
  int transient_refusals_ = 0;   // in a row since the last confirmation, for their back-off
  bool retrying_ = false;        // the armed timer re-offers after a transient refusal
  // Kubelet tried a refused socket again by itself within kSelfRetryWindow of the first transient
  // refusal since the last confirmation: it retries by itself (v1.36 and later), so offers move
  // to the next socket name until the next confirmation.
  absl::Time self_retry_window_end_ = absl::InfinitePast();
  bool kubelet_retries_itself_ = false;
  absl::Duration watchdog_wait_ = absl::InfiniteDuration();  // what the armed timer waits

  // Shared with gRPC and HTTP threads.
  std::mutex mu_;
  std::vector<Notice> notices_ ABSL_GUARDED_BY(mu_);
  std::string health_path_ ABSL_GUARDED_BY(mu_);
  std::string health_name_ ABSL_GUARDED_BY(mu_);
  std::string retrying_why_ ABSL_GUARDED_BY(mu_);  // for /healthz; empty unless retrying
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRAR_H_

// The registration's life, as states and the events that move them: one small unit with no I/O.
// registrar.cc feeds it what happened (kubelet's verdicts, the timer, a socket served or lost,
// the driver's name) and does what it answers (serve a socket, withdraw it, exit, arm the timer).
//
//   kNoDriver ──named──▶ kOffered ──kubelet: yes──▶ kRegistered
//                          │  ▲  ╲                      │
//    watchdog: no verdict  │  │   ╲ kubelet: no, for    │ kubelet: no, for now (a kubelet
//    within its wait:      │  │    ╲ now (transient)    │ restarted while the API server is
//    the socket replaced   ▼  │     ▼                   ▼ away)
//                       kOffered  kBackingOff ◀─────────┘
//                                   │ timer: the socket is served again
//                                   ▼
//                                kOffered
//   any state ──kubelet: no, for good (permanent or unknown), or a signal──▶ kEnded
//
// Facts it rests on (kubelet v1.26.15, v1.36.3 and v1.37.2):
//  - kubelet v1.36 and later retry a failed registration by themselves while its socket is
//    there, holding each retry of one socket path back: 500 ms doubling to 2 min 2 s
//    (pkg/util/goroutinemap/exponentialbackoff, initialDurationBeforeRetry and
//    maxDurationBeforeRetry; the same in v1.26.15), kept by the path and not reset by a new socket
//    there (goroutinemap.Run copies the old operation's backoff). Earlier ones keep the failed
//    plugin in their actual state of world and never try it again until its socket is created
//    anew (pluginmanager/operationexecutor/operation_generator.go GenerateRegisterPluginFunc:
//    v1.36 calls RemovePlugin on a failed RegisterPlugin, v1.26.15 does not).
//  - So after a transient refusal the socket is withdrawn: while it is not there no kubelet tries
//    it, and when it comes back every kubelet tries it once, at once (a v1.36+ kubelet whose own
//    back-off has run out by then: the registrar's waits are never shorter than it). The
//    registrar alone decides when kubelet tries, and it tries no more often than kubelet's own
//    back-off on the one path would: after each refusal it waits at least as long as that back-off
//    waits at the same moment since the first refusal, plus a random part of up to the back-off's
//    cap, so that a fleet's registrars, refused together when the API server went away, never
//    come back in step (test/fleet/fleet_model.py, docs/fleet-model.md).
//  - The socket's path never changes: a new path would escape kubelet's back-off, a rollback to
//    the Go registrar (which serves only <driver>-reg.sock) would find kubelet holding the driver
//    under the other path (csi_plugin.go validateVersions refuses a second socket of a name; the
//    plugin watcher forgets one only when its socket is deleted, plugin_watcher.go
//    handleDeleteEvent), and a longer name may not fit in the host's sun_path where kubelet dials
//    it.
//  - A transient refusal of a confirmed registration (a kubelet restarted while the API server is
//    away registers anew, and fails) makes it unregistered: kubelet no longer holds it.
//  - A permanent or unknown reason ends the registrar whenever it comes, as the Go registrar ends
//    on every refusal (v2.17.0 cmd/csi-node-driver-registrar/main.go NotifyRegistrationStatus).
//    One exception: right after the registrar itself removed a socket of this driver, kubelet
//    may still hold that one's registration while it registers the new socket, and refuse it as
//    "Another driver with the same name is already registered"; that refusal is retried as a
//    transient one.
//  - A verdict that came for a socket since replaced, or before kubelet asked the socket for its
//    info, is not about the socket served (registration_watchdog.h); one whose socket is no longer
//    at its path asks for the socket again.
//
// Thread-compatible: the registrar's main thread owns it. Time and randomness come in from the
// caller, so every transition is tested with a fake clock and fixed random numbers.
#ifndef NDR_REGISTRAR_REGISTRATION_LIFECYCLE_H_
#define NDR_REGISTRAR_REGISTRATION_LIFECYCLE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "registrar/kubelet_refusal.h"

namespace ndr::registrar {

// kubelet's per-socket-path retry back-off (see above).
inline constexpr absl::Duration kKubeletBackoffInitial = absl::Milliseconds(500);
inline constexpr absl::Duration kKubeletBackoffCap = absl::Seconds(122);  // 2 min 2 s

// How long kubelet's back-off on one path waits before the attempt after the one made `elapsed`
// after the first failure, had kubelet retried by itself from then on: the gap in force at that
// moment (500 ms, 1 s, 2 s, ... from the attempts at 0, 0.5 s, 1.5 s, 3.5 s, ..., up to `cap`).
absl::Duration KubeletBackoffGapAt(absl::Duration elapsed, absl::Duration cap = kKubeletBackoffCap);

// How many attempts kubelet's back-off on one path makes in [0, t] since the first failure at 0
// (the first failure included): the yardstick the registrar's re-offers never exceed.
int KubeletBackoffAttemptsBy(absl::Duration t, absl::Duration cap = kKubeletBackoffCap);

// The registrar's wait after a transient refusal made `elapsed` after the first refusal since
// the last confirmation, with `random` in [0, 1): kubelet's back-off gap at that moment plus a
// random part of up to `cap`. Never shorter than kubelet's own wait, and spread over the cap
// whatever the moment, so that a fleet's registrars refused together come back apart.
absl::Duration TransientRetryWait(absl::Duration elapsed, double random,
                                  absl::Duration cap = kKubeletBackoffCap);

// The watchdog's wait (RegistrationWait) made up to 10% longer by `random` in [0, 1), so that
// registrars whose kubelets stopped answering together do not offer again together.
absl::Duration JitteredWatchdogWait(absl::Duration retry_after, int offers, double random);

class RegistrationLifecycle {
 public:
  enum class State { kNoDriver, kOffered, kRegistered, kBackingOff, kEnded };

  // What the registrar does next.
  enum class Step {
    kNothing,
    kServe,     // create the registration socket (it is not there)
    kReOffer,   // replace the socket served by a new one at the same path, now
    kWithdraw,  // remove the socket served; the timer serves it again
    kRecreate,  // the socket is gone from its path: make the path hold ours again (Reconcile)
    kExit,      // stop serving, remove the socket, exit 1 with `reason`
  };

  // Why a refusal was not taken as kubelet's verdict on the socket served, or how it was taken.
  enum class RefusalOutcome {
    kReplacedSocket,  // it came for a socket since replaced
    kSocketGone,      // the socket it came for is not at its path
    kRetried,         // transient: backing off
    kEnded,           // permanent or unknown: the registrar ends
  };

  struct Decision {
    Step step = Step::kNothing;
    // The timer from now on: a duration to arm it for, InfiniteDuration to disarm it, nothing to
    // leave it as it is.
    std::optional<absl::Duration> timer;
    // For kExit: the reason (kubelet's).
    std::string reason;
  };

  struct Config {
    absl::Duration retry_after = absl::Minutes(3);  // --registration-retry-after; 0: no watchdog
    absl::Duration backoff_cap = kKubeletBackoffCap;  // --registration-backoff-cap
  };

  // `random` returns numbers in [0, 1).
  RegistrationLifecycle(Config config, std::function<double()> random);

  // Events.
  // The driver's name is known, or changed: everything starts afresh, a socket is wanted.
  // `removed_earlier_socket`: the registrar removed a stale socket of this driver under another
  // name just now, which kubelet may still hold.
  Decision DriverNamed(bool removed_earlier_socket = false);
  // A socket was created at the path (at start, after it was lost, or a re-offer) with this
  // generation: kubelet's verdict on it is awaited.
  Decision SocketServed(uint64_t generation);
  // The path holds no socket of ours (another process's file or live socket is there).
  Decision SocketLost();
  // kubelet confirmed the registration of socket `generation`.
  Decision Confirmed(uint64_t generation);
  struct Refusal {
    uint64_t generation = 0;   // of the socket it came on
    bool after_get_info = true;  // kubelet asked that socket for its info first
    bool path_still_ours = true;  // the path still holds the socket served
    KubeletRefusal kubelet;     // what kubelet's reason says of a retry
    std::string error;          // kubelet's text
  };
  Decision Refused(const Refusal& refusal, absl::Time now, RefusalOutcome* outcome = nullptr);
  // The timer set by the last decision fired.
  Decision TimerFired();
  // SIGTERM or SIGINT.
  Decision Stopped();

  State state() const { return state_; }
  // The metrics' gauges and /healthz's line, derived from the state.
  bool registered() const { return state_ == State::kRegistered; }
  // A transient refusal came since the last confirmation.
  bool retrying() const { return refusals_ > 0 && state_ != State::kEnded; }
  // Whether the registrar serves a socket now (false while backing off, and after the end).
  bool wants_socket() const { return state_ == State::kOffered || state_ == State::kRegistered; }
  const std::string& retrying_why() const { return retrying_why_; }
  // The timer's last wait, for the log; and what it is for.
  absl::Duration timer_wait() const { return timer_; }
  int unanswered_offers() const { return unanswered_offers_; }
  int transient_refusals() const { return refusals_; }

 private:
  Decision Arm(Step step, absl::Duration wait);
  void Reset();

  const Config config_;
  const std::function<double()> random_;
  State state_ = State::kNoDriver;
  uint64_t generation_ = 0;      // of the socket served
  int unanswered_offers_ = 0;    // the watchdog's offers since the last confirmation
  int refusals_ = 0;             // transient refusals since the last confirmation
  absl::Time first_refusal_ = absl::InfinitePast();
  // The registrar removed a socket of this driver (a re-offer, or a withdrawal) since the last
  // confirmation: kubelet may still hold that one.
  bool removed_own_socket_ = false;
  std::string retrying_why_;
  absl::Duration timer_ = absl::InfiniteDuration();
};

absl::string_view StateName(RegistrationLifecycle::State state);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRATION_LIFECYCLE_H_

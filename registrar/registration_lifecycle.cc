#include "registrar/registration_lifecycle.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "registrar/registration_watchdog.h"

namespace ndr::registrar {
namespace {

// csi_plugin.go validateVersions (v1.26.15 to v1.37.2).
constexpr char kSameNameRegistered[] = "Another driver with the same name is already registered";

double Clamp01(double random) { return std::min(std::max(random, 0.0), 0.999999); }

}  // namespace

absl::Duration KubeletBackoffGapAt(absl::Duration elapsed, absl::Duration cap) {
  absl::Duration at = absl::ZeroDuration();  // when the attempt that opens this gap is made
  absl::Duration gap = std::min(kKubeletBackoffInitial, cap);
  while (at + gap <= elapsed && gap < cap) {
    at += gap;
    gap = std::min(gap * 2, cap);
  }
  return gap;
}

int KubeletBackoffAttemptsBy(absl::Duration t, absl::Duration cap) {
  if (t < absl::ZeroDuration()) return 0;
  int attempts = 1;  // the first failure, at 0
  absl::Duration at = absl::ZeroDuration();
  absl::Duration gap = std::min(kKubeletBackoffInitial, cap);
  while (at + gap <= t) {
    at += gap;
    ++attempts;
    gap = std::min(gap * 2, cap);
  }
  return attempts;
}

absl::Duration TransientRetryWait(absl::Duration elapsed, double random, absl::Duration cap) {
  return KubeletBackoffGapAt(elapsed, cap) + cap * Clamp01(random);
}

absl::Duration JitteredWatchdogWait(absl::Duration retry_after, int offers, double random) {
  const absl::Duration wait = RegistrationWait(retry_after, offers);
  if (wait == absl::InfiniteDuration()) return wait;
  return wait + wait * (Clamp01(random) / 10);
}

RegistrationLifecycle::RegistrationLifecycle(Config config, std::function<double()> random)
    : config_(config), random_(std::move(random)) {}

RegistrationLifecycle::Decision RegistrationLifecycle::Arm(Step step, absl::Duration wait) {
  timer_ = wait;
  return {step, wait, ""};
}

void RegistrationLifecycle::Reset() {
  unanswered_offers_ = 0;
  refusals_ = 0;
  first_refusal_ = absl::InfinitePast();
  removed_own_socket_ = false;
  retrying_why_.clear();
}

RegistrationLifecycle::Decision RegistrationLifecycle::DriverNamed(bool removed_earlier_socket) {
  if (state_ == State::kEnded) return {};
  // A new name gets kubelet's verdict afresh; the socket is wanted from now on.
  Reset();
  removed_own_socket_ = removed_earlier_socket;
  state_ = State::kOffered;
  generation_ = 0;
  return Arm(Step::kServe, absl::InfiniteDuration());
}

RegistrationLifecycle::Decision RegistrationLifecycle::SocketServed(uint64_t generation) {
  if (state_ == State::kEnded) return {};
  generation_ = generation;
  state_ = State::kOffered;
  return Arm(Step::kNothing,
             JitteredWatchdogWait(config_.retry_after, unanswered_offers_, random_()));
}

RegistrationLifecycle::Decision RegistrationLifecycle::SocketLost() {
  if (state_ != State::kOffered && state_ != State::kRegistered) return {};
  // Whatever kubelet held of our socket, it does not hold it now; nothing to re-offer until the
  // path is ours again.
  state_ = State::kOffered;
  return Arm(Step::kNothing, absl::InfiniteDuration());
}

RegistrationLifecycle::Decision RegistrationLifecycle::Confirmed(uint64_t generation) {
  if ((state_ != State::kOffered && state_ != State::kRegistered) || generation_ == 0 ||
      generation != generation_) {
    return {};  // for a socket since replaced or withdrawn: the one served gets its own verdict
  }
  state_ = State::kRegistered;
  Reset();
  return Arm(Step::kNothing, absl::InfiniteDuration());  // never disturbed
}

RegistrationLifecycle::Decision RegistrationLifecycle::Refused(const Refusal& refusal,
                                                               absl::Time now,
                                                               RefusalOutcome* outcome) {
  RefusalOutcome ignored;
  if (outcome == nullptr) outcome = &ignored;
  *outcome = RefusalOutcome::kReplacedSocket;
  if (state_ == State::kEnded) return {};
  if (state_ == State::kNoDriver || state_ == State::kBackingOff || generation_ == 0 ||
      refusal.generation != generation_ || !refusal.after_get_info) {
    return {};
  }
  if (!refusal.path_still_ours) {
    *outcome = RefusalOutcome::kSocketGone;
    return {Step::kRecreate, std::nullopt, ""};
  }
  const bool transient =
      refusal.kubelet.kind == RefusalKind::kTransient ||
      (removed_own_socket_ && absl::StrContains(refusal.error, kSameNameRegistered));
  if (!transient) {
    *outcome = RefusalOutcome::kEnded;
    state_ = State::kEnded;
    timer_ = absl::InfiniteDuration();
    return {Step::kExit, absl::InfiniteDuration(), refusal.error};
  }
  *outcome = RefusalOutcome::kRetried;
  if (refusals_ == 0) first_refusal_ = now;
  ++refusals_;
  retrying_why_ = refusal.kubelet.kind == RefusalKind::kTransient
                      ? refusal.kubelet.why
                      : "kubelet still held the driver's previous socket";
  state_ = State::kBackingOff;
  removed_own_socket_ = true;
  return Arm(Step::kWithdraw,
             TransientRetryWait(now - first_refusal_, random_(), config_.backoff_cap));
}

RegistrationLifecycle::Decision RegistrationLifecycle::TimerFired() {
  switch (state_) {
    case State::kOffered:
      // The watchdog: no verdict within its wait.
      ++unanswered_offers_;
      removed_own_socket_ = true;
      return Arm(Step::kReOffer, absl::InfiniteDuration());  // SocketServed arms it again
    case State::kBackingOff:
      state_ = State::kOffered;
      return Arm(Step::kServe, absl::InfiniteDuration());
    case State::kNoDriver:
    case State::kRegistered:
    case State::kEnded:
      break;
  }
  return {};
}

RegistrationLifecycle::Decision RegistrationLifecycle::Stopped() {
  state_ = State::kEnded;
  return Arm(Step::kNothing, absl::InfiniteDuration());
}

absl::string_view StateName(RegistrationLifecycle::State state) {
  switch (state) {
    case RegistrationLifecycle::State::kNoDriver: return "no-driver";
    case RegistrationLifecycle::State::kOffered: return "offered";
    case RegistrationLifecycle::State::kRegistered: return "registered";
    case RegistrationLifecycle::State::kBackingOff: return "backing-off";
    case RegistrationLifecycle::State::kEnded: break;
  }
  return "ended";
}

}  // namespace ndr::registrar

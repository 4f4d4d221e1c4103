// Every transition of the registration's lifecycle, with a fake clock and fixed random numbers,
// and a randomised sequence of events that holds its invariants.
#include "registrar/registration_lifecycle.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

using State = RegistrationLifecycle::State;
using Step = RegistrationLifecycle::Step;
using Outcome = RegistrationLifecycle::RefusalOutcome;

// kubelet's texts (operation_generator.go, nodeinfomanager.go, csi_plugin.go).
constexpr char kApiServerAway[] =
    "RegisterPlugin error -- plugin registration failed with err: error updating Node object with "
    "CSI driver node info: error updating node: timed out waiting for the condition; caused by: "
    "Get \"https://10.0.0.1:6443/api/v1/nodes/n1\": dial tcp 10.0.0.1:6443: connect: connection "
    "refused";
constexpr char kEmptyNodeId[] =
    "RegisterPlugin error -- plugin registration failed with err: error adding CSI driver node "
    "info: driverNodeID must not be empty";
constexpr char kSameName[] =
    "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver "
    "d at endpoint /csi.sock: Another driver with the same name is already registered with a "
    "higher supported version: \"1.0.0\"";

const absl::Time kStart = absl::FromUnixSeconds(1000000);

RegistrationLifecycle::Refusal Refusal(uint64_t generation, const std::string& error) {
  RegistrationLifecycle::Refusal refusal;
  refusal.generation = generation;
  refusal.error = error;
  refusal.kubelet = ClassifyKubeletRefusal(error);
  return refusal;
}

class LifecycleTest : public ::testing::Test {
 protected:
  // Serves socket `generation`, as the registrar does on a kServe or kReOffer.
  void Serve(uint64_t generation) {
    const auto served = lifecycle_.SocketServed(generation);
    EXPECT_EQ(served.step, Step::kNothing);
    EXPECT_EQ(lifecycle_.state(), State::kOffered);
  }
  void Register(uint64_t generation) {
    ASSERT_EQ(lifecycle_.DriverNamed().step, Step::kServe);
    Serve(generation);
    EXPECT_EQ(lifecycle_.Confirmed(generation).timer, absl::InfiniteDuration());
    ASSERT_TRUE(lifecycle_.registered());
  }

  double random_ = 0.5;
  RegistrationLifecycle lifecycle_{{absl::Minutes(3), kKubeletBackoffCap}, [this] {
                                     return random_;
                                   }};
};

TEST(KubeletBackoffTest, TheGapInForceAtEachMoment) {
  // Attempts at 0, 0.5, 1.5, 3.5, 7.5 s ... (500 ms doubling), the gap capped at 2 min 2 s.
  EXPECT_EQ(KubeletBackoffGapAt(absl::ZeroDuration()), absl::Milliseconds(500));
  EXPECT_EQ(KubeletBackoffGapAt(absl::Milliseconds(499)), absl::Milliseconds(500));
  EXPECT_EQ(KubeletBackoffGapAt(absl::Milliseconds(500)), absl::Seconds(1));
  EXPECT_EQ(KubeletBackoffGapAt(absl::Milliseconds(1499)), absl::Seconds(1));
  EXPECT_EQ(KubeletBackoffGapAt(absl::Milliseconds(1500)), absl::Seconds(2));
  EXPECT_EQ(KubeletBackoffGapAt(absl::Seconds(60)), absl::Seconds(32));  // 31.5 s to 63.5 s
  EXPECT_EQ(KubeletBackoffGapAt(absl::Minutes(30)), kKubeletBackoffCap);
  EXPECT_EQ(KubeletBackoffGapAt(absl::Seconds(10), absl::Seconds(2)), absl::Seconds(2));
}

TEST(KubeletBackoffTest, AttemptsByEachMoment) {
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::Seconds(-1)), 0);
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::ZeroDuration()), 1);
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::Milliseconds(500)), 2);
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::Seconds(60)), 7);  // ... 31.5 s; 63.5 s is the 8th
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::Seconds(64)), 8);
  // The 9th at 127.5 s, then one every 2 min 2 s: 37 in the first hour.
  EXPECT_EQ(KubeletBackoffAttemptsBy(absl::Hours(1)), 37);
}

TEST(TransientRetryWaitTest, KubeletsGapAtThatMomentPlusUpToTheCap) {
  EXPECT_EQ(TransientRetryWait(absl::ZeroDuration(), 0.0), absl::Milliseconds(500));
  EXPECT_EQ(TransientRetryWait(absl::ZeroDuration(), 0.5),
            absl::Milliseconds(500) + kKubeletBackoffCap / 2);
  EXPECT_LT(TransientRetryWait(absl::ZeroDuration(), 1.0),
            absl::Milliseconds(500) + kKubeletBackoffCap);
  EXPECT_EQ(TransientRetryWait(absl::Seconds(60), 0.0), absl::Seconds(32));
  EXPECT_EQ(TransientRetryWait(absl::Seconds(60), 0.5), absl::Seconds(32 + 61));
  EXPECT_EQ(TransientRetryWait(absl::Hours(1), 0.0), kKubeletBackoffCap);
  EXPECT_LT(TransientRetryWait(absl::Hours(1), 1.0), 2 * kKubeletBackoffCap);
  EXPECT_EQ(TransientRetryWait(absl::Seconds(10), 0.5, absl::Seconds(2)), absl::Seconds(3));
  // A random number out of range is taken as the nearest in range.
  EXPECT_EQ(TransientRetryWait(absl::Hours(1), -3.0), kKubeletBackoffCap);
}

TEST(JitteredWatchdogWaitTest, UpToTenPercentLonger) {
  EXPECT_EQ(JitteredWatchdogWait(absl::Minutes(3), 0, 0.0), absl::Minutes(3));
  EXPECT_EQ(JitteredWatchdogWait(absl::Minutes(3), 0, 0.5), absl::Seconds(189));
  EXPECT_LT(JitteredWatchdogWait(absl::Minutes(3), 1, 1.0), absl::Seconds(396));
  EXPECT_EQ(JitteredWatchdogWait(absl::ZeroDuration(), 0, 0.5), absl::InfiniteDuration());
}

TEST_F(LifecycleTest, OfferedThenConfirmed) {
  EXPECT_EQ(lifecycle_.state(), State::kNoDriver);
  EXPECT_EQ(lifecycle_.DriverNamed().step, Step::kServe);
  const auto served = lifecycle_.SocketServed(1);
  EXPECT_EQ(served.timer, absl::Seconds(189));  // the watchdog: 3 min, 5% jitter
  EXPECT_FALSE(lifecycle_.registered());
  EXPECT_TRUE(lifecycle_.wants_socket());
  const auto confirmed = lifecycle_.Confirmed(1);
  EXPECT_EQ(confirmed.step, Step::kNothing);
  EXPECT_EQ(confirmed.timer, absl::InfiniteDuration());  // never disturbed
  EXPECT_TRUE(lifecycle_.registered());
  EXPECT_FALSE(lifecycle_.retrying());
}

TEST_F(LifecycleTest, AConfirmationForAnotherSocketIsNotThisOnes) {
  lifecycle_.DriverNamed();
  Serve(2);
  const auto confirmed = lifecycle_.Confirmed(1);
  EXPECT_EQ(confirmed.step, Step::kNothing);
  EXPECT_FALSE(confirmed.timer.has_value());  // the watchdog stays armed
  EXPECT_FALSE(lifecycle_.registered());
}

TEST_F(LifecycleTest, ATransientRefusalOfAConfirmedRegistrationUnregistersAndBacksOff) {
  Register(1);
  Outcome outcome;
  const auto refused = lifecycle_.Refused(Refusal(1, kApiServerAway), kStart, &outcome);
  EXPECT_EQ(outcome, Outcome::kRetried);
  EXPECT_EQ(refused.step, Step::kWithdraw);
  EXPECT_EQ(refused.timer, absl::Milliseconds(500) + kKubeletBackoffCap / 2);
  EXPECT_FALSE(lifecycle_.registered());
  EXPECT_TRUE(lifecycle_.retrying());
  EXPECT_FALSE(lifecycle_.wants_socket());
  EXPECT_EQ(lifecycle_.retrying_why(),
            "kubelet could not update the Node object (API server unreachable or busy)");
  EXPECT_EQ(lifecycle_.TimerFired().step, Step::kServe);
  Serve(2);
  EXPECT_TRUE(lifecycle_.retrying());
  // Refused again 61.5 s after the first: kubelet's gap then is 32 s (its attempts at 31.5 s and
  // 63.5 s), plus up to the cap.
  const auto again =
      lifecycle_.Refused(Refusal(2, kApiServerAway), kStart + absl::Seconds(61.5), &outcome);
  EXPECT_EQ(again.step, Step::kWithdraw);
  EXPECT_EQ(again.timer, absl::Seconds(32 + 61));
  EXPECT_EQ(lifecycle_.transient_refusals(), 2);
  EXPECT_EQ(lifecycle_.TimerFired().step, Step::kServe);
  Serve(3);
  lifecycle_.Confirmed(3);
  EXPECT_TRUE(lifecycle_.registered());
  EXPECT_FALSE(lifecycle_.retrying());
  EXPECT_EQ(lifecycle_.transient_refusals(), 0);
  EXPECT_EQ(lifecycle_.retrying_why(), "");
}

TEST_F(LifecycleTest, APermanentReasonEndsItWhateverCameBefore) {
  const std::vector<std::string> before[] = {
      {},                                  // the first offer
      {"confirmed"},                       // a registered socket
      {"transient"},                       // after a back-off's re-offer
      {"watchdog"},                        // after the watchdog's re-offer
      {"transient", "watchdog", "transient"},
  };
  for (const auto& events : before) {
    SCOPED_TRACE(events.size());
    RegistrationLifecycle lifecycle({absl::Minutes(3), kKubeletBackoffCap}, [] { return 0.3; });
    lifecycle.DriverNamed();
    uint64_t generation = 1;
    lifecycle.SocketServed(generation);
    absl::Time now = kStart;
    for (const std::string& event : events) {
      if (event == "confirmed") {
        lifecycle.Confirmed(generation);
      } else if (event == "transient") {
        ASSERT_EQ(lifecycle.Refused(Refusal(generation, kApiServerAway), now).step,
                  Step::kWithdraw);
        ASSERT_EQ(lifecycle.TimerFired().step, Step::kServe);
        lifecycle.SocketServed(++generation);
      } else {
        ASSERT_EQ(lifecycle.TimerFired().step, Step::kReOffer);
        lifecycle.SocketServed(++generation);
      }
      now += absl::Seconds(10);
    }
    Outcome outcome;
    const auto ended = lifecycle.Refused(Refusal(generation, kEmptyNodeId), now, &outcome);
    EXPECT_EQ(outcome, Outcome::kEnded);
    EXPECT_EQ(ended.step, Step::kExit);
    EXPECT_EQ(ended.reason, kEmptyNodeId);
    EXPECT_EQ(lifecycle.state(), State::kEnded);
    EXPECT_FALSE(lifecycle.registered());
    EXPECT_FALSE(lifecycle.retrying());
  }
}

TEST_F(LifecycleTest, AnUnknownReasonEndsIt) {
  lifecycle_.DriverNamed();
  Serve(1);
  EXPECT_EQ(lifecycle_.Refused(Refusal(1, "a reason no kubelet gives"), kStart).step, Step::kExit);
}

// kubelet may still hold the socket the registrar itself removed: only then is "another driver
// with the same name" retried.
TEST_F(LifecycleTest, TheSameNameRegisteredIsRetriedOnlyAfterOurOwnRemoval) {
  lifecycle_.DriverNamed();
  Serve(1);
  EXPECT_EQ(lifecycle_.Refused(Refusal(1, kSameName), kStart).step, Step::kExit);

  RegistrationLifecycle after({absl::Minutes(3), kKubeletBackoffCap}, [] { return 0.0; });
  after.DriverNamed();
  after.SocketServed(1);
  ASSERT_EQ(after.TimerFired().step, Step::kReOffer);  // the watchdog replaced the socket
  after.SocketServed(2);
  const auto refused = after.Refused(Refusal(2, kSameName), kStart);
  EXPECT_EQ(refused.step, Step::kWithdraw);
  EXPECT_EQ(after.retrying_why(), "kubelet still held the driver's previous socket");
}

TEST_F(LifecycleTest, RefusalsThatAreNotAboutTheSocketServed) {
  Register(1);
  lifecycle_.Refused(Refusal(1, kApiServerAway), kStart);
  lifecycle_.TimerFired();
  Serve(2);
  Outcome outcome;
  // For the socket before.
  auto refused = lifecycle_.Refused(Refusal(1, kEmptyNodeId), kStart, &outcome);
  EXPECT_EQ(outcome, Outcome::kReplacedSocket);
  EXPECT_EQ(refused.step, Step::kNothing);
  EXPECT_FALSE(refused.timer.has_value());
  // Before kubelet asked this one for its info: a connection to the old one, re-dialled.
  auto no_info = Refusal(2, kEmptyNodeId);
  no_info.after_get_info = false;
  EXPECT_EQ(lifecycle_.Refused(no_info, kStart, &outcome).step, Step::kNothing);
  EXPECT_EQ(outcome, Outcome::kReplacedSocket);
  // The socket is no longer at its path.
  auto gone = Refusal(2, kEmptyNodeId);
  gone.path_still_ours = false;
  EXPECT_EQ(lifecycle_.Refused(gone, kStart, &outcome).step, Step::kRecreate);
  EXPECT_EQ(outcome, Outcome::kSocketGone);
  EXPECT_EQ(lifecycle_.state(), State::kOffered);
}

TEST_F(LifecycleTest, WhileBackingOffNothingComesForTheWithdrawnSocket) {
  lifecycle_.DriverNamed();
  Serve(1);
  lifecycle_.Refused(Refusal(1, kApiServerAway), kStart);
  ASSERT_EQ(lifecycle_.state(), State::kBackingOff);
  EXPECT_EQ(lifecycle_.Confirmed(1).step, Step::kNothing);
  EXPECT_FALSE(lifecycle_.registered());
  EXPECT_EQ(lifecycle_.Refused(Refusal(1, kEmptyNodeId), kStart).step, Step::kNothing);
  EXPECT_EQ(lifecycle_.SocketLost().step, Step::kNothing);
  EXPECT_EQ(lifecycle_.state(), State::kBackingOff);
}

TEST_F(LifecycleTest, TheWatchdogReOffersWithDoublingWaits) {
  lifecycle_.DriverNamed();
  random_ = 0.0;
  EXPECT_EQ(lifecycle_.SocketServed(1).timer, absl::Minutes(3));
  const auto fired = lifecycle_.TimerFired();
  EXPECT_EQ(fired.step, Step::kReOffer);
  EXPECT_EQ(lifecycle_.unanswered_offers(), 1);
  EXPECT_EQ(lifecycle_.SocketServed(2).timer, absl::Minutes(6));
  EXPECT_EQ(lifecycle_.TimerFired().step, Step::kReOffer);
  EXPECT_EQ(lifecycle_.SocketServed(3).timer, absl::Minutes(6));
  lifecycle_.Confirmed(3);
  EXPECT_EQ(lifecycle_.unanswered_offers(), 0);
  EXPECT_EQ(lifecycle_.TimerFired().step, Step::kNothing);  // a registration is never disturbed
}

TEST_F(LifecycleTest, ASocketLostIsNoLongerRegistered) {
  Register(1);
  const auto lost = lifecycle_.SocketLost();
  EXPECT_EQ(lost.timer, absl::InfiniteDuration());
  EXPECT_FALSE(lifecycle_.registered());
  Serve(2);
  lifecycle_.Confirmed(2);
  EXPECT_TRUE(lifecycle_.registered());
}

TEST_F(LifecycleTest, ANewDriverNameStartsAfresh) {
  lifecycle_.DriverNamed();
  Serve(1);
  lifecycle_.Refused(Refusal(1, kApiServerAway), kStart);
  ASSERT_TRUE(lifecycle_.retrying());
  EXPECT_EQ(lifecycle_.DriverNamed().step, Step::kServe);
  EXPECT_FALSE(lifecycle_.retrying());
  EXPECT_EQ(lifecycle_.transient_refusals(), 0);
  Serve(2);
  // The registrar removed no socket of this name: "the same name" is not retried.
  EXPECT_EQ(lifecycle_.Refused(Refusal(2, kSameName), kStart).step, Step::kExit);
}

TEST_F(LifecycleTest, StoppedIsTheEnd) {
  Register(1);
  lifecycle_.Stopped();
  EXPECT_EQ(lifecycle_.state(), State::kEnded);
  EXPECT_FALSE(lifecycle_.registered());
  EXPECT_EQ(lifecycle_.DriverNamed().step, Step::kNothing);
  EXPECT_EQ(lifecycle_.TimerFired().step, Step::kNothing);
  EXPECT_EQ(lifecycle_.Refused(Refusal(1, kApiServerAway), kStart).step, Step::kNothing);
  EXPECT_EQ(StateName(State::kEnded), "ended");
  EXPECT_EQ(StateName(State::kBackingOff), "backing-off");
}

// Random events against a kubelet that tries the socket each time it is served, with the API
// server away or back at random. Invariants: registered only while kubelet's last verdict on the
// socket served was yes; a permanent reason always ends it; kubelet is made to try no more often
// than its own back-off on one path would (counted from the first refusal since the last
// confirmation).
TEST(LifecycleSequenceTest, RandomEventsHoldTheInvariants) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const absl::Duration cap = seed % 2 == 0 ? kKubeletBackoffCap : absl::Seconds(2);
    RegistrationLifecycle lifecycle({absl::Seconds(seed % 3 == 0 ? 0 : 30), cap},
                                    [&] { return unit(rng); });
    absl::Time now = kStart;
    uint64_t generation = 0;
    bool served = false;             // a socket of ours is at the path
    bool last_verdict_yes = false;   // kubelet's last verdict on the socket served
    absl::Time first_refusal = absl::InfinitePast();
    int attempts = 0;  // kubelet's tries since that first refusal
    absl::Duration timer = absl::InfiniteDuration();

    auto apply = [&](const RegistrationLifecycle::Decision& d) {
      if (d.timer.has_value()) timer = *d.timer;
      switch (d.step) {
        case Step::kServe:
        case Step::kReOffer:
        case Step::kRecreate: {
          served = true;
          last_verdict_yes = false;
          const auto s = lifecycle.SocketServed(++generation);
          if (s.timer.has_value()) timer = *s.timer;
          break;
        }
        case Step::kWithdraw:
          served = false;
          last_verdict_yes = false;
          break;
        case Step::kExit:
        case Step::kNothing:
          break;
      }
    };
    apply(lifecycle.DriverNamed());
    for (int i = 0; i < 200 && lifecycle.state() != State::kEnded; ++i) {
      const int event = static_cast<int>(unit(rng) * 7);
      if (event == 0 && timer != absl::InfiniteDuration()) {
        now += timer;
        timer = absl::InfiniteDuration();
        apply(lifecycle.TimerFired());
      } else if (event <= 2 && served) {
        // kubelet tries the socket served: the API server away, or back.
        const bool away = unit(rng) < 0.7;
        if (away) {
          if (first_refusal == absl::InfinitePast()) first_refusal = now;
          ++attempts;
          ASSERT_LE(attempts, KubeletBackoffAttemptsBy(now - first_refusal, cap))
              << "at " << absl::FormatDuration(now - first_refusal);
          apply(lifecycle.Refused(Refusal(generation, kApiServerAway), now));
          EXPECT_EQ(lifecycle.state(), State::kBackingOff);
        } else {
          apply(lifecycle.Confirmed(generation));
          last_verdict_yes = true;
          first_refusal = absl::InfinitePast();
          attempts = 0;
        }
      } else if (event == 3 && served && unit(rng) < 0.1) {
        const auto d = lifecycle.Refused(Refusal(generation, kEmptyNodeId), now);
        EXPECT_EQ(d.step, Step::kExit);
        EXPECT_EQ(lifecycle.state(), State::kEnded);
      } else if (event == 4) {
        // A verdict for an older socket, which changes nothing.
        const State before = lifecycle.state();
        apply(lifecycle.Refused(Refusal(generation == 0 ? 0 : generation - 1, kEmptyNodeId), now));
        if (generation > 1) {
          EXPECT_EQ(lifecycle.state(), before);
        }
      } else if (event == 5 && served && unit(rng) < 0.2) {
        served = false;
        last_verdict_yes = false;
        apply(lifecycle.SocketLost());
        apply({Step::kRecreate, std::nullopt, ""});  // Reconcile makes the path ours again
      } else {
        now += absl::Milliseconds(100);
      }
      if (lifecycle.registered()) {
        ASSERT_TRUE(served && last_verdict_yes) << "registered without kubelet's yes";
      }
      if (lifecycle.state() == State::kBackingOff) {
        ASSERT_FALSE(lifecycle.registered());
      }
    }
  }
}

}  // namespace
}  // namespace ndr::registrar

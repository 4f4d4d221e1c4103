#include "registrar/registration_watchdog.h"

#include <cctype>
#include <string>

#include "gtest/gtest.h"
#include "registrar/reg_socket.h"

namespace ndr::registrar {
namespace {

TEST(RegistrationWaitTest, DoublesAfterEachUnansweredOfferUpToSixMinutes) {
  const absl::Duration retry_after = absl::Minutes(2);
  EXPECT_EQ(RegistrationWait(retry_after, 0), absl::Minutes(2));
  EXPECT_EQ(RegistrationWait(retry_after, 1), absl::Minutes(4));
  EXPECT_EQ(RegistrationWait(retry_after, 2), absl::Minutes(6));
  EXPECT_EQ(RegistrationWait(retry_after, 50), absl::Minutes(6));
}

// The default never offers again a registration kubelet may still be working on: the first wait
// outlasts kubelet's longest registration (2 min 17.7 s: registration_watchdog.h) by more than
// half a minute, and the second a re-offer that queued behind a registration in flight and then
// took as long itself.
TEST(RegistrationWaitTest, TheDefaultOutlastsKubeletsLongestRegistration) {
  EXPECT_EQ(kKubeletLongestRegistration, absl::Milliseconds(137682));
  EXPECT_GE(RegistrationWait(kDefaultRegistrationRetryAfter, 0),
            kKubeletLongestRegistration + absl::Seconds(30));
  EXPECT_GE(RegistrationWait(kDefaultRegistrationRetryAfter, 1),
            2 * kKubeletLongestRegistration + absl::Seconds(30));
  EXPECT_EQ(RegistrationWait(kDefaultRegistrationRetryAfter, 0), absl::Minutes(3));
  EXPECT_EQ(RegistrationWait(kDefaultRegistrationRetryAfter, 1), absl::Minutes(6));
}

// The first wait outlasts the moment a kubelet that retries by itself comes back to a path that
// had not failed before: 500 ms of back-off plus a reconciler pass of 1 s
// (registration_watchdog.h).
TEST(TransientRefusalWaitTest, FirstLongEnoughToSeeKubeletRetryThenUpToEightSeconds) {
  EXPECT_GT(TransientRefusalWait(0), absl::Milliseconds(500) + absl::Seconds(1));
  EXPECT_EQ(TransientRefusalWait(0), kSelfRetryWindow);
  EXPECT_EQ(TransientRefusalWait(1), absl::Seconds(4));
  EXPECT_EQ(TransientRefusalWait(2), absl::Seconds(8));
  EXPECT_EQ(TransientRefusalWait(100), absl::Seconds(8));
  // Each name of the driver's socket comes back after all the others, each offered for at least
  // the wait that repeats: longer than kubelet's longest back-off, 2 min 2 s.
  EXPECT_GT((kRegistrationSocketNames - 1) * TransientRefusalWait(2),
            absl::Minutes(2) + absl::Seconds(2));
}

TEST(RegistrationWaitTest, ShortRetryAfterDoublesFromItself) {
  const absl::Duration retry_after = absl::Seconds(1);
  EXPECT_EQ(RegistrationWait(retry_after, 0), absl::Seconds(1));
  EXPECT_EQ(RegistrationWait(retry_after, 3), absl::Seconds(8));
  EXPECT_EQ(RegistrationWait(retry_after, 8), absl::Seconds(256));
  EXPECT_EQ(RegistrationWait(retry_after, 9), kMaxRegistrationRetryWait);
  // Enough offers to overflow a naive doubling stay at the cap.
  EXPECT_EQ(RegistrationWait(retry_after, 1000), kMaxRegistrationRetryWait);
}

TEST(RegistrationWaitTest, RetryAfterLongerThanTheCapIsTheCap) {
  EXPECT_EQ(RegistrationWait(absl::Minutes(10), 0), absl::Minutes(10));
  EXPECT_EQ(RegistrationWait(absl::Minutes(10), 3), absl::Minutes(10));
}

TEST(RegistrationWaitTest, ZeroTurnsTheWatchdogOff) {
  EXPECT_EQ(RegistrationWait(absl::ZeroDuration(), 0), absl::InfiniteDuration());
  EXPECT_EQ(RegistrationWait(absl::ZeroDuration(), 4), absl::InfiniteDuration());
}

struct RefusalCase {
  const char* name;
  RefusalContext context;
  RefusalVerdict verdict;
};

class ClassifyRefusalTest : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(ClassifyRefusalTest, Verdict) {
  const RefusalCase& c = GetParam();
  EXPECT_EQ(ClassifyRefusal(c.context), c.verdict) << c.name;
}

RefusalContext Context(uint64_t notice, uint64_t current, bool after_get_info, bool path_ours,
                       bool reoffer) {
  RefusalContext context;
  context.notice_generation = notice;
  context.current_generation = current;
  context.after_get_info = after_get_info;
  context.path_still_ours = path_ours;
  context.current_is_reoffer = reoffer;
  return context;
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, ClassifyRefusalTest,
    ::testing::Values(
        // Kubelet refused the socket the registrar serves, after asking GetInfo on it.
        RefusalCase{"kubelet's verdict", Context(1, 1, true, true, false), RefusalVerdict::kFatal},
        // The refusal came for the old socket; a new one has been created since.
        RefusalCase{"old socket", Context(1, 2, true, true, false),
                    RefusalVerdict::kReplacedSocket},
        // gRPC re-dialled the path: the refusal arrived on the new socket, never asked GetInfo.
        RefusalCase{"re-dialled without GetInfo", Context(2, 2, false, true, false),
                    RefusalVerdict::kReplacedSocket},
        RefusalCase{"old socket after a re-offer", Context(1, 2, true, true, true),
                    RefusalVerdict::kReplacedSocket},
        // The socket was deleted from the path and kubelet could not reach it again.
        RefusalCase{"socket gone", Context(3, 3, true, false, false), RefusalVerdict::kSocketGone},
        RefusalCase{"socket gone after a re-offer", Context(3, 3, true, false, true),
                    RefusalVerdict::kSocketGone},
        // Kubelet still has the first registration of this name and version.
        RefusalCase{"after our re-offer", Context(2, 2, true, true, true),
                    RefusalVerdict::kAfterReOffer}),
    [](const ::testing::TestParamInfo<RefusalCase>& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace ndr::registrar

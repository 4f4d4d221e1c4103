#include "registrar/registration_watchdog.h"

#include <string>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace ndr::registrar

// Waiting for a condition with a deadline instead of sleeping a guessed amount.
//
// A test's verdict must never depend on how fast the machine is: CI runs on two shared cores,
// often beside another build. So every wait is for the event itself, and its deadline is
// kPatience, which only a real hang reaches. Never use a shorter deadline to mean "it did not
// happen": wait for a later event that proves it would have happened by then.
#ifndef NDR_TEST_UTIL_POLL_H_
#define NDR_TEST_UTIL_POLL_H_

#include <chrono>
#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ndr::testing {

// How long a test waits for another process or thread before calling it hung.
inline constexpr absl::Duration kPatience = absl::Minutes(2);

// Calls `condition` every `interval` until it returns true (then returns true) or until `timeout`
// has passed (then returns false). The deadline bounds the test; the interval only sets how soon
// a condition that has become true is noticed.
inline bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout = kPatience,
                      absl::Duration interval = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (absl::Now() > deadline) return false;
    absl::SleepFor(interval);
  }
}

// The deadline for an RPC a test makes: kPatience from now. A call to a server that is not
// there fails at once (gRPC's default is not to wait for a connection), so this only bounds a
// server that accepted the call and never answers.
inline std::chrono::system_clock::time_point RpcDeadline() {
  return absl::ToChronoTime(absl::Now() + kPatience);
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_POLL_H_

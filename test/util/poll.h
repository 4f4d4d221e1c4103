// Waiting for a condition with a deadline instead of sleeping a guessed amount.
#ifndef NDR_TEST_UTIL_POLL_H_
#define NDR_TEST_UTIL_POLL_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ndr::testing {

// Calls `condition` every `interval` until it returns true (then returns true) or until `timeout`
// has passed (then returns false). The deadline bounds the test; the interval only sets how soon
// a condition that has become true is noticed.
inline bool PollUntil(const std::function<bool()>& condition,
                      absl::Duration timeout = absl::Seconds(10),
                      absl::Duration interval = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (absl::Now() > deadline) return false;
    absl::SleepFor(interval);
  }
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_POLL_H_

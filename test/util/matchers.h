// gMock matchers for absl::Status (abseil 20220623 ships none).
#ifndef NDR_TEST_UTIL_MATCHERS_H_
#define NDR_TEST_UTIL_MATCHERS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace ndr::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Matches an OK absl::Status or absl::StatusOr; prints the status otherwise.
MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

// Matches a status with `code` whose message contains `substring`.
MATCHER_P2(StatusIs, code, substring, "") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code && status.message().find(substring) != absl::string_view::npos;
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_MATCHERS_H_

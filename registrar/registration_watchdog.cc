#include "registrar/registration_watchdog.h"

#include <algorithm>

namespace ndr::registrar {

absl::Duration RegistrationWait(absl::Duration retry_after, int offers) {
  if (retry_after <= absl::ZeroDuration()) return absl::InfiniteDuration();
  const absl::Duration cap = std::max(kMaxRegistrationRetryWait, retry_after);
  absl::Duration wait = retry_after;
  for (int i = 0; i < offers && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

}  // namespace ndr::registrar

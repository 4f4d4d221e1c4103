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

absl::Duration TransientRefusalWait(int refusals) {
  if (refusals <= 0) return kSelfRetryWindow;
  return refusals == 1 ? absl::Seconds(4) : absl::Seconds(8);
}

RefusalVerdict ClassifyRefusal(const RefusalContext& refusal) {
  if (refusal.notice_generation != refusal.current_generation || !refusal.after_get_info) {
    return RefusalVerdict::kReplacedSocket;
  }
  if (!refusal.path_still_ours) return RefusalVerdict::kSocketGone;
  if (refusal.current_is_reoffer) return RefusalVerdict::kAfterReOffer;
  return RefusalVerdict::kFatal;
}

}  // namespace ndr::registrar

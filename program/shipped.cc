#include "program/shipped.h"

#include "absl/synchronization/mutex.h"

namespace ndr::program {

bool ChecksLockOrder() {
#ifdef NDR_SANITIZER_BUILD
  return true;
#else
  return false;
#endif
}

void SetUpShippedProgram() {
  if (!ChecksLockOrder()) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace ndr::program

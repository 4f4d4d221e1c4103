#include "program/shipped.h"

#include "absl/synchronization/mutex.h"
#include "logging/crash_report.h"

namespace ndr::program {

bool ChecksLockOrder() {
#ifdef NDR_SANITIZER_BUILD
  return true;
#else
  return false;
#endif
}

void SetUpShippedProgram(const char* argv0) {
  if (!ChecksLockOrder()) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  logging::InstallCrashReport(argv0);
}

}  // namespace ndr::program

// Lock-order checking: on in every test program (Debian's abseil is built with it) and in the
// sanitizer builds of the programs, so that an inversion anywhere a test reaches, ours or gRPC's,
// aborts; off in what we ship.
#include "program/shipped.h"

#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace ndr::program {
namespace {

// Takes a then b, then b then a, on one thread: no deadlock happens, but the order is inverted,
// which is what the detection is for (two threads doing this would deadlock one day).
void InvertLockOrder() {
  absl::Mutex a, b;
  a.Lock();
  b.Lock();
  b.Unlock();
  a.Unlock();
  b.Lock();
  a.Lock();
  a.Unlock();
  b.Unlock();
}

TEST(DeadlockDetectionTest, TestProgramsAbortOnALockOrderInversion) {
  EXPECT_DEATH(InvertLockOrder(), "Potential Mutex deadlock");
}

TEST(DeadlockDetectionTest, ShippedProgramsTrackLockOrderOnlyInSanitizerBuilds) {
  if (ChecksLockOrder()) {
    EXPECT_DEATH(
        {
          SetUpShippedProgram("shipped_test");
          InvertLockOrder();
        },
        "Potential Mutex deadlock");
  } else {
    EXPECT_EXIT(
        {
          SetUpShippedProgram("shipped_test");
          InvertLockOrder();
          std::exit(0);
        },
        ::testing::ExitedWithCode(0), "");
  }
}

}  // namespace
}  // namespace ndr::program

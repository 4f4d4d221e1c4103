#include "registrar/automaxprocs.h"

#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

CpuLimit Limited(double cores) {
  CpuLimit limit;
  limit.state = CpuLimit::State::kLimited;
  limit.cores = cores;
  limit.file = "/sys/fs/cgroup/cpu.max";
  return limit;
}

TEST(AutomaxprocsTest, ALimitSizesByItsWholeCpus) {
  const ThreadSizing sizing = DecideThreadSizing(Limited(1.5), 64);
  EXPECT_TRUE(sizing.limited);
  EXPECT_EQ(sizing.cpus, 1);
  EXPECT_EQ(sizing.host_cpus, 64);
}

TEST(AutomaxprocsTest, ALimitNeverRaisesTheHostsCount) {
  EXPECT_EQ(DecideThreadSizing(Limited(8), 2).cpus, 2);
}

TEST(AutomaxprocsTest, NoLimitOrNoneReadableChangesNothing) {
  CpuLimit unlimited;
  unlimited.state = CpuLimit::State::kUnlimited;
  CpuLimit unreadable;
  unreadable.error = "read /proc/self/cgroup: No such file or directory";
  for (const CpuLimit& limit : {unlimited, unreadable}) {
    const ThreadSizing sizing = DecideThreadSizing(limit, 16);
    EXPECT_FALSE(sizing.limited);
    EXPECT_EQ(sizing.cpus, 16);
  }
}

}  // namespace
}  // namespace ndr::registrar

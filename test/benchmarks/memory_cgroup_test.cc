#include "test/benchmarks/memory_cgroup.h"

#include "gtest/gtest.h"

namespace ndr::benchmarks {
namespace {

// memory.stat in the kernel's layout (cgroup-v2.rst, cgroup-v1/memory.rst): the fields used and
// some of their neighbours.
constexpr char kV2Stat[] =
    "anon 4136960\nfile 24530944\nkernel 393216\nkernel_stack 131072\nshmem 0\n"
    "file_mapped 8392704\nactive_anon 4096\ninactive_anon 4128768\nactive_file 73728\n"
    "inactive_file 24457216\nunevictable 0\n";
constexpr char kV1Stat[] =
    "cache 12034048\nrss 1032192\nactive_file 0\ninactive_file 12034048\n"
    "total_cache 12034048\ntotal_rss 1032192\ntotal_active_file 4096\n"
    "total_inactive_file 12029952\n";

TEST(ParseMemoryStat, ReadsV2Fields) {
  CgroupMemory m = ParseMemoryStat(true, kV2Stat, 29061120);
  EXPECT_EQ(m.anon, 4136960);
  EXPECT_EQ(m.file, 24530944);
  EXPECT_EQ(m.active_file, 73728);
  EXPECT_EQ(m.inactive_file, 24457216);
  EXPECT_EQ(m.working_set(), 29061120 - 24457216);
  EXPECT_EQ(m.kernel, 393216);
  EXPECT_EQ(m.charged_ahead(), 29061120 - 4136960 - 24530944 - 393216);
}

TEST(ParseMemoryStat, ReadsV1HierarchicalTotals) {
  CgroupMemory m = ParseMemoryStat(false, kV1Stat, 13590528, 262144);
  EXPECT_EQ(m.anon, 1032192);
  EXPECT_EQ(m.file, 12034048);
  EXPECT_EQ(m.active_file, 4096);
  EXPECT_EQ(m.inactive_file, 12029952);  // total_, not the cgroup's own line
  EXPECT_EQ(m.working_set(), 13590528 - 12029952);
  EXPECT_EQ(m.kernel, 262144);
  EXPECT_EQ(m.charged_ahead(), 13590528 - 1032192 - 12034048 - 262144);
}

TEST(ParseMemoryStat, V2TakesKernelMemoryFromTheStatNotTheArgument) {
  EXPECT_EQ(ParseMemoryStat(true, kV2Stat, 29061120, 999).kernel, 393216);
}

TEST(ParseMemoryStat, NothingChargedAheadWhenUsageIsAllAccountedFor) {
  EXPECT_EQ(ParseMemoryStat(false, kV1Stat, 1032192 + 12034048, 4096).charged_ahead(), 0);
}

TEST(ParseMemoryStat, AWorkingSetIsNeverNegative) {
  EXPECT_EQ(ParseMemoryStat(false, kV1Stat, 100).working_set(), 0);
}

}  // namespace
}  // namespace ndr::benchmarks

#include "registrar/cpu_limit.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/util/temp_dir.h"

namespace ndr::registrar {
namespace {

using ::ndr::testing::TempDir;

// A fake root: /proc/self/{cgroup,mountinfo} and the cgroup files, laid out as on a node.
class FakeRoot {
 public:
  FakeRoot() : dir_("cpu") {}

  const std::string& path() const { return dir_.path(); }

  void Write(const std::string& relative, const std::string& contents) {
    const std::string path = dir_.path() + relative;
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      mkdir(path.substr(0, slash).c_str(), 0700);
    }
    ASSERT_TRUE(::ndr::testing::WriteFile(path, contents)) << path;
  }

 private:
  TempDir dir_;
};

// A cgroup v1 node as kubelet's cgroupfs driver lays it out, seen from a container that has no
// cgroup namespace (the full path in /proc/self/cgroup, the hierarchy's root mounted).
constexpr char kV1Cgroup[] =
    "12:pids:/kubepods/burstable/pod1234/c0ffee\n"
    "4:cpu,cpuacct:/kubepods/burstable/pod1234/c0ffee\n"
    "1:name=systemd:/kubepods/burstable/pod1234/c0ffee\n"
    "0::/\n";
constexpr char kV1Mountinfo[] =
    "1120 1100 0:95 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
    "1130 1120 0:98 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "1131 1130 0:27 / /sys/fs/cgroup/pids ro,nosuid shared:9 - cgroup cgroup rw,pids\n"
    "1132 1130 0:28 / /sys/fs/cgroup/cpu,cpuacct ro,nosuid shared:10 - cgroup cgroup "
    "rw,cpu,cpuacct\n";
constexpr char kV1Dir[] = "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1234/c0ffee";

// A cgroup v2 container with its own cgroup namespace: it sees itself at "/".
constexpr char kV2Cgroup[] = "0::/\n";
constexpr char kV2Mountinfo[] =
    "1120 1100 0:95 / / rw,relatime - overlay overlay rw\n"
    "1130 1120 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw\n";

TEST(CpuLimitTest, CgroupV1WithALimit) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", kV1Cgroup);
  root.Write("/proc/self/mountinfo", kV1Mountinfo);
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_quota_us"), "150000\n");
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_period_us"), "100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  ASSERT_EQ(limit.state, CpuLimit::State::kLimited) << limit.error;
  EXPECT_DOUBLE_EQ(limit.cores, 1.5);
  EXPECT_EQ(limit.file, absl::StrCat(root.path(), kV1Dir, "/cpu.cfs_quota_us"));
  EXPECT_EQ(ThreadsForCores(limit.cores), 1);
}

TEST(CpuLimitTest, CgroupV1WithoutALimit) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", kV1Cgroup);
  root.Write("/proc/self/mountinfo", kV1Mountinfo);
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_quota_us"), "-1\n");
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_period_us"), "100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  EXPECT_EQ(limit.state, CpuLimit::State::kUnlimited) << limit.error;
  EXPECT_EQ(limit.file, absl::StrCat(root.path(), kV1Dir, "/cpu.cfs_quota_us"));
}

// A pod-level limit binds the container whose own cgroup has none.
TEST(CpuLimitTest, CgroupV1LimitOnThePodsCgroup) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", kV1Cgroup);
  root.Write("/proc/self/mountinfo", kV1Mountinfo);
  const std::string pod = "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1234";
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_quota_us"), "-1\n");
  root.Write(absl::StrCat(kV1Dir, "/cpu.cfs_period_us"), "100000\n");
  root.Write(pod + "/cpu.cfs_quota_us", "300000\n");
  root.Write(pod + "/cpu.cfs_period_us", "100000\n");
  root.Write("/sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_quota_us", "-1\n");
  root.Write("/sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_period_us", "100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  ASSERT_EQ(limit.state, CpuLimit::State::kLimited) << limit.error;
  EXPECT_DOUBLE_EQ(limit.cores, 3);
  EXPECT_EQ(limit.file, root.path() + pod + "/cpu.cfs_quota_us");
  EXPECT_EQ(ThreadsForCores(limit.cores), 3);
}

TEST(CpuLimitTest, CgroupV2WithALimit) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", kV2Cgroup);
  root.Write("/proc/self/mountinfo", kV2Mountinfo);
  root.Write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  ASSERT_EQ(limit.state, CpuLimit::State::kLimited) << limit.error;
  EXPECT_DOUBLE_EQ(limit.cores, 1);
  EXPECT_EQ(limit.file, root.path() + "/sys/fs/cgroup/cpu.max");
}

TEST(CpuLimitTest, CgroupV2WithoutALimit) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", kV2Cgroup);
  root.Write("/proc/self/mountinfo", kV2Mountinfo);
  root.Write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  EXPECT_EQ(limit.state, CpuLimit::State::kUnlimited) << limit.error;
}

// Without a cgroup namespace the full path is seen, below a mount of the hierarchy's root; the
// nearest limit is the lowest.
TEST(CpuLimitTest, CgroupV2FullPathWithLimitsAtTwoLevels) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", "0::/kubepods.slice/pod1/ctr\n");
  root.Write("/proc/self/mountinfo",
             "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  root.Write("/sys/fs/cgroup/kubepods.slice/pod1/ctr/cpu.max", "50000 100000\n");
  root.Write("/sys/fs/cgroup/kubepods.slice/pod1/cpu.max", "200000 100000\n");
  root.Write("/sys/fs/cgroup/kubepods.slice/cpu.max", "max 100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  ASSERT_EQ(limit.state, CpuLimit::State::kLimited) << limit.error;
  EXPECT_DOUBLE_EQ(limit.cores, 0.5);
  EXPECT_EQ(ThreadsForCores(limit.cores), 1) << "below one core still gets one thread";
}

// A hybrid host: v1 cpu controller mounted beside an empty cgroup2 hierarchy. The v1 one rules.
TEST(CpuLimitTest, HybridPrefersTheV1CpuController) {
  FakeRoot root;
  root.Write("/proc/self/cgroup", "4:cpu,cpuacct:/\n0::/\n");
  root.Write("/proc/self/mountinfo",
             "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
             "32 30 0:28 / /sys/fs/cgroup/cpu\\040acct rw - cgroup cgroup rw,cpu,cpuacct\n");
  root.Write("/sys/fs/cgroup/cpu acct/cpu.cfs_quota_us", "200000\n");
  root.Write("/sys/fs/cgroup/cpu acct/cpu.cfs_period_us", "100000\n");
  root.Write("/sys/fs/cgroup/unified/cpu.max", "max 100000\n");
  const CpuLimit limit = ReadCpuLimit(root.path());
  ASSERT_EQ(limit.state, CpuLimit::State::kLimited) << limit.error;
  EXPECT_DOUBLE_EQ(limit.cores, 2);
}

TEST(CpuLimitTest, UnreadableSaysWhat) {
  struct Case {
    const char* name;
    const char* cgroup;      // nullptr: no such file
    const char* mountinfo;   // nullptr: no such file
    const char* cpu_max;     // nullptr: no such file
    const char* error_part;  // expected in the error
  } cases[] = {
      {"no /proc/self/cgroup", nullptr, kV2Mountinfo, "max 100000", "/proc/self/cgroup"},
      {"no mountinfo", kV2Cgroup, nullptr, "max 100000", "/proc/self/mountinfo"},
      {"no cgroup mount", kV2Cgroup, "1 0 0:1 / / rw - ext4 /dev/vda rw\n", "max 100000",
       "neither a cgroup v1 cpu hierarchy nor cgroup v2"},
      {"no cpu.max", kV2Cgroup, kV2Mountinfo, nullptr, "cpu.max"},
      {"garbage in cpu.max", kV2Cgroup, kV2Mountinfo, "lots", "not \"<quota> <period>\""},
      {"cgroup outside the mount", "0::/other/ctr\n",
       "30 1 0:26 /kubepods /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "max 100000",
       "is not below the mounted part"},
  };
  for (const Case& c : cases) {
    FakeRoot root;
    if (c.cgroup) root.Write("/proc/self/cgroup", c.cgroup);
    if (c.mountinfo) root.Write("/proc/self/mountinfo", c.mountinfo);
    root.Write("/sys/fs/cgroup/.keep", "");
    if (c.cpu_max) root.Write("/sys/fs/cgroup/cpu.max", c.cpu_max);
    const CpuLimit limit = ReadCpuLimit(root.path());
    EXPECT_EQ(limit.state, CpuLimit::State::kUnreadable) << c.name;
    EXPECT_NE(limit.error.find(c.error_part), std::string::npos) << c.name << ": " << limit.error;
  }
}

TEST(CpuLimitTest, ThreadsForCoresRoundsDown) {
  EXPECT_EQ(ThreadsForCores(0.1), 1);
  EXPECT_EQ(ThreadsForCores(1), 1);
  EXPECT_EQ(ThreadsForCores(1.99), 1);
  EXPECT_EQ(ThreadsForCores(2), 2);
  EXPECT_EQ(ThreadsForCores(64), 64);
}

}  // namespace
}  // namespace ndr::registrar

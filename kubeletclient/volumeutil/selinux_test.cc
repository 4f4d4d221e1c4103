#include "kubeletclient/volumeutil/selinux.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

// go-selinux label.InitLabels: the mount label takes only the user and the level.
TEST(SeLinuxTest, FileLabelFromOptions) {
  SeLinuxHost host;
  host.enabled = true;
  EXPECT_EQ(SeLinuxOptionsToFileLabel(std::nullopt, host), "");
  EXPECT_EQ(SeLinuxOptionsToFileLabel(SeLinuxOptions{}, host), "");
  EXPECT_EQ(SeLinuxOptionsToFileLabel(SeLinuxOptions{"", "", "", "s0:c1,c2"}, host),
            "system_u:object_r:container_file_t:s0:c1,c2");
  EXPECT_EQ(SeLinuxOptionsToFileLabel(SeLinuxOptions{"staff_u", "staff_r", "spc_t", "s0"}, host),
            "staff_u:object_r:container_file_t:s0");
  host.file_context = "system_u:object_r:svirt_sandbox_file_t:s0";  // an older policy
  EXPECT_EQ(SeLinuxOptionsToFileLabel(SeLinuxOptions{"", "", "", "s0:c7,c8"}, host),
            "system_u:object_r:svirt_sandbox_file_t:s0:c7,c8");
}

// uniqMcs: two different categories below 1024, the smaller first; a fresh pair each time.
TEST(SeLinuxTest, MissingLevelIsARandomMcsPair) {
  SeLinuxHost host;
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    const std::string label = SeLinuxOptionsToFileLabel(SeLinuxOptions{"", "", "spc_t", ""}, host);
    int c1 = -1, c2 = -1;
    ASSERT_EQ(sscanf(label.c_str(), "system_u:object_r:container_file_t:s0:c%d,c%d", &c1, &c2), 2)
        << label;
    EXPECT_LT(c1, c2) << label;
    EXPECT_GE(c1, 0);
    EXPECT_LT(c2, 1024);
    seen.insert(label);
  }
  EXPECT_GT(seen.size(), 40u);  // 50 draws from ~523,000 pairs
}

TEST(SeLinuxTest, VolumeSupportsSeLinuxMount) {
  FeatureGates gates;
  EXPECT_TRUE(VolumeSupportsSeLinuxMount(gates, true, {"ReadWriteOncePod"}));
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, false, {"ReadWriteOncePod"}));
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, true, {"ReadWriteOnce"}));
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, true, {"ReadWriteOncePod", "ReadWriteOnce"}));
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, true, {}));
  gates.read_write_once_pod = false;
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, true, {"ReadWriteOncePod"}));
  gates = FeatureGates();
  gates.selinux_mount_read_write_once_pod = false;
  EXPECT_FALSE(VolumeSupportsSeLinuxMount(gates, true, {"ReadWriteOncePod"}));
}

TEST(SeLinuxTest, MountOptionIsQuotedForItsComma) {
  EXPECT_EQ(AddSeLinuxMountOption({"noatime"}, "system_u:object_r:container_file_t:s0:c1,c2"),
            (std::vector<std::string>{"noatime",
                                      "context=\"system_u:object_r:container_file_t:s0:c1,c2\""}));
}

TEST(SeLinuxTest, HostFlag) {
  absl::StatusOr<SeLinuxHost> host = ResolveHostSeLinux("true");
  ASSERT_THAT(host, IsOk());
  EXPECT_TRUE(host->enabled);
  EXPECT_EQ(host->file_context, "system_u:object_r:container_file_t:s0");
  host = ResolveHostSeLinux("false");
  ASSERT_THAT(host, IsOk());
  EXPECT_FALSE(host->enabled);
  EXPECT_THAT(ResolveHostSeLinux("auto"), IsOk());  // whatever this machine is
  EXPECT_THAT(ResolveHostSeLinux("yes"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--host-selinux: \"yes\" is not true, false or auto"));
}

}  // namespace
}  // namespace ndr::kubelet

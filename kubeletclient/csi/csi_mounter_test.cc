#include "kubeletclient/csi/csi_mounter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::TempDir;

// csi_mounter.go supportsFSGroup, case by case.
TEST(SupportsFsGroupTest, AsKubeletDecides) {
  struct Case {
    const char* name;
    std::optional<int64_t> fs_group;
    std::string policy;
    bool read_only;
    std::string fs_type;
    bool rwo;
    bool expected;
  } cases[] = {
      {"no fsGroup", std::nullopt, "ReadWriteOnceWithFSType", false, "ext4", true, false},
      {"policy None", 2000, "None", false, "ext4", true, false},
      {"read-only", 2000, "File", true, "ext4", true, false},
      {"policy File, no fs type, not RWO", 2000, "File", false, "", false, true},
      {"default policy, fs type, RWO", 2000, "ReadWriteOnceWithFSType", false, "ext4", true, true},
      {"default policy, no fs type", 2000, "ReadWriteOnceWithFSType", false, "", true, false},
      {"default policy, not RWO", 2000, "ReadWriteOnceWithFSType", false, "ext4", false, false},
  };
  for (const Case& c : cases) {
    VolumePlan plan;
    plan.fs_group = c.fs_group;
    plan.fs_group_policy = c.policy;
    plan.read_only = c.read_only;
    plan.capability.fs_type = c.fs_type;
    plan.access_modes_include_rwo = c.rwo;
    EXPECT_EQ(SupportsFsGroup(plan), c.expected) << c.name;
  }
}

TEST(SetVolumeOwnershipTest, GroupAndModesAsVolumeLinuxGo) {
  if (geteuid() != 0) GTEST_SKIP() << "changing a file's group to any gid needs root";
  TempDir dir("own");
  const std::string volume = dir.Join("mount");
  ASSERT_EQ(mkdir(volume.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((volume + "/sub").c_str(), 0700), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(volume + "/sub/file", "x"));
  ASSERT_EQ(chmod((volume + "/sub/file").c_str(), 0600), 0);
  // A link to a file outside the volume, whose owner and mode must not change.
  const std::string outside = dir.Join("outside");
  ASSERT_TRUE(::ndr::testing::WriteFile(outside, "x"));
  ASSERT_EQ(chmod(outside.c_str(), 0644), 0);
  ASSERT_EQ(symlink(outside.c_str(), (volume + "/link").c_str()), 0);
  struct stat before;
  ASSERT_EQ(stat(outside.c_str(), &before), 0);

  ASSERT_THAT(SetVolumeOwnership(volume, 4242, /*read_only=*/false), IsOk());
  struct stat st;
  ASSERT_EQ(lstat((volume + "/sub/file").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4242u);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  ASSERT_EQ(lstat((volume + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4242u);
  EXPECT_EQ(st.st_mode & 07777, 02770u);  // setgid, rwx for owner and group
  ASSERT_EQ(lstat((volume + "/link").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4242u);  // the link itself (lchown)...
  struct stat after;
  ASSERT_EQ(stat(outside.c_str(), &after), 0);
  EXPECT_EQ(after.st_gid, before.st_gid);  // ...never what it points to
  EXPECT_EQ(after.st_mode, before.st_mode);

  ASSERT_THAT(SetVolumeOwnership(volume, 4343, /*read_only=*/true), IsOk());
  ASSERT_EQ(lstat((volume + "/sub/file").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4343u);
  EXPECT_EQ(st.st_mode & 07777, 0660u);  // 0440 added to what is there
}

// The volume's directory inside the root swapped for a link to a directory outside: nothing
// there changes.
TEST(SetVolumeOwnershipTest, NothingThroughALinkInsideTheRoot) {
  TempDir dir("ownlink");
  const std::string root = dir.Join("root"), outside = dir.Join("outside");
  for (const std::string& d : {root, root + "/pods", outside}) {
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
  }
  ASSERT_TRUE(::ndr::testing::WriteFile(outside + "/file", "x"));
  ASSERT_EQ(chmod((outside + "/file").c_str(), 0600), 0);
  ASSERT_EQ(symlink(outside.c_str(), (root + "/pods/uid").c_str()), 0);
  EXPECT_THAT(SetVolumeOwnership(root, root + "/pods/uid/mount", getegid(), false),
              ::ndr::testing::StatusIs(absl::StatusCode::kInternal,
                                       "applyFSGroup failed for vol " + root +
                                           "/pods/uid/mount: open pods/uid/mount: a symbolic "
                                           "link on the way"));
  ASSERT_EQ(mkdir((outside + "/mount").c_str(), 0700), 0);
  EXPECT_FALSE(SetVolumeOwnership(root, root + "/pods/uid/mount", getegid(), false).ok());
  struct stat st;
  ASSERT_EQ(stat((outside + "/mount").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat((outside + "/file").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

}  // namespace
}  // namespace ndr::kubelet

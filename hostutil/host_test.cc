// Bind mounts and loop devices for real, as root on the host. Each case cleans up after itself
// even when it fails (every mount and loop device it made is undone before the directory goes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::hostutil {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CanChangeHost(&why)) GTEST_SKIP() << "needs root on the host: " << why;
  }
};

TEST_F(HostTest, BindMountOfAFileAndALoopDeviceOverIt) {
  TempDir dir("host");
  // A space in the path: mountinfo escapes it, and IsMountPoint must still find the mount.
  const std::string source = dir.Join("disk image"), target = dir.Join("bound here");
  ASSERT_TRUE(WriteFile(source, std::string(4096, 'x')));
  ASSERT_TRUE(WriteFile(target, ""));
  EXPECT_FALSE(IsMountPoint(target));
  ASSERT_THAT(BindMount(source, target), IsOk());
  absl::Cleanup unmount = [&] { (void)Unmount(target); };
  EXPECT_TRUE(IsMountPoint(target));
  struct stat st;
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4096);  // the target shows the source

  absl::StatusOr<std::optional<std::string>> none = FindLoopDevice(target);
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());
  absl::StatusOr<std::string> device = AttachLoopDevice(target);
  ASSERT_THAT(device, IsOk());
  absl::Cleanup detach = [&] { (void)DetachLoopDevice(*device); };
  EXPECT_THAT(*device, ::testing::StartsWith("/dev/loop"));
  absl::StatusOr<std::optional<std::string>> found = FindLoopDevice(target);
  ASSERT_THAT(found, IsOk());
  EXPECT_EQ(found->value_or("none"), *device);

  EXPECT_THAT(DetachLoopDevice(*device), IsOk());
  found = FindLoopDevice(target);
  ASSERT_THAT(found, IsOk());
  EXPECT_FALSE(found->has_value());
  EXPECT_THAT(Unmount(target), IsOk());
  EXPECT_FALSE(IsMountPoint(target));
}

// kubelet's MakeRShared on a directory: once shared, what is mounted below it propagates (as
// drivers that check the propagation of their mounts need), and it is made only once.
TEST_F(HostTest, MakeRSharedBindsADirectoryOnItselfOnlyWhenItIsNotShared) {
  TempDir dir("host");
  const std::string root = dir.Join("root"), below = dir.Join("root/below");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(below.c_str(), 0755), 0);
  absl::StatusOr<bool> before = IsOnSharedMount(root);
  ASSERT_THAT(before, IsOk());
  bool made = false;
  ASSERT_THAT(MakeRShared(root, &made), IsOk());
  absl::Cleanup unmount = [&] {
    if (made) (void)Unmount(root);
  };
  EXPECT_EQ(made, !*before);  // the machine's /tmp may be shared already (systemd makes / so)
  EXPECT_EQ(IsMountPoint(root), made);
  EXPECT_EQ(IsOnSharedMount(root).value_or(false), true);
  ASSERT_THAT(BindMount(below, below), IsOk());
  EXPECT_EQ(IsOnSharedMount(below).value_or(false), true);
  EXPECT_THAT(Unmount(below), IsOk());
  bool again = true;
  EXPECT_THAT(MakeRShared(root, &again), IsOk());
  EXPECT_FALSE(again);
  EXPECT_THAT(IsOnSharedMount(dir.Join("missing")).status().message(),
              ::testing::HasSubstr("realpath " + dir.Join("missing")));
}

TEST_F(HostTest, ErrorsNameWhatFailed) {
  TempDir dir("host");
  absl::Status status = BindMount(dir.Join("missing"), dir.Join("also-missing"));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("mount --bind " + dir.Join("missing")));
  EXPECT_THAT(AttachLoopDevice(dir.Join("missing")).status().message(),
              ::testing::HasSubstr("open " + dir.Join("missing") + ": No such file"));
  absl::StatusOr<std::optional<std::string>> found = FindLoopDevice(dir.Join("missing"));
  ASSERT_THAT(found, IsOk());
  EXPECT_FALSE(found->has_value());
  EXPECT_THAT(DetachLoopDevice("/dev/loop-that-does-not-exist"), IsOk());
}

}  // namespace
}  // namespace ndr::hostutil

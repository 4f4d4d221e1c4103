// MapBlockVolume and UnmapBlockVolume as kubelet's util.go runs them, step for step: without
// host changes (files and links only, the rest skipped and said so), and for real as root on
// the host, where the device the driver published is a loop device bind-mounted at the publish
// path, as csi-driver-host-path publishes one.
#include "kubeletclient/volumeutil/volume_path_handler.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;

std::vector<std::string> Describe(const std::vector<HostStep>& steps, const std::string& root) {
  std::vector<std::string> lines;
  auto strip = [&](std::string text) {
    for (size_t at; (at = text.find(root)) != std::string::npos;) text.replace(at, root.size(), "<d>");
    return text;
  };
  for (const HostStep& step : steps) {
    lines.push_back(strip(step.operation + " " + step.path +
                          (step.detail.empty() ? "" : " (" + step.detail + ")") + ": " +
                          step.result));
  }
  return lines;
}

TEST(VolumePathHandlerTest, WithoutHostChangesFilesAndLinksOnly) {
  TempDir dir("vph");
  const std::string publish = dir.Join("publish-file");
  ASSERT_TRUE(WriteFile(publish, ""));
  const std::string global = dir.Join("pv/dev"), pod_dir = dir.Join("pod/volumeDevices/csi");
  std::vector<HostStep> steps;
  VolumePathHandler handler(false, "not running as root", &steps);
  ASSERT_THAT(MapBlockVolume(&handler, publish, global, pod_dir, "pv-1", "uid-a"), IsOk());
  EXPECT_THAT(Describe(steps, dir.path()),
              ::testing::ElementsAre(
                  "bind mount <d>/pv/dev/uid-a (<d>/publish-file): skipped: not running as root",
                  "symlink <d>/pod/volumeDevices/csi/pv-1 (<d>/publish-file): done",
                  "attach loop device <d>/pv/dev/uid-a: skipped: not running as root"));
  struct stat st;
  ASSERT_EQ(stat(dir.Join("pv/dev/uid-a").c_str(), &st), 0);  // the bind mount's empty file
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  char target[256] = {};
  ASSERT_GT(readlink(dir.Join("pod/volumeDevices/csi/pv-1").c_str(), target, sizeof(target)), 0);
  EXPECT_EQ(std::string(target), publish);
  absl::StatusOr<std::vector<std::string>> refs = handler.GetDeviceBindMountRefs(global);
  ASSERT_THAT(refs, IsOk());
  EXPECT_TRUE(refs->empty());  // a plain file is no device: kubelet does not count it

  steps.clear();
  ASSERT_THAT(UnmapBlockVolume(&handler, global, pod_dir, "pv-1", "uid-a"), IsOk());
  EXPECT_THAT(Describe(steps, dir.path()),
              ::testing::ElementsAre("detach loop device <d>/pv/dev/uid-a: done: there is none",
                                     "remove symlink <d>/pod/volumeDevices/csi/pv-1: done",
                                     "remove <d>/pv/dev/uid-a: done"));
  EXPECT_NE(lstat(dir.Join("pod/volumeDevices/csi/pv-1").c_str(), &st), 0);
  EXPECT_NE(lstat(dir.Join("pv/dev/uid-a").c_str(), &st), 0);
  // Repeated, as kubelet repeats an unmap after a failure: nothing left to do is no error.
  steps.clear();
  ASSERT_THAT(UnmapBlockVolume(&handler, global, pod_dir, "pv-1", "uid-a"), IsOk());
  EXPECT_THAT(Describe(steps, dir.path()),
              ::testing::ElementsAre("detach loop device <d>/pv/dev/uid-a: done: there is none",
                                     "remove symlink <d>/pod/volumeDevices/csi/pv-1: done: there is none",
                                     "unmount <d>/pv/dev/uid-a: done: there is none"));
  EXPECT_THAT(handler.RemoveMapPath(global), IsOk());
  EXPECT_NE(lstat(global.c_str(), &st), 0);
}

TEST(VolumePathHandlerTest, ErrorsAreKubelets) {
  std::vector<HostStep> steps;
  VolumePathHandler handler(false, "test", &steps);
  EXPECT_EQ(handler.MapDevice("", "/x", "y", true).message(),
            "failed to map device to map path. devicePath is empty");
  EXPECT_EQ(handler.MapDevice("/dev/x", "relative", "y", false).message(),
            "the map path should be absolute: map path: relative");
  TempDir dir("vph");
  absl::StatusOr<std::string> missing = EvalHostSymlinks(dir.Join("missing"));
  EXPECT_EQ(missing.status().message(),
            "lstat " + dir.Join("missing") + ": no such file or directory");  // Go's words
}

// As root on the host: the whole mapping for real, and nothing left afterwards.
TEST(VolumePathHandlerTest, WithHostChangesForReal) {
  std::string why;
  if (!hostutil::CanChangeHost(&why)) GTEST_SKIP() << "needs root on the host: " << why;
  TempDir dir("vph");
  // The driver's side: a disk image, a loop device over it, bound at the publish path.
  const std::string image = dir.Join("disk.img"), publish = dir.Join("publish-file");
  ASSERT_TRUE(WriteFile(image, std::string(65536, '\0')));
  ASSERT_TRUE(WriteFile(publish, ""));
  absl::StatusOr<std::string> disk = hostutil::AttachLoopDevice(image);
  ASSERT_THAT(disk, IsOk());
  absl::Cleanup detach_disk = [&] { (void)hostutil::DetachLoopDevice(*disk); };
  ASSERT_THAT(hostutil::BindMount(*disk, publish), IsOk());
  absl::Cleanup unmount_publish = [&] { (void)hostutil::Unmount(publish); };

  const std::string global = dir.Join("pv/dev"), pod_dir = dir.Join("pod/volumeDevices/csi");
  const std::string locked = global + "/uid-a";
  std::vector<HostStep> steps;
  VolumePathHandler handler(true, "", &steps);
  absl::Cleanup undo = [&] {  // whatever an assertion left behind
    if (auto loop = hostutil::FindLoopDevice(locked); loop.ok() && loop->has_value()) {
      (void)hostutil::DetachLoopDevice(**loop);
    }
    if (hostutil::IsMountPoint(locked)) (void)hostutil::Unmount(locked);
  };
  ASSERT_THAT(MapBlockVolume(&handler, publish, global, pod_dir, "pv-1", "uid-a"), IsOk());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].result, "done");
  EXPECT_EQ(steps[1].result, "done");
  EXPECT_EQ(steps[2].result, "done");
  EXPECT_THAT(steps[2].detail, ::testing::StartsWith("/dev/loop"));
  struct stat st;
  ASSERT_EQ(lstat(locked.c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));  // the bind mount shows the driver's device
  EXPECT_TRUE(hostutil::IsMountPoint(locked));
  absl::StatusOr<std::vector<std::string>> refs = handler.GetDeviceBindMountRefs(global);
  ASSERT_THAT(refs, IsOk());
  EXPECT_THAT(*refs, ::testing::ElementsAre(locked));

  // Mapping again changes nothing: the bind mount and the loop device are there already.
  steps.clear();
  ASSERT_THAT(MapBlockVolume(&handler, publish, global, pod_dir, "pv-1", "uid-a"), IsOk());
  EXPECT_EQ(steps[0].result, "done: it is mounted already");
  EXPECT_EQ(steps[2].result, "done: it is attached already");

  steps.clear();
  ASSERT_THAT(UnmapBlockVolume(&handler, global, pod_dir, "pv-1", "uid-a"), IsOk());
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].operation, "detach loop device");
  EXPECT_EQ(steps[0].result, "done");
  EXPECT_EQ(steps[2].operation, "unmount");
  EXPECT_EQ(steps[2].result, "done");
  EXPECT_EQ(steps[3].operation, "remove");
  EXPECT_FALSE(hostutil::IsMountPoint(locked));
  EXPECT_NE(lstat(locked.c_str(), &st), 0);
  absl::StatusOr<std::optional<std::string>> loop = hostutil::FindLoopDevice(locked);
  ASSERT_THAT(loop, IsOk());
  EXPECT_FALSE(loop->has_value());
}

}  // namespace
}  // namespace ndr::kubelet

// Raw block volumes published for real, as root on the host: the target is a bind mount of a
// loop device over the volume's disk image, and nothing of it is left once the volume is
// unpublished and unstaged. Each case undoes every mount and loop device it made, even when it
// fails, before its directory goes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "test/csidriver/sample_driver.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::sample {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::TempDir;

// The mountinfo entries whose mount point is `path` (a path without spaces).
int MountCount(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  int count = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(absl::StrCat(" ", path, " ")) != std::string::npos) ++count;
  }
  return count;
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::optional<std::string> LoopDeviceOf(const std::string& image) {
  absl::StatusOr<std::optional<std::string>> device = hostutil::FindLoopDevice(image);
  EXPECT_THAT(device, IsOk());
  return device.ok() ? *device : std::nullopt;
}

class SampleDriverHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!hostutil::CanChangeHost(&why)) GTEST_SKIP() << "needs root on the host: " << why;
    for (const char* d : {"kubelet", "kubelet/staging", "kubelet/staging/pv-1", "kubelet/publish",
                          "kubelet/publish/pv-1"}) {
      ASSERT_EQ(mkdir(dir_.Join(d).c_str(), 0750), 0) << d;
    }
    DriverOptions options;
    options.node_id = "node-1";
    options.data_dir = dir_.Join("data");
    options.stage_unstage = true;
    node_.emplace(options);  // change_host decided by CanChangeHost, as the binary does
  }

  // Undoes whatever a case left, failed or not: mounts at the targets, then the image's loop
  // devices. Each case calls it from an absl::Cleanup made before it changes the host.
  void UndoHostChanges() {
    for (const std::string& target : {target1_, target2_}) {
      while (hostutil::IsMountPoint(target)) {
        if (!hostutil::Unmount(target).ok()) break;
      }
    }
    for (int i = 0; i < 8; ++i) {
      absl::StatusOr<std::optional<std::string>> device = hostutil::FindLoopDevice(image_);
      if (!device.ok() || !device->has_value()) break;
      (void)hostutil::DetachLoopDevice(**device);
    }
  }

  absl::Status Stage() {
    csi::v1::NodeStageVolumeResponse response;
    const csi::v1::NodeStageVolumeRequest request = StageRequest();
    return FromGrpc(node_->NodeStageVolume(nullptr, &request, &response));  // no context used
  }

  absl::Status Unstage() {
    csi::v1::NodeUnstageVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_staging_target_path(dir_.Join("kubelet/staging/pv-1"));
    csi::v1::NodeUnstageVolumeResponse response;
    return FromGrpc(node_->NodeUnstageVolume(nullptr, &request, &response));
  }

  absl::Status Publish(const std::string& target) {
    csi::v1::NodePublishVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_target_path(target);
    request.set_staging_target_path(dir_.Join("kubelet/staging/pv-1"));
    *request.mutable_volume_capability() = StageRequest().volume_capability();
    csi::v1::NodePublishVolumeResponse response;
    return FromGrpc(node_->NodePublishVolume(nullptr, &request, &response));
  }

  absl::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_target_path(target);
    csi::v1::NodeUnpublishVolumeResponse response;
    return FromGrpc(node_->NodeUnpublishVolume(nullptr, &request, &response));
  }

  csi::v1::NodeStageVolumeRequest StageRequest() {
    csi::v1::NodeStageVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_staging_target_path(dir_.Join("kubelet/staging/pv-1"));
    request.mutable_volume_capability()->mutable_block();
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    return request;
  }

  TempDir dir_{"drvh"};
  const std::string image_ = dir_.Join("data/blk-1.img");
  const std::string target1_ = dir_.Join("kubelet/publish/pv-1/pod-uid-1");
  const std::string target2_ = dir_.Join("kubelet/publish/pv-1/pod-uid-2");
  std::optional<NodeService> node_;
};

TEST_F(SampleDriverHostTest, TargetsAreBindMountsOfTheImagesLoopDevice) {
  absl::Cleanup undo = [this] { UndoHostChanges(); };
  ASSERT_THAT(Stage(), IsOk());
  EXPECT_FALSE(LoopDeviceOf(image_).has_value()) << "stage attaches nothing";

  ASSERT_THAT(Publish(target1_), IsOk());
  struct stat target_st;
  ASSERT_EQ(stat(target1_.c_str(), &target_st), 0);
  EXPECT_TRUE(S_ISBLK(target_st.st_mode)) << "target is not a block device";
  EXPECT_TRUE(hostutil::IsMountPoint(target1_));
  const std::optional<std::string> device = LoopDeviceOf(image_);
  ASSERT_TRUE(device.has_value()) << "no loop device over " << image_;
  struct stat device_st;
  ASSERT_EQ(stat(device->c_str(), &device_st), 0);
  EXPECT_EQ(target_st.st_rdev, device_st.st_rdev) << "target is not " << *device;

  // What is written to the device lands in the image: it is the volume's data.
  {
    const int fd = open(target1_.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, "hello", 5, 4096), 5);
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
    std::ifstream in(image_, std::ios::binary);
    in.seekg(4096);
    char data[5] = {};
    in.read(data, 5);
    EXPECT_EQ(std::string(data, 5), "hello");
  }

  // Repeated: nothing is mounted again. A second pod shares the loop device.
  ASSERT_THAT(Publish(target1_), IsOk());
  EXPECT_EQ(MountCount(target1_), 1);
  ASSERT_THAT(Publish(target2_), IsOk());
  ASSERT_EQ(stat(target2_.c_str(), &target_st), 0);
  EXPECT_TRUE(S_ISBLK(target_st.st_mode));
  EXPECT_EQ(target_st.st_rdev, device_st.st_rdev);
  EXPECT_EQ(LoopDeviceOf(image_), device);

  // The first pod goes: its mount goes, the device stays for the second.
  ASSERT_THAT(Unpublish(target1_), IsOk());
  EXPECT_FALSE(hostutil::IsMountPoint(target1_));
  EXPECT_NE(access(target1_.c_str(), F_OK), 0) << "target file left behind";
  EXPECT_EQ(LoopDeviceOf(image_), device);
  EXPECT_TRUE(hostutil::IsMountPoint(target2_));

  ASSERT_THAT(Unpublish(target2_), IsOk());
  EXPECT_THAT(Unpublish(target2_), IsOk());
  ASSERT_THAT(Unstage(), IsOk());
  for (const std::string& target : {target1_, target2_}) {
    EXPECT_FALSE(hostutil::IsMountPoint(target)) << target;
    EXPECT_NE(access(target.c_str(), F_OK), 0) << target;
  }
  EXPECT_FALSE(LoopDeviceOf(image_).has_value()) << "loop device left attached";
  struct stat image_st;
  EXPECT_EQ(stat(image_.c_str(), &image_st), 0) << "the image is the volume's data; it stays";
}

TEST_F(SampleDriverHostTest, UnstageDetachesALoopDeviceLeftBehind) {
  // A loop device over the image that no published target uses (a driver that stopped between
  // attaching and publishing): unstage detaches it.
  absl::Cleanup undo = [this] { UndoHostChanges(); };
  ASSERT_THAT(Stage(), IsOk());
  absl::StatusOr<std::string> device = hostutil::AttachLoopDevice(image_);
  ASSERT_THAT(device, IsOk());
  ASSERT_THAT(Unstage(), IsOk());
  EXPECT_FALSE(LoopDeviceOf(image_).has_value());
}

TEST_F(SampleDriverHostTest, WithoutStagingPublishMakesTheImageAndUnpublishDetaches) {
  absl::Cleanup undo = [this] { UndoHostChanges(); };
  DriverOptions options;
  options.node_id = "node-1";
  options.data_dir = dir_.Join("data");
  node_.emplace(options);
  ASSERT_THAT(Publish(target1_), IsOk());  // kubelet's staging_target_path is ignored
  struct stat st;
  ASSERT_EQ(stat(image_.c_str(), &st), 0) << "publish made no image";
  ASSERT_EQ(stat(target1_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));
  EXPECT_TRUE(LoopDeviceOf(image_).has_value());
  ASSERT_THAT(Unpublish(target1_), IsOk());
  EXPECT_FALSE(hostutil::IsMountPoint(target1_));
  EXPECT_NE(access(target1_.c_str(), F_OK), 0);
  EXPECT_FALSE(LoopDeviceOf(image_).has_value()) << "loop device left attached";
}

}  // namespace
}  // namespace ndr::sample

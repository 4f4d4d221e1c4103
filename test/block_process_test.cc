// Raw block volumes end to end, with real devices: the sample driver, our registrar and
// kubeletclient as processes on real sockets, as root on the host. The driver publishes a loop
// device over its disk image, bound at the file kubelet names; kubeletclient maps it into the
// pod as kubelet v1.26 does (util.MapBlockVolume: a bind mount at the global map path, the pod's
// symbolic link, a loop device over the bind mount); data written through the pod's device
// reaches the disk image; and after unpublish no mount and no loop device is left.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::HasSubstr;

// The mounts below `dir`, from /proc/self/mountinfo.
std::vector<std::string> MountsUnder(const std::string& dir) {
  std::vector<std::string> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    fields >> id >> parent >> device >> root >> point;
    if (absl::StartsWith(point, dir + "/")) mounts.push_back(point);
  }
  return mounts;
}

// The loop devices whose backing file is below `dir`.
std::vector<std::string> LoopsUnder(const std::string& dir) {
  std::vector<std::string> loops;
  for (int n = 0; n < 256; ++n) {
    std::string backing;
    if (ReadFile(absl::StrCat("/sys/block/loop", n, "/loop/backing_file"), &backing) &&
        absl::StartsWith(backing, dir + "/")) {
      loops.push_back(absl::StrCat("/dev/loop", n));
    }
  }
  return loops;
}

std::string PodYaml(const std::string& name, const std::string& uid) {
  return absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: ", name,
                      ", namespace: shop, uid: ", uid,
                      "}\nspec:\n  containers:\n  - name: db\n    image: postgres\n"
                      "    volumeDevices: [{name: disk, devicePath: /dev/xvda}]\n"
                      "  volumes:\n  - {name: disk, persistentVolumeClaim: {claimName: disk}}\n");
}

constexpr char kObjects[] = R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec: {attachRequired: false}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: disk, namespace: shop, uid: claim-1}
spec: {volumeName: pv-disk, volumeMode: Block}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-disk}
spec:
  claimRef: {namespace: shop, name: disk, uid: claim-1}
  accessModes: [ReadWriteMany]
  volumeMode: Block
  csi: {driver: sample.csi.example.com, volumeHandle: vol-disk}
)";

class BlockProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!hostutil::CanChangeHost(&why)) GTEST_SKIP() << "needs root on the host: " << why;
    for (const std::string& d : {dir_.Join("csi"), reg_, root_, data_}) {
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    }
    ASSERT_TRUE(WriteFile(dir_.Join("objects.yaml"), kObjects));
    driver_ = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("test/csidriver/sample-csi-driver"),
                                 "--endpoint=" + dir_.Join("csi/csi.sock"), "--nodeid=node-1",
                                 "--stage-unstage", "--data-dir=" + data_},
        dir_.Join("driver.log"));
    registrar_ = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("registrar/csi-node-driver-registrar"),
                                 "--csi-address=" + dir_.Join("csi/csi.sock"),
                                 "--kubelet-registration-path=" + dir_.Join("csi/csi.sock"),
                                 "--plugin-registration-path=" + reg_, "--timeout=60s"},
        dir_.Join("registrar.log"));
    ASSERT_TRUE(PollUntil([&] {
      struct stat st;
      return stat((reg_ + "/sample.csi.example.com-reg.sock").c_str(), &st) == 0;
    })) << registrar_->Log();
  }

  void TearDown() override {
    // Whatever a failed assertion left: the mounts (deepest first) and loop devices.
    std::vector<std::string> mounts = MountsUnder(dir_.path());
    for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) (void)hostutil::Unmount(*it);
    for (const std::string& loop : LoopsUnder(dir_.path())) (void)hostutil::DetachLoopDevice(loop);
  }

  int Run(const std::string& command, const std::string& pod, std::string* output) {
    const std::string pod_file = dir_.Join(absl::StrCat("pod", runs_, ".yaml"));
    EXPECT_TRUE(WriteFile(pod_file, pod));
    std::vector<std::string> argv = {Runfile("kubeletclient/kubeletclient"), command,
                                     "--pod=" + pod_file, "--plugin-registry-dir=" + reg_,
                                     "--root-dir=" + root_, "--node-name=node-1",
                                     "--get-info-timeout=60s", "--notify-timeout=60s"};
    if (command == "publish") argv.push_back("--objects=" + dir_.Join("objects.yaml"));
    Subprocess run(argv, dir_.Join(absl::StrCat("run", runs_++, ".log")));
    const std::optional<int> code = run.Wait();
    *output = run.Log();
    return code.value_or(-1);
  }

  TempDir dir_{"blk"};
  const std::string reg_ = dir_.Join("reg"), root_ = dir_.Join("root"), data_ = dir_.Join("data");
  std::unique_ptr<Subprocess> driver_, registrar_;
  int runs_ = 0;
};

TEST_F(BlockProcessTest, TwoPodsMapOneVolumeForReal) {
  const std::string devices = root_ + "/plugins/kubernetes.io/csi/volumeDevices";
  std::string out;
  ASSERT_EQ(Run("publish", PodYaml("a", "uid-a"), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("\"operation\": \"bind mount\""));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("skipped:")));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("failed:")));
  ASSERT_EQ(Run("publish", PodYaml("b", "uid-b"), &out), 0) << out;

  for (const std::string uid : {"uid-a", "uid-b"}) {
    // The driver's device at the publish path; kubelet's bind mount of it, with a loop device
    // over it; the pod's link to the publish path.
    struct stat st;
    const std::string publish = devices + "/publish/pv-disk/" + uid;
    ASSERT_EQ(stat(publish.c_str(), &st), 0) << uid;
    EXPECT_TRUE(S_ISBLK(st.st_mode)) << uid;
    const std::string bound = devices + "/pv-disk/dev/" + uid;
    ASSERT_EQ(lstat(bound.c_str(), &st), 0) << uid;
    EXPECT_TRUE(S_ISBLK(st.st_mode)) << uid;
    EXPECT_TRUE(hostutil::IsMountPoint(bound)) << uid;
    absl::StatusOr<std::optional<std::string>> loop = hostutil::FindLoopDevice(bound);
    ASSERT_TRUE(loop.ok() && loop->has_value()) << uid;
    const std::string link = root_ + "/pods/" + uid + "/volumeDevices/kubernetes.io~csi/pv-disk";
    char target[4096] = {};
    ASSERT_GT(readlink(link.c_str(), target, sizeof(target) - 1), 0) << uid;
    EXPECT_EQ(std::string(target), publish) << uid;
  }
  // What a container writes to its /dev/xvda is the volume's data: the driver's disk image.
  {
    const std::string link = root_ + "/pods/uid-a/volumeDevices/kubernetes.io~csi/pv-disk";
    const int fd = open(link.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "written by pod a", 16, 0), 16);
    ASSERT_EQ(fsync(fd), 0);
    close(fd);
    std::string image;
    ASSERT_TRUE(ReadFile(data_ + "/vol-disk.img", &image));
    EXPECT_EQ(image.substr(0, 16), "written by pod a");
  }

  ASSERT_EQ(Run("unpublish", PodYaml("a", "uid-a"), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("UnmapDevice skipped: another pod on this node maps the volume"));
  ASSERT_EQ(Run("unpublish", PodYaml("b", "uid-b"), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("\"method\": \"NodeUnstageVolume\""));
  // Nothing mounted below the root, which stays on a shared mount as kubelet leaves it (a bind
  // mount of its own where /tmp is not shared: kubelet.go setupDataDirs, MakeRShared).
  EXPECT_THAT(MountsUnder(root_), ::testing::IsEmpty());
  EXPECT_THAT(hostutil::IsOnSharedMount(root_).value_or(false), true);
  EXPECT_THAT(LoopsUnder(dir_.path()), ::testing::IsEmpty());
  struct stat st;
  EXPECT_NE(stat((devices + "/pv-disk").c_str(), &st), 0);
  EXPECT_EQ(stat((data_ + "/vol-disk.img").c_str(), &st), 0);  // the volume's data stays
}

}  // namespace
}  // namespace ndr

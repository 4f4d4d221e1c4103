#include "kubeletclient/sanity/root_dir.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet::sanity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::ndr::testing::TempDir;

class RootDirTest : public ::testing::Test {
 protected:
  void Write(const std::string& relative, const std::string& text = "x") {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + relative).parent_path());
    std::ofstream(root_ + "/" + relative) << text;
  }
  // A mountinfo file of the test's own, with `points` mounted.
  std::string Mountinfo(const std::vector<std::string>& points) {
    const std::string path = dir_.Join("mountinfo");
    std::ofstream out(path);
    out << "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n";
    int id = 30;
    for (const std::string& point : points) {
      out << id++ << " 22 0:44 / " << point << " rw,relatime shared:9 - tmpfs tmpfs rw\n";
    }
    return path;
  }
  absl::StatusOr<Leftovers> Find(const std::vector<std::string>& mounts = {}, size_t limit = 10) {
    return FindLeftovers(root_, Mountinfo(mounts), limit);
  }

  TempDir dir_{"rootdir"};
  const std::string root_ = dir_.Join("root");
};

TEST_F(RootDirTest, NoRootAndEmptyDirectoriesHoldNothing) {
  absl::StatusOr<Leftovers> found = Find();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->total, 0u);
  // What a run that tore everything down leaves: kubelet's layout, empty.
  for (const char* dir : {"pods", "plugins/kubernetes.io/csi/volumeDevices/publish",
                          "plugins/kubernetes.io/csi/volumeDevices/staging",
                          "plugins/kubernetes.io/csi/sample.csi.example.com"}) {
    std::filesystem::create_directories(root_ + "/" + dir);
  }
  found = Find();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->total, 0u);
  // The root itself may be a mount point (a tmpfs given to the judge).
  found = Find({root_});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->total, 0u);
}

TEST_F(RootDirTest, FilesLinksSocketsAndMountPointsAreNamed) {
  Write("plugins/kubernetes.io/csi/d/0123/vol_data.json", "{}");
  std::filesystem::create_directories(root_ + "/pods/uid/volumes/kubernetes.io~csi/pv/mount");
  // A symbolic link is named, never followed: its target is outside.
  std::filesystem::create_symlink("/etc", root_ + "/pods/uid/link");
  const std::string socket_path = root_ + "/s.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket_path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);
  absl::StatusOr<Leftovers> found =
      Find({root_ + "/pods/uid/volumes/kubernetes.io~csi/pv/mount", "/elsewhere/mount"});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->total, 4u);
  std::vector<std::string> named = found->named;
  std::sort(named.begin(), named.end());
  EXPECT_THAT(named, ElementsAre(
                         "file " + root_ + "/plugins/kubernetes.io/csi/d/0123/vol_data.json",
                         "mount point " + root_ + "/pods/uid/volumes/kubernetes.io~csi/pv/mount",
                         "socket " + root_ + "/s.sock",
                         "symbolic link " + root_ + "/pods/uid/link"));
}

TEST_F(RootDirTest, AHostileNameIsEscapedAndTheListIsBounded) {
  Write("pods/evil\nname\x1b[31m");
  for (int i = 0; i < 30; ++i) Write("many/f" + std::to_string(i));
  absl::StatusOr<Leftovers> found = Find({}, 5);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->total, 31u);
  EXPECT_EQ(found->named.size(), 5u);
  const std::string refusal = LeftoversRefusal(root_, *found);
  EXPECT_THAT(refusal, HasSubstr("and 26 more"));
  EXPECT_THAT(refusal, HasSubstr("--root-dir=" + root_ + " holds what an earlier run left"));
  EXPECT_THAT(refusal, HasSubstr("Give a new --root-dir"));
  for (const std::string& line : found->named) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST_F(RootDirTest, MountinfoEscapesAreRead) {
  // The kernel writes a space in a mount point as \040.
  std::filesystem::create_directories(root_ + "/a b");
  const std::string path = dir_.Join("mountinfo");
  std::ofstream(path) << "40 22 0:44 / " << root_ << "/a\\040b rw - tmpfs tmpfs rw\n";
  EXPECT_THAT(MountsUnder(root_, path), ElementsAre(root_ + "/a b"));
  absl::StatusOr<Leftovers> found = FindLeftovers(root_, path);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_THAT(found->named, ElementsAre("mount point " + root_ + "/a b"));
}

TEST_F(RootDirTest, AnUnreadableDirectoryIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads every directory";
  std::filesystem::create_directories(root_ + "/locked");
  chmod((root_ + "/locked").c_str(), 0);
  absl::StatusOr<Leftovers> found = Find();
  chmod((root_ + "/locked").c_str(), 0700);
  EXPECT_FALSE(found.ok());
  EXPECT_THAT(std::string(found.status().message()), HasSubstr(root_ + "/locked"));
}

}  // namespace
}  // namespace ndr::kubelet::sanity

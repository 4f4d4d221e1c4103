// The cleaner's unmounting (sandbox.h UnmountLeft), as root, in a private mount namespace of the
// test's own: what the judge left under its root directory is unmounted through descriptors, and
// a directory swapped for a symbolic link, or a mount swapped for another, after mountinfo was
// read leads it to nothing outside.
#include "kubeletclient/sanity/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletclient/util/beneath.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet::sanity {
namespace {

using ::ndr::testing::ReadFile;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::Contains;
using ::testing::HasSubstr;

// The mount points of this process's namespace.
std::set<std::string> MountPoints() {
  std::set<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4) points.insert(fields[4]);
  }
  return points;
}

class UnmountLeftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: it mounts (CI runs it as root)";
    // Every mount below happens in this namespace only, and goes with it.
    if (unshare(CLONE_NEWNS) != 0) {
      GTEST_SKIP() << "cannot make a mount namespace of its own: unshare(CLONE_NEWNS): "
                   << strerror(errno);
    }
    ASSERT_EQ(mount(nullptr, "/", nullptr, MS_PRIVATE | MS_REC, nullptr), 0) << strerror(errno);
    ASSERT_EQ(mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, "mode=0700"), 0) << strerror(errno);
    mounted_ = true;
    for (const std::string& d : {root_, root_ + "/pods", root_ + "/pods/a", root_ + "/pods/a/vol",
                                 outside_, outside_ + "/vol"}) {
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
    }
    // The root directory bind-mounted on itself, as the sandbox does, then opened.
    ASSERT_EQ(mount(root_.c_str(), root_.c_str(), nullptr, MS_BIND, nullptr), 0);
    root_fd_ = UniqueFd(open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_.valid());
    // What a judge left: the driver's mount of a made-up pod's volume.
    ASSERT_EQ(mount("tmpfs", judges_.c_str(), "tmpfs", 0, nullptr), 0) << strerror(errno);
    // The victim, outside the root directory: a host mount with a file on it.
    ASSERT_EQ(mount("tmpfs", victim_.c_str(), "tmpfs", 0, nullptr), 0) << strerror(errno);
    ASSERT_TRUE(WriteFile(victim_ + "/host-data", "keep"));
  }

  void TearDown() override {
    root_fd_ = UniqueFd();
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }

  TempDir dir_{"sandbox"};
  const std::string root_ = dir_.Join("root"), outside_ = dir_.Join("outside");
  const std::string judges_ = root_ + "/pods/a/vol", victim_ = outside_ + "/vol";
  UniqueFd root_fd_;
  bool mounted_ = false;
};

TEST_F(UnmountLeftTest, UnmountsWhatTheJudgeLeftAndTheRootsBindMount) {
  const std::vector<std::string> said = UnmountLeft(root_fd_.get(), root_, {});
  EXPECT_THAT(said, Contains("the judge left " + judges_ + " mounted: unmounted"));
  EXPECT_EQ(said.size(), 1u) << ::testing::PrintToString(said);
  const std::set<std::string> points = MountPoints();
  EXPECT_EQ(points.count(judges_), 0u);
  EXPECT_EQ(points.count(root_), 0u);
  EXPECT_EQ(points.count(victim_), 1u);
}

TEST_F(UnmountLeftTest, WhatWasMountedBeforeIsKept) {
  const std::vector<std::string> said = UnmountLeft(root_fd_.get(), root_, {root_, judges_});
  EXPECT_TRUE(said.empty()) << ::testing::PrintToString(said);
  EXPECT_EQ(MountPoints().count(judges_), 1u);
}

// Between reading mountinfo and unmounting, a parent of the judge's mount point is renamed and a
// symbolic link to a directory outside the root takes its place, so that the path mountinfo gave
// now leads to a host mount. Unmounting by path would unmount the host's; the cleaner opens the
// path beneath the root without following links, and leaves both mounted, saying why.
TEST_F(UnmountLeftTest, AParentSwappedForASymbolicLinkLeadsToNothingOutside) {
  const std::string parent = root_ + "/pods/a";
  const std::vector<std::string> said = UnmountLeft(root_fd_.get(), root_, {}, [&] {
    ASSERT_EQ(rename(parent.c_str(), (parent + ".moved").c_str()), 0) << strerror(errno);
    ASSERT_EQ(symlink(outside_.c_str(), parent.c_str()), 0) << strerror(errno);
  });
  const std::set<std::string> points = MountPoints();
  EXPECT_EQ(points.count(victim_), 1u) << "the host's mount outside the root was unmounted";
  std::string data;
  EXPECT_TRUE(ReadFile(victim_ + "/host-data", &data));
  EXPECT_EQ(data, "keep");
  EXPECT_THAT(said, Contains(HasSubstr("left " + judges_ + " mounted: open pods/a/vol: a "
                                       "symbolic link on the way")))
      << ::testing::PrintToString(said);
}

// At the same path, another mount on top of the judge's after mountinfo was read (here a bind
// mount of the host's): it opens on a mount other than the one mountinfo listed there, and both
// are left mounted.
TEST_F(UnmountLeftTest, AnotherMountOnTopIsLeftMounted) {
  const std::vector<std::string> said = UnmountLeft(root_fd_.get(), root_, {root_}, [&] {
    ASSERT_EQ(mount(victim_.c_str(), judges_.c_str(), nullptr, MS_BIND, nullptr), 0)
        << strerror(errno);
  });
  EXPECT_THAT(said, Contains(HasSubstr("left " + judges_ + " mounted: it opens on mount ")))
      << ::testing::PrintToString(said);
  std::string data;
  EXPECT_TRUE(ReadFile(judges_ + "/host-data", &data));  // the bind of the host's, still there
  EXPECT_EQ(MountPoints().count(victim_), 1u);
}

}  // namespace
}  // namespace ndr::kubelet::sanity

#include "kubeletclient/sanity/root_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet::sanity {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

struct stat Dir(uid_t owner, mode_t mode) {
  struct stat st = {};
  st.st_mode = S_IFDIR | mode;
  st.st_uid = owner;
  return st;
}

// The rule, on made-up stat results: owned by the judge's user (root too, above the root
// directory), written by no one else, but for a sticky directory of root's above it (/tmp).
TEST(CheckRootDirOwnershipTest, OnlyTheJudgesUserOrRootMayChangeTheWayThere) {
  constexpr uid_t kJudge = 1000;
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(kJudge, 0755), kJudge, false), IsOk());
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(kJudge, 0700), kJudge, false), IsOk());
  EXPECT_THAT(CheckRootDirOwnership("/a", Dir(0, 0755), kJudge, true), IsOk());
  EXPECT_THAT(CheckRootDirOwnership("/a", Dir(kJudge, 0755), kJudge, true), IsOk());
  EXPECT_THAT(CheckRootDirOwnership("/tmp", Dir(0, 01777), kJudge, true), IsOk());
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(65534, 0755), kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the directory /r is owned by uid 65534, not by the judge's user (uid "
                       "1000)"));
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(0, 0755), kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition, "chown 1000 /r and chmod go-w /r"));
  EXPECT_THAT(CheckRootDirOwnership("/a", Dir(65534, 0755), kJudge, true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the directory /a above it is owned by uid 65534, not by root or the "
                       "judge's user"));
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(kJudge, 0775), kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the directory /r may be written by its group (mode 0775)"));
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(kJudge, 0757), kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition, "may be written by others"));
  // Sticky: fine above the root directory if root's, never as the root directory itself.
  EXPECT_THAT(CheckRootDirOwnership("/r", Dir(kJudge, 01777), kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition, "chmod go-w /r"));
  EXPECT_THAT(CheckRootDirOwnership("/a", Dir(kJudge, 01777), kJudge, true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "chown root /a and chmod go-w /a, or give a --root-dir elsewhere"));
  struct stat link = {};
  link.st_mode = S_IFLNK | 0777;
  EXPECT_THAT(CheckRootDirOwnership("/r", link, kJudge, false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the directory /r is a symbolic link"));
}

class OpenJudgesRootDirTest : public ::testing::Test {
 protected:
  TempDir dir_{"rootown"};  // mode 0700, the test's own user's
  const std::string root_ = dir_.Join("root");
};

TEST_F(OpenJudgesRootDirTest, AGoodOneIsOpenedAndAMissingOneMade) {
  ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  absl::StatusOr<UniqueFd> fd = OpenJudgesRootDir(root_, geteuid());
  ASSERT_THAT(fd.status(), IsOk());
  struct stat opened, named;
  ASSERT_EQ(fstat(fd->get(), &opened), 0);
  ASSERT_EQ(stat(root_.c_str(), &named), 0);
  EXPECT_EQ(opened.st_ino, named.st_ino);
  // Missing components are made, mode 0750 (less the umask).
  const std::string deeper = dir_.Join("new/root");
  ASSERT_THAT(OpenJudgesRootDir(deeper, geteuid()).status(), IsOk());
  ASSERT_EQ(stat(deeper.c_str(), &named), 0);
  EXPECT_EQ(named.st_mode & 0027, 0u);
}

TEST_F(OpenJudgesRootDirTest, AGroupWritableOneIsRefused) {
  ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(root_.c_str(), 0775), 0);
  EXPECT_THAT(OpenJudgesRootDir(root_, geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("--root-dir=", root_, ": the directory ", root_,
                                    " may be written by its group (mode 0775)")));
  // An ancestor group-writable: refused too.
  ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir_.path().c_str(), 0770), 0);
  EXPECT_THAT(OpenJudgesRootDir(root_, geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("the directory ", dir_.path(), " above it may be written")));
  ASSERT_EQ(chmod(dir_.path().c_str(), 0700), 0);
}

TEST_F(OpenJudgesRootDirTest, ASymbolicLinkOnTheWayIsRefused) {
  const std::string real = dir_.Join("real");
  ASSERT_EQ(mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((real + "/root").c_str(), 0755), 0);
  ASSERT_EQ(symlink(real.c_str(), dir_.Join("link").c_str()), 0);
  EXPECT_THAT(OpenJudgesRootDir(dir_.Join("link/root"), geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("the directory ", dir_.Join("link"),
                                    " above it is a symbolic link")));
  ASSERT_EQ(symlink((real + "/root").c_str(), root_.c_str()), 0);
  EXPECT_THAT(OpenJudgesRootDir(root_, geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("the directory ", root_, " is a symbolic link")));
  EXPECT_THAT(OpenJudgesRootDir(dir_.Join("real/../real/root"), geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "\"..\" in the path"));
}

TEST_F(OpenJudgesRootDirTest, AnotherUsersIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: it gives the directory to uid 65534";
  ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  if (chown(root_.c_str(), 65534, 65534) != 0 && errno == EINVAL) {
    GTEST_SKIP() << "uid 65534 does not exist in this user namespace (a sandbox's)";
  }
  struct stat st;
  ASSERT_EQ(stat(root_.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, 65534u);
  EXPECT_THAT(OpenJudgesRootDir(root_, geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("the directory ", root_, " is owned by uid 65534, not by the "
                                    "judge's user (uid 0)")));
  // Someone else's directory above it: refused, though the root directory is root's.
  const std::string theirs = dir_.Join("theirs");
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((theirs + "/root").c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_THAT(OpenJudgesRootDir(theirs + "/root", geteuid()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("the directory ", theirs, " above it is owned by uid 65534")));
}

TEST_F(OpenJudgesRootDirTest, TheLockIsTakenOnceAndNamesItsHolder) {
  ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  absl::StatusOr<UniqueFd> first = OpenJudgesRootDir(root_, geteuid());
  absl::StatusOr<UniqueFd> second = OpenJudgesRootDir(root_, geteuid());
  ASSERT_THAT(first.status(), IsOk());
  ASSERT_THAT(second.status(), IsOk());
  ASSERT_THAT(LockRootDir(first->get(), root_), IsOk());
  // Two open file descriptions: the second is refused, naming this process.
  const absl::Status refused = LockRootDir(second->get(), root_);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition,
                                absl::StrCat("--root-dir=", root_,
                                             " is in use by another judge: pid ", getpid(), " (")));
  EXPECT_THAT(std::string(refused.message()), HasSubstr(", started at "));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("Wait for that judge to finish, or give another --root-dir."));
  // Released when the first is closed.
  *first = UniqueFd();
  EXPECT_THAT(LockRootDir(second->get(), root_), IsOk());
}

}  // namespace
}  // namespace ndr::kubelet::sanity

#include "kubeletclient/util/beneath.h"

#include <fcntl.h>
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
using ::ndr::testing::ReadFile;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::HasSubstr;

class BeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0755), 0);
    root_fd_ = UniqueFd(open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_.valid());
  }

  TempDir dir_{"beneath"};
  const std::string root_ = dir_.Join("root"), outside_ = dir_.Join("outside");
  UniqueFd root_fd_;
};

TEST_F(BeneathTest, OpensWhatIsBeneathAndNothingThroughALinkOrDotDot) {
  ASSERT_EQ(mkdir((root_ + "/a").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(root_ + "/a/f", "x"));
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "a/f", O_RDONLY).status(), IsOk());
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "", O_PATH | O_DIRECTORY).status(), IsOk());
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/link").c_str()), 0);
  ASSERT_TRUE(WriteFile(outside_ + "/f", "x"));
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "link/f", O_RDONLY).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "open link/f: a symbolic link on the way"));
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "../outside/f", O_RDONLY).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "open ../outside/f: the path leads outside the directory"));
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "missing", O_RDONLY).status(),
              StatusIs(absl::StatusCode::kNotFound, "open missing"));
  // The last component a link: refused too, with O_PATH (which would open the link itself) and
  // O_DIRECTORY.
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "link", O_PATH).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "open link: a symbolic link on the way"));
  EXPECT_THAT(OpenBeneath(root_fd_.get(), "link", O_PATH | O_DIRECTORY).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "open link: a symbolic link on the way"));
  EXPECT_FALSE(OpenNoSymlinks(root_ + "/link/f", O_RDONLY).ok());
  EXPECT_THAT(OpenNoSymlinks(root_ + "/a/f", O_RDONLY).status(), IsOk());
}

TEST_F(BeneathTest, MountIdIsTheSameWithinOneFileSystem) {
  ASSERT_EQ(mkdir((root_ + "/a").c_str(), 0755), 0);
  absl::StatusOr<UniqueFd> a = OpenBeneath(root_fd_.get(), "a", O_PATH);
  ASSERT_THAT(a.status(), IsOk());
  absl::StatusOr<uint64_t> root_id = MountIdOf(root_fd_.get());
  absl::StatusOr<uint64_t> a_id = MountIdOf(a->get());
  ASSERT_THAT(root_id.status(), IsOk());
  ASSERT_THAT(a_id.status(), IsOk());
  EXPECT_EQ(*root_id, *a_id);
  EXPECT_EQ(FdPath(7), "/proc/self/fd/7");
}

TEST_F(BeneathTest, MakeDirsMakesWhatIsMissingAndNothingOutside) {
  absl::StatusOr<UniqueFd> made = MakeDirsBeneath(root_fd_.get(), "pods/uid/volumes", 0750);
  ASSERT_THAT(made.status(), IsOk());
  struct stat st;
  ASSERT_EQ(stat((root_ + "/pods/uid/volumes").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_THAT(MakeDirsBeneath(root_fd_.get(), "pods/uid/volumes", 0750).status(), IsOk());
  // A directory swapped for a link to elsewhere: refused, nothing made there.
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/plugins").c_str()), 0);
  EXPECT_THAT(MakeDirsBeneath(root_fd_.get(), "plugins/csi", 0750).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "failed to create dir plugins: open plugins: a symbolic link on the way"));
  EXPECT_NE(stat((outside_ + "/csi").c_str(), &st), 0);
  EXPECT_THAT(MakeDirsBeneath(root_fd_.get(), "pods/../x", 0750).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "\"..\" in the path"));
}

TEST_F(BeneathTest, WritesAtomicallyAndNeverThroughALink) {
  ASSERT_EQ(mkdir((root_ + "/vol").c_str(), 0755), 0);
  ASSERT_THAT(WriteFileAtomicallyBeneath(root_fd_.get(), "vol/vol_data.json", "first"), IsOk());
  ASSERT_THAT(WriteFileAtomicallyBeneath(root_fd_.get(), "vol/vol_data.json", "second"), IsOk());
  std::string contents;
  ASSERT_TRUE(ReadFile(root_ + "/vol/vol_data.json", &contents));
  EXPECT_EQ(contents, "second");
  // The file itself a link: replaced by the file, the link's target untouched.
  ASSERT_TRUE(WriteFile(outside_ + "/target", "theirs"));
  ASSERT_EQ(symlink((outside_ + "/target").c_str(), (root_ + "/vol/linked.json").c_str()), 0);
  ASSERT_THAT(WriteFileAtomicallyBeneath(root_fd_.get(), "vol/linked.json", "ours"), IsOk());
  ASSERT_TRUE(ReadFile(outside_ + "/target", &contents));
  EXPECT_EQ(contents, "theirs");
  // Its directory a link: refused.
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/moved").c_str()), 0);
  EXPECT_THAT(WriteFileAtomicallyBeneath(root_fd_.get(), "moved/vol_data.json", "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "write moved/vol_data.json: open moved: a symbolic link on the way"));
  struct stat st;
  EXPECT_NE(stat((outside_ + "/vol_data.json").c_str(), &st), 0);
}

// The path-based forms the volume code uses: the root directory as given, the rest beneath it.
TEST_F(BeneathTest, UnderARootPathNothingBelowItIsFollowed) {
  ASSERT_THAT(MakeDirsUnder(root_, root_ + "/pods/uid/volumes", 0750), IsOk());
  ASSERT_THAT(MakeDirsUnder(root_, root_ + "/pods/uid/volumes", 0750), IsOk());
  ASSERT_THAT(WriteFileAtomicallyUnder(root_, root_ + "/pods/uid/vol_data.json", "{}"), IsOk());
  std::string contents;
  ASSERT_TRUE(ReadFile(root_ + "/pods/uid/vol_data.json", &contents));
  EXPECT_EQ(contents, "{}");
  // A last component that exists as a file is fine, as for MakeDirs.
  EXPECT_THAT(MakeDirsUnder(root_, root_ + "/pods/uid/vol_data.json", 0750), IsOk());
  // A directory on the way swapped for a link to elsewhere: nothing made or written there.
  ASSERT_EQ(rename((root_ + "/pods/uid").c_str(), (root_ + "/pods/moved").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/pods/uid").c_str()), 0);
  EXPECT_THAT(MakeDirsUnder(root_, root_ + "/pods/uid/volumes/x", 0750),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "failed to create dir " + root_ + "/pods/uid/volumes: open uid: a "
                       "symbolic link on the way"));
  EXPECT_THAT(WriteFileAtomicallyUnder(root_, root_ + "/pods/uid/vol_data.json", "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "a symbolic link on the way"));
  struct stat st;
  EXPECT_NE(stat((outside_ + "/volumes").c_str(), &st), 0);
  EXPECT_NE(stat((outside_ + "/vol_data.json").c_str(), &st), 0);
  EXPECT_THAT(MakeDirsUnder(root_, outside_ + "/x", 0750),
              StatusIs(absl::StatusCode::kInvalidArgument, "not inside the root directory"));
  // A root directory that does not exist yet is made, as MakeDirs makes it.
  EXPECT_THAT(MakeDirsUnder(root_ + "/kubelet-1.33", root_ + "/kubelet-1.33/pods/x", 0750),
              IsOk());
  EXPECT_EQ(stat((root_ + "/kubelet-1.33/pods/x").c_str(), &st), 0);
  // The root directory itself may be a link (a --root-dir such as /var/lib/kubelet -> /data).
  const std::string linked_root = dir_.Join("linked-root");
  ASSERT_EQ(symlink(root_.c_str(), linked_root.c_str()), 0);
  EXPECT_THAT(MakeDirsUnder(linked_root, linked_root + "/plugins/csi", 0750), IsOk());
  EXPECT_EQ(stat((root_ + "/plugins/csi").c_str(), &st), 0);
}

}  // namespace
}  // namespace ndr::kubelet

#include "kubeletclient/util/files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

TEST(WriteFileAtomicallyTest, ReplacesWholeAndLeavesNoTemporaryFile) {
  ::ndr::testing::TempDir dir("ns");
  const std::string path = dir.Join("status.json");
  ASSERT_THAT(WriteFileAtomically(path, "first"), IsOk());
  ASSERT_THAT(WriteFileAtomically(path, "second"), IsOk());
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(path, &contents));
  EXPECT_EQ(contents, "second");
  int entries = 0;
  DIR* d = opendir(dir.path().c_str());
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(WriteFileAtomically(dir.Join("missing/status.json"), "x").ok());
}

TEST(ReadFileUpToTest, ReadsWholeFilesAndRefusesBigOnesAndNonFiles) {
  ::ndr::testing::TempDir dir("files");
  const std::string path = dir.Join("f");
  ASSERT_TRUE(::ndr::testing::WriteFile(path, std::string(100, 'x')));
  std::string contents;
  ASSERT_THAT(ReadFileUpTo(path, 100, &contents), IsOk());
  EXPECT_EQ(contents, std::string(100, 'x'));
  EXPECT_THAT(ReadFileUpTo(path, 99, &contents),
              StatusIs(absl::StatusCode::kInvalidArgument, "larger than 99 bytes"));
  EXPECT_THAT(ReadFileUpTo(dir.Join("missing"), 100, &contents),
              StatusIs(absl::StatusCode::kNotFound, "missing: no such file"));
  // A directory, and a FIFO nobody writes to (reading it would block for ever).
  EXPECT_THAT(ReadFileUpTo(dir.path(), 100, &contents),
              StatusIs(absl::StatusCode::kInvalidArgument, "not a regular file"));
  ASSERT_EQ(mkfifo(dir.Join("fifo").c_str(), 0600), 0);
  EXPECT_THAT(ReadFileUpTo(dir.Join("fifo"), 100, &contents),
              StatusIs(absl::StatusCode::kInvalidArgument, "not a regular file"));
}

}  // namespace
}  // namespace ndr::kubelet

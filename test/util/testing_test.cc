#include <signal.h>
#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr::testing {
namespace {

TEST(TempDirTest, IsShortAndRemovedWithContents) {
  std::string path;
  {
    TempDir dir("x");
    path = dir.path();
    EXPECT_LT(path.size(), 30u);
    ASSERT_TRUE(WriteFile(dir.Join("f"), "hello"));
    std::string contents;
    ASSERT_TRUE(ReadFile(dir.Join("f"), &contents));
    EXPECT_EQ(contents, "hello");
  }
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0);
}

TEST(SubprocessTest, ReportsExitCodeSignalAndLog) {
  TempDir dir("p");
  Subprocess ok({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, dir.Join("log1"));
  EXPECT_EQ(ok.Wait(), 3);
  EXPECT_THAT(ok.Log(), ::testing::AllOf(::testing::HasSubstr("out"), ::testing::HasSubstr("err")));
  EXPECT_THAT(ok.Describe(), ::testing::StartsWith("sh (pid " + std::to_string(ok.pid()) +
                                                   ", exited with code 3), log " +
                                                   dir.Join("log1") + ", last 30 lines:\n"));

  Subprocess sleeper({"/bin/sleep", "60"}, dir.Join("log2"));
  EXPECT_TRUE(sleeper.Running());
  EXPECT_THAT(sleeper.Describe(), ::testing::HasSubstr(", running)"));
  EXPECT_TRUE(sleeper.Signal(SIGTERM));
  EXPECT_EQ(sleeper.Wait(), 128 + SIGTERM);
  EXPECT_THAT(sleeper.Describe(), ::testing::HasSubstr(", killed by signal 15)"));
}

TEST(TailTest, LastLines) {
  EXPECT_EQ(Tail("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(Tail("a\nb\nc", 2), "b\nc");
  EXPECT_EQ(Tail("a\nb\nc\n", 3), "a\nb\nc\n");
  EXPECT_EQ(Tail("a\nb\nc\n", 9), "a\nb\nc\n");
  EXPECT_EQ(Tail("", 3), "");
}

TEST(PollUntilTest, ReturnsFalseAtDeadline) {
  int calls = 0;
  EXPECT_FALSE(PollUntil([&] { return ++calls < 0; }, absl::Milliseconds(20)));
  EXPECT_GT(calls, 1);
  EXPECT_TRUE(PollUntil([&] { return ++calls > 5; }));
}

TEST(MatchersTest, IsOkAndStatusIs) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(absl::NotFoundError("no such x"), ::testing::Not(IsOk()));
  EXPECT_THAT(absl::NotFoundError("no such x"), StatusIs(absl::StatusCode::kNotFound, "such"));
}

}  // namespace
}  // namespace ndr::testing

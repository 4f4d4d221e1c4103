// The termination message file: written only when it is there, as a regular file, never through a
// symlink, never blocking on a FIFO, cut to what kubelet keeps, and only the first reason.
#include "program/termination_message.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test/util/temp_dir.h"

namespace ndr::program {
namespace {

std::string Read(const std::string& path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return "(missing)";
  char buffer[8192];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  close(fd);
  return text;
}

// Each case runs in a child of its own: a process writes one message at most.
class TerminationMessageTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"tm"};
  const std::string path_ = dir_.Join("termination-log");
};

TEST_F(TerminationMessageTest, ReplacesWhatAnExistingFileHeld) {
  ASSERT_TRUE(testing::WriteFile(path_, "an older and longer message\n"));
  EXPECT_EXIT(
      {
        SetTerminationMessagePath(path_);
        exit(WriteTerminationMessage("flag error") ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(Read(path_), "flag error");
}

TEST_F(TerminationMessageTest, OnlyTheFirstReasonIsKept) {
  ASSERT_TRUE(testing::WriteFile(path_, ""));
  EXPECT_EXIT(
      {
        SetTerminationMessagePath(path_);
        const bool first = WriteTerminationMessage("a failed check");
        const bool second = WriteTerminationMessage("the SIGABRT after it");
        exit(first && !second ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(Read(path_), "a failed check");
}

TEST_F(TerminationMessageTest, CutToWhatKubeletKeeps) {
  ASSERT_TRUE(testing::WriteFile(path_, ""));
  EXPECT_EXIT(
      {
        SetTerminationMessagePath(path_);
        exit(WriteTerminationMessage(std::string(10000, 'x')) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(Read(path_), std::string(kTerminationMessageLimit, 'x'));
}

TEST_F(TerminationMessageTest, NeverCreatesTheFile) {
  EXPECT_EXIT(
      {
        SetTerminationMessagePath(path_);
        exit(WriteTerminationMessage("reason") ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
  struct stat st;
  EXPECT_NE(lstat(path_.c_str(), &st), 0);
}

TEST_F(TerminationMessageTest, NeitherSymlinkNorFifoNorDirectory) {
  const std::string target = dir_.Join("target");
  ASSERT_TRUE(testing::WriteFile(target, "untouched"));
  const std::string link = dir_.Join("link");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  const std::string fifo = dir_.Join("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const std::string directory = dir_.Join("directory");
  ASSERT_EQ(mkdir(directory.c_str(), 0755), 0);
  for (const std::string& path : {link, fifo, directory}) {
    SCOPED_TRACE(path);
    // A FIFO nobody reads would block an open for writing: O_NONBLOCK fails it at once instead,
    // and one somebody reads is not a regular file.
    EXPECT_EXIT(
        {
          SetTerminationMessagePath(path);
          exit(WriteTerminationMessage("reason") ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
  }
  EXPECT_EQ(Read(target), "untouched");
}

TEST_F(TerminationMessageTest, AnEmptyPathWritesNone) {
  ASSERT_TRUE(testing::WriteFile(path_, "kept"));
  EXPECT_EXIT(
      {
        SetTerminationMessagePath("");
        exit(WriteTerminationMessage("reason") ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(Read(path_), "kept");
}

}  // namespace
}  // namespace ndr::program

#include "registrar/reg_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/endpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::registrar {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;

// Binds a unix socket at `path`; listens (a live socket) unless `stale`, in which case the
// descriptor is closed right away, as a killed process leaves it. Returns the listening fd or -1.
int MakeSocket(const std::string& path, bool stale) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  if (stale) {
    close(fd);
    return -1;
  }
  listen(fd, 1);
  return fd;
}

TEST(RegistrationSocketPathTest, JoinsDirAndName) {
  EXPECT_EQ(*RegistrationSocketPath("/registration", "sample.csi.example.com"),
            "/registration/sample.csi.example.com-reg.sock");
}

TEST(RegistrationSocketPathTest, RejectsNamesThatWouldEscapeOrOverflow) {
  EXPECT_THAT(RegistrationSocketPath("/registration", "../../etc/x"),
              StatusIs(absl::StatusCode::kInvalidArgument, "invalid name"));
  EXPECT_THAT(RegistrationSocketPath("/registration", std::string(300, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument, "300 characters long"));
  EXPECT_THAT(RegistrationSocketPath("/registration", "a/b"),
              StatusIs(absl::StatusCode::kInvalidArgument, "invalid name"));
  EXPECT_THAT(RegistrationSocketPath("/registration", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty"));
  // A valid name in a long directory would overflow sun_path.
  EXPECT_THAT(RegistrationSocketPath("/" + std::string(60, 'd'), std::string(50, 'n')),
              StatusIs(absl::StatusCode::kInvalidArgument, "at most 107 bytes"));
}

TEST(CheckRegistrationDirTest, NamesTheDirectory) {
  TempDir dir("rs");
  EXPECT_THAT(CheckRegistrationDir(dir.path()), IsOk());
  EXPECT_THAT(CheckRegistrationDir(dir.Join("missing")),
              StatusIs(absl::StatusCode::kNotFound, dir.Join("missing")));
  ASSERT_TRUE(::ndr::testing::WriteFile(dir.Join("file"), ""));
  EXPECT_THAT(CheckRegistrationDir(dir.Join("file")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "is not a directory"));
}

TEST(InspectTest, TellsOursFromOthers) {
  TempDir dir("rs");
  const std::string path = dir.Join("d-reg.sock");
  EXPECT_EQ(Inspect(path, std::nullopt), PathState::kMissing);
  int fd = MakeSocket(path, /*stale=*/false);
  ASSERT_GE(fd, 0);
  absl::StatusOr<FileId> id = SocketId(path);
  ASSERT_THAT(id, IsOk());
  EXPECT_EQ(Inspect(path, *id), PathState::kOurs);
  EXPECT_EQ(Inspect(path, std::nullopt), PathState::kSocket);
  EXPECT_TRUE(UnixSocketAnswers(path));

  // Replaced by a stale socket: same path, another inode, nobody listening.
  ASSERT_EQ(unlink(path.c_str()), 0);
  MakeSocket(path, /*stale=*/true);
  EXPECT_EQ(Inspect(path, *id), PathState::kSocket);
  EXPECT_FALSE(UnixSocketAnswers(path));
  close(fd);

  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(path, "x"));
  EXPECT_EQ(Inspect(path, *id), PathState::kNotASocket);
  EXPECT_THAT(SocketId(path), StatusIs(absl::StatusCode::kFailedPrecondition, "not a socket"));
}

TEST(RemoveIfOursTest, RemovesOnlyOurSocket) {
  TempDir dir("rs");
  const std::string path = dir.Join("d-reg.sock");
  // Our socket stays open, as the registrar's server keeps it: an open socket keeps its inode, so
  // no other file can get the same FileId meanwhile.
  const int ours_fd = MakeSocket(path, /*stale=*/false);
  ASSERT_GE(ours_fd, 0);
  const FileId ours = *SocketId(path);
  // Someone else's socket now sits at the path: it stays.
  ASSERT_EQ(unlink(path.c_str()), 0);
  const int theirs_fd = MakeSocket(path, /*stale=*/false);
  RemoveIfOurs(path, ours);
  EXPECT_EQ(Inspect(path, std::nullopt), PathState::kSocket);
  // Our own is removed.
  const FileId theirs = *SocketId(path);
  RemoveIfOurs(path, theirs);
  EXPECT_EQ(Inspect(path, std::nullopt), PathState::kMissing);
  close(ours_fd);
  close(theirs_fd);
}

}  // namespace
}  // namespace ndr::registrar

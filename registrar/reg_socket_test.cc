#include "registrar/reg_socket.h"

#include <set>

#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

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

TEST(RegistrationSocketPathTest, EachOfTheDriversNamesIsItsOwn) {
  const std::string primary = "/registration/sample.csi.example.com-reg.sock";
  EXPECT_EQ(*RegistrationSocketPathAt(primary, 0), primary);
  EXPECT_EQ(*RegistrationSocketPathAt(primary, 1),
            "/registration/sample.csi.example.com-reg-1.sock");
  EXPECT_EQ(*RegistrationSocketPathAt(primary, 16),
            "/registration/sample.csi.example.com-reg-16.sock");
  EXPECT_THAT(RegistrationSocketPathAt(primary, 17),
              StatusIs(absl::StatusCode::kInvalidArgument, "no registration socket name"));
  EXPECT_THAT(RegistrationSocketPathAt(primary, -1),
              StatusIs(absl::StatusCode::kInvalidArgument, "no registration socket name"));
  // No name of one driver is another's: the first name ends in "-reg.sock", the others in a
  // number, and a driver's name is what comes before the last "-reg".
  std::set<std::string> seen;
  for (const char* name : {"a", "a-reg-1", "a-reg", "a-1"}) {
    const std::string first = *RegistrationSocketPath("/r", name);
    for (int i = 0; i < kRegistrationSocketNames; ++i) {
      EXPECT_TRUE(seen.insert(*RegistrationSocketPathAt(first, i)).second) << name << " " << i;
    }
  }
  // A first name that fits and a later one that does not: that one is never used.
  const std::string at_limit = "/" + std::string(107 - 1 - 9, 'd') + "-reg.sock";
  ASSERT_EQ(at_limit.size(), 107u);
  EXPECT_THAT(RegistrationSocketPathAt(at_limit, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "at most 107 bytes"));
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

// Kubelet's registration directory is root's, mode 0750: a registrar running as a user who may
// not write it must say so at start, with the remedy, not fail later on a bare "Permission
// denied". The directory here is this process's own, made read-only to its owner (0550); the
// check runs in a child which, if it is root, first gives up the capabilities that override file
// permissions (as a registrar of another user has none of).
TEST(CheckRegistrationDirTest, ADirectoryThisUserMayNotWriteIsRefusedWithTheRemedy) {
  TempDir dir("rs");
  const std::string registry = dir.Join("plugins_registry");
  ASSERT_EQ(mkdir(registry.c_str(), 0550), 0);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    if (syscall(SYS_capget, &header, caps) != 0) _exit(3);
    for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
      caps[cap / 32].effective &= ~(1u << (cap % 32));
    }
    if (syscall(SYS_capset, &header, caps) != 0) _exit(3);
    const absl::Status status = CheckRegistrationDir(registry);
    const std::string said = absl::StrCat(static_cast<int>(status.code()), " ", status.message());
    if (write(pipe_fds[1], said.data(), said.size()) != static_cast<ssize_t>(said.size())) _exit(4);
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) said.append(buffer, n);
  close(pipe_fds[0]);
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) << wait_status;
  EXPECT_THAT(said, ::testing::StartsWith(
                        absl::StrCat(static_cast<int>(absl::StatusCode::kPermissionDenied), " ")));
  EXPECT_THAT(said, ::testing::HasSubstr(registry + " (--plugin-registration-path): user "));
  EXPECT_THAT(said, ::testing::HasSubstr("may not create the registration socket there"));
  EXPECT_THAT(said, ::testing::HasSubstr("run the registrar as root"));
  // Writable again, the same directory passes.
  ASSERT_EQ(chmod(registry.c_str(), 0750), 0);
  EXPECT_THAT(CheckRegistrationDir(registry), IsOk());
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

#include "registrar/registration_server.h"

#include <dirent.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::registrar {
namespace {

using ::ndr::testing::DirEntries;
using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;
using registration_server_internal::BindTemporarySocket;
using registration_server_internal::KernelRandom;
using registration_server_internal::TemporarySocketPath;

// A unix socket bound at `path` and never listening, as one whose registrar was killed between
// its bind and its listen, or one that is just about to listen; -1 if it cannot be made.
int BoundSocket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

ino_t Inode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class RegistrationServerTest : public ::testing::Test {
 protected:
  void SetUp() override { old_umask_ = umask(077); }
  void TearDown() override { umask(old_umask_); }

  absl::StatusOr<std::unique_ptr<RegistrationServer>> Start(bool requires_publish_pod = true) {
    RegistrationInfo info{"d.example.com", "/var/lib/kubelet/plugins/d/csi.sock",
                          requires_publish_pod};
    return RegistrationServer::Start(path_, info, [this](const Verdict& verdict) {
      std::lock_guard<std::mutex> lock(mu_);
      notified_.emplace_back(verdict.registered, verdict.error);
      after_get_info_.push_back(verdict.after_get_info);
      handshakes_.push_back(verdict.handshakes);
    });
  }

  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("unix:" + path_, grpc::InsecureChannelCredentials());
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(::ndr::testing::RpcDeadline());
    return context;
  }

  mode_t old_umask_;
  TempDir dir_{"srv"};
  const std::string path_ = dir_.Join("d.example.com-reg.sock");
  std::mutex mu_;
  std::vector<std::pair<bool, std::string>> notified_;
  std::vector<bool> after_get_info_;
  std::vector<int> handshakes_;
};

TEST_F(RegistrationServerTest, ServesBothServicesOnAPrivateSocket) {
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 077, 0u) << "socket accessible to group or others";
  EXPECT_EQ((*server)->id(), (FileId{st.st_dev, st.st_ino}));
  // Only the socket: the private bind name was renamed away.
  EXPECT_THAT(DirEntries(dir_.path()), ::testing::ElementsAre("d.example.com-reg.sock"));

  auto registration = pluginregistration::Registration::NewStub(Channel());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(registration->GetInfo(Context().get(), {}, &info).ok());
  EXPECT_EQ(info.type(), "CSIPlugin");
  EXPECT_EQ(info.name(), "d.example.com");
  EXPECT_EQ(info.endpoint(), "/var/lib/kubelet/plugins/d/csi.sock");
  EXPECT_THAT(info.supported_versions(), ::testing::ElementsAre("1.0.0"));

  auto csi_registration = csiregistration::CSIRegistration::NewStub(Channel());
  csiregistration::CSIDriverInfo driver_info;
  ASSERT_TRUE(csi_registration->GetCSIDriverInfo(Context().get(), {}, &driver_info).ok());
  EXPECT_EQ(driver_info.csi_endpoint(), "/var/lib/kubelet/plugins/d/csi.sock");
  EXPECT_TRUE(driver_info.options().requires_publish_pod());

  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("RegisterPlugin error -- plugin registration failed with err: x");
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), status, &response).ok());
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(notified_.size(), 1u);
  EXPECT_FALSE(notified_[0].first);
  EXPECT_EQ(notified_[0].second, status.error());
  EXPECT_TRUE(after_get_info_[0]);
}

// Kubelet's handshake asks GetInfo before its verdict; a verdict on a server that was never asked
// came over a connection to an earlier socket (registration_watchdog.h). The registrar's own
// health check does not count as asking.
TEST_F(RegistrationServerTest, AVerdictSaysWhetherKubeletAskedForInfoFirst) {
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  auto registration = pluginregistration::Registration::NewStub(Channel());
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("RegisterPlugin error -- for an earlier socket");
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), status, &response).ok());

  pluginregistration::PluginInfo info;
  auto health_check = Context();
  health_check->AddMetadata(kHealthCheckMetadata, "1");
  ASSERT_TRUE(registration->GetInfo(health_check.get(), {}, &info).ok());
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), status, &response).ok());

  ASSERT_TRUE(registration->GetInfo(Context().get(), {}, &info).ok());
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), status, &response).ok());
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_THAT(after_get_info_, ::testing::ElementsAre(false, false, true));
}

// Each verdict says how many handshakes were begun on the socket since the one before (the
// health check's GetInfo is none): a restarted kubelet's one handshake is one, whatever came
// before it.
TEST_F(RegistrationServerTest, HandshakesAreCountedSinceTheLastVerdict) {
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  auto registration = pluginregistration::Registration::NewStub(Channel());
  pluginregistration::RegistrationStatus refused;
  refused.set_plugin_registered(false);
  refused.set_error("RegisterPlugin error -- plugin registration failed with err: for now");
  pluginregistration::RegistrationStatusResponse response;
  pluginregistration::PluginInfo info;
  // Two GetInfo before the first verdict (another caller, then kubelet), one before the second.
  ASSERT_TRUE(registration->GetInfo(Context().get(), {}, &info).ok());
  ASSERT_TRUE(registration->GetInfo(Context().get(), {}, &info).ok());
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), refused, &response).ok());
  auto health_check = Context();
  health_check->AddMetadata(kHealthCheckMetadata, "1");
  ASSERT_TRUE(registration->GetInfo(health_check.get(), {}, &info).ok());
  ASSERT_TRUE(registration->GetInfo(Context().get(), {}, &info).ok());
  ASSERT_TRUE(registration->NotifyRegistrationStatus(Context().get(), refused, &response).ok());
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_THAT(handshakes_, ::testing::ElementsAre(2, 1));
}

TEST_F(RegistrationServerTest, ARefusalWithoutAReasonIsMalformed) {
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  pluginregistration::RegistrationStatus status;  // plugin_registered=false, error=""
  pluginregistration::RegistrationStatusResponse response;
  grpc::Status s = pluginregistration::Registration::NewStub(Channel())
                       ->NotifyRegistrationStatus(Context().get(), status, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(notified_.empty());
}

TEST_F(RegistrationServerTest, RequiresPublishPodFalse) {
  auto server = Start(/*requires_publish_pod=*/false);
  ASSERT_THAT(server, IsOk());
  csiregistration::CSIDriverInfo driver_info;
  ASSERT_TRUE(csiregistration::CSIRegistration::NewStub(Channel())
                  ->GetCSIDriverInfo(Context().get(), {}, &driver_info)
                  .ok());
  EXPECT_FALSE(driver_info.options().requires_publish_pod());
}

// gRPC runs only while someone is connected (and a moment after): started by the first
// connection, stopped once the last has closed, started again by the next; what kubelet did on
// the socket (asked for its info) is remembered across.
TEST_F(RegistrationServerTest, GrpcRunsOnlyWhileSomeoneIsConnected) {
  RegistrationInfo info{"d.example.com", "/var/lib/kubelet/plugins/d/csi.sock", false};
  auto server = RegistrationServer::Start(
      path_, info,
      [this](const Verdict& verdict) {
        std::lock_guard<std::mutex> lock(mu_);
        after_get_info_.push_back(verdict.after_get_info);
      },
      /*max_pollers=*/2, /*idle_stop=*/absl::Milliseconds(50));
  ASSERT_THAT(server, IsOk());
  // Ready for kubelet's first call, then stopped when nobody comes.
  ASSERT_TRUE(::ndr::testing::PollUntil([&] { return !(*server)->grpc_running(); }));
  {
    auto stub = pluginregistration::Registration::NewStub(Channel());
    pluginregistration::PluginInfo plugin;
    ASSERT_TRUE(stub->GetInfo(Context().get(), {}, &plugin).ok());
    EXPECT_EQ(plugin.name(), "d.example.com");
    EXPECT_TRUE((*server)->grpc_running());
  }  // the channel, and its connection, go
  ASSERT_TRUE(::ndr::testing::PollUntil([&] { return !(*server)->grpc_running(); }));
  auto stub = pluginregistration::Registration::NewStub(Channel());
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(Context().get(), status, &response).ok());
  EXPECT_TRUE((*server)->grpc_running());
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_THAT(after_get_info_, ::testing::ElementsAre(true));
}

TEST_F(RegistrationServerTest, StoppingLeavesThePathToTheOwner) {
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  server->reset();
  // gRPC unlinks its bind path at shutdown; that was the private name, not ours.
  EXPECT_EQ(Inspect(path_, std::nullopt), PathState::kSocket);
}

TEST_F(RegistrationServerTest, ReplacesAStaleSocket) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  auto server = Start();
  ASSERT_THAT(server, IsOk());
  EXPECT_EQ(Inspect(path_, (*server)->id()), PathState::kOurs);
}

TEST_F(RegistrationServerTest, LeavesARegularFileUntouched) {
  ASSERT_TRUE(::ndr::testing::WriteFile(path_, "precious"));
  EXPECT_THAT(Start(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                "exists and is not a socket; it was left untouched"));
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(path_, &contents));
  EXPECT_EQ(contents, "precious");
  EXPECT_THAT(DirEntries(dir_.path()), ::testing::ElementsAre("d.example.com-reg.sock"));
}

TEST_F(RegistrationServerTest, RefusesToExposeTheSocketUnderALaxUmask) {
  umask(022);
  EXPECT_THAT(Start(), StatusIs(absl::StatusCode::kInternal, "refusing to expose"));
  EXPECT_EQ(Inspect(path_, std::nullopt), PathState::kMissing);
  EXPECT_THAT(DirEntries(dir_.path()), ::testing::IsEmpty());
}

// Temporary sockets of other registrars (killed before their rename, or starting beside this
// one) under the names registrars used to draw from the process ID and a count, this process's
// own included: each is left as it is, and the socket is served. Regular files and sockets bound
// without listening, open or closed.
TEST_F(RegistrationServerTest, OthersTemporarySocketsAreLeftAlone) {
  std::map<std::string, ino_t> others;
  std::vector<int> open_sockets;
  std::vector<std::string> names;
  for (int n = 0; n < 64; ++n) names.push_back(absl::StrCat(".ndr-", getpid(), "-", n, ".sock"));
  for (int n = 0; n < 4; ++n) names.push_back(absl::StrCat(".ndr-1-", n, ".sock"));
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = dir_.Join(names[i]);
    if (i % 3 == 0) {
      ASSERT_TRUE(::ndr::testing::WriteFile(path, "someone else's"));
    } else {
      const int fd = BoundSocket(path);
      ASSERT_GE(fd, 0) << path;
      if (i % 3 == 1) {
        open_sockets.push_back(fd);
      } else {
        close(fd);  // left by a registrar that was killed
      }
    }
    others[names[i]] = Inode(path);
  }

  auto server = Start();
  ASSERT_THAT(server, IsOk());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(pluginregistration::Registration::NewStub(Channel())
                  ->GetInfo(Context().get(), {}, &info)
                  .ok());
  EXPECT_EQ(info.name(), "d.example.com");
  for (const auto& [name, inode] : others) EXPECT_EQ(Inode(dir_.Join(name)), inode) << name;
  std::vector<std::string> expected = names;
  expected.push_back("d.example.com-reg.sock");
  EXPECT_THAT(DirEntries(dir_.path()), ::testing::UnorderedElementsAreArray(expected));
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(dir_.Join(names[0]), &contents));
  EXPECT_EQ(contents, "someone else's");
  for (int fd : open_sockets) close(fd);
}

TEST(TemporarySocketTest, NamesAreRandomAndRecognisable) {
  EXPECT_EQ(TemporarySocketPath("/r", 0x1234abcULL), "/r/.ndr-01234abc.sock");
  EXPECT_EQ(TemporarySocketPath("/r", ~0ULL), "/r/.ndr-ffffffff.sock");
  absl::StatusOr<uint64_t> a = KernelRandom();
  absl::StatusOr<uint64_t> b = KernelRandom();
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_NE(*a, *b);  // one chance in 2^64 of a false failure
}

// A name found taken, by a file or a socket, is another process's: it stays as it is, and the
// next name is drawn.
TEST(TemporarySocketTest, ATakenNameIsLeftAloneAndAnotherDrawn) {
  TempDir dir("tmpsock");
  ASSERT_TRUE(::ndr::testing::WriteFile(TemporarySocketPath(dir.path(), 7), "someone else's"));
  const int other = BoundSocket(TemporarySocketPath(dir.path(), 8));
  ASSERT_GE(other, 0);
  const ino_t file = Inode(TemporarySocketPath(dir.path(), 7));
  const ino_t other_socket = Inode(TemporarySocketPath(dir.path(), 8));
  std::vector<uint64_t> draws = {7, 8, 9};
  size_t drawn = 0;
  auto bound = BindTemporarySocket(dir.path(),
                                   [&]() -> absl::StatusOr<uint64_t> { return draws[drawn++]; });
  ASSERT_THAT(bound, IsOk());
  EXPECT_EQ(drawn, 3u);
  EXPECT_EQ(bound->path, TemporarySocketPath(dir.path(), 9));
  EXPECT_EQ(bound->id.ino, Inode(bound->path));
  EXPECT_EQ(Inode(TemporarySocketPath(dir.path(), 7)), file);
  EXPECT_EQ(Inode(TemporarySocketPath(dir.path(), 8)), other_socket);
  close(bound->fd);
  close(other);
}

TEST(TemporarySocketTest, EveryNameTakenIsAnErrorAndNothingIsRemoved) {
  TempDir dir("tmpsock");
  const std::string taken = TemporarySocketPath(dir.path(), 7);
  ASSERT_TRUE(::ndr::testing::WriteFile(taken, "someone else's"));
  int drawn = 0;
  EXPECT_THAT(BindTemporarySocket(dir.path(),
                                  [&]() -> absl::StatusOr<uint64_t> {
                                    ++drawn;
                                    return 7;
                                  }),
              StatusIs(absl::StatusCode::kUnavailable, "were all taken"));
  EXPECT_EQ(drawn, 4);
  EXPECT_THAT(DirEntries(dir.path()), ::testing::ElementsAre(".ndr-00000007.sock"));
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(taken, &contents));
  EXPECT_EQ(contents, "someone else's");
}

TEST(TemporarySocketTest, NoRandomNumberIsAnError) {
  TempDir dir("tmpsock");
  EXPECT_THAT(BindTemporarySocket(dir.path(),
                                  []() -> absl::StatusOr<uint64_t> {
                                    return absl::InternalError("getrandom: no");
                                  }),
              StatusIs(absl::StatusCode::kInternal, "getrandom: no"));
  EXPECT_THAT(DirEntries(dir.path()), ::testing::IsEmpty());
}

}  // namespace
}  // namespace ndr::registrar

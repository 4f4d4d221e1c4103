// The sample-csi-driver and csi-client binaries as real processes on real unix sockets.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "api/csi/csi.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

const std::string kDriver = "test/csidriver/sample-csi-driver";

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// Asks the driver at `socket` for its name; empty on failure.
std::string PluginName(const std::string& socket) {
  auto stub = csi::v1::Identity::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(RpcDeadline());
  csi::v1::GetPluginInfoResponse response;
  return stub->GetPluginInfo(&context, {}, &response).ok() ? response.name() : "";
}

TEST(SampleDriverProcessTest, ServesOnUnixUrlAndStopsCleanlyOnSigtermAndSigint) {
  for (int signal : {SIGTERM, SIGINT}) {
    TempDir dir("drvp");
    const std::string socket = dir.Join("csi.sock");
    Subprocess driver({Runfile(kDriver), "--endpoint=unix://" + socket, "--drivername=a.b.c",
                       "--nodeid=node-7"},
                      dir.Join("log"));
    ASSERT_TRUE(PollUntil([&] { return PluginName(socket) == "a.b.c"; })) << driver.Log();

    Subprocess client({Runfile("test/csidriver/csi-client"), "--endpoint=" + socket},
                      dir.Join("client.log"));
    EXPECT_EQ(client.Wait(), 0) << client.Log();
    EXPECT_THAT(client.Log(), HasSubstr("GetPluginInfo {\"name\":\"a.b.c\""));
    EXPECT_THAT(client.Log(), HasSubstr("NodeGetInfo {\"node_id\":\"node-7\""));

    ASSERT_TRUE(driver.Signal(signal));
    EXPECT_EQ(driver.Wait(), 0) << driver.Log();
    EXPECT_FALSE(IsSocket(socket)) << "socket left behind after signal " << signal;
  }
}

TEST(SampleDriverProcessTest, ReplacesStaleSocket) {
  TempDir dir("drvp");
  const std::string socket = dir.Join("csi.sock");
  // A socket file nobody listens on, as a killed driver leaves behind.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  ASSERT_TRUE(IsSocket(socket));

  Subprocess driver({Runfile(kDriver), "--endpoint=" + socket, "--nodeid=n"}, dir.Join("log"));
  EXPECT_TRUE(PollUntil([&] { return PluginName(socket) == "sample.csi.example.com"; }))
      << driver.Log();
}

TEST(SampleDriverProcessTest, BadInputIsAOneLineErrorAndExitCode1) {
  TempDir dir("drvp");
  ASSERT_TRUE(::ndr::testing::WriteFile(dir.Join("file"), "keep me"));
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--endpoint=" + dir.Join("s"), "--drivername=../../etc/x"}, "--drivername"},
      {{"--endpoint=" + dir.Join("s"), "--drivername=" + std::string(300, 'a')},
       "300 characters long"},
      {{"--endpoint=" + dir.Join(std::string(120, 'x'))}, "at most 107 bytes"},
      {{"--endpoint=tcp://127.0.0.1:1"}, "unsupported scheme"},
      {{"--endpoint=" + dir.Join("file")}, "is not a socket"},
      {{"--endpoint=" + dir.Join("missing/s")}, "does not exist"},
      {{"--endpoint=" + dir.Join("s"), "--topology=zone"}, "--topology"},
      {{"--endpoint=" + dir.Join("s"), "--data-dir=relative/data"}, "--data-dir"},
      {{"--endpoint=" + dir.Join("s"), "--no-such-flag"}, "unknown command line flag"},
      {{"--endpoint=" + dir.Join("s"), "stray"}, "unexpected argument"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Runfile(kDriver), "--nodeid=n"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    TempDir logs("log");
    Subprocess driver(argv, logs.Join("log"));
    EXPECT_EQ(driver.Wait(), 1) << c.message << "\n" << driver.Log();
    EXPECT_THAT(driver.Log(), HasSubstr(c.message));
  }
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(dir.Join("file"), &contents));
  EXPECT_EQ(contents, "keep me");
}

// Block volumes' disk images go to --data-dir, by default "sample-csi-data" beside the socket.
TEST(SampleDriverProcessTest, BlockVolumeImagesGoToTheDataDirectory) {
  for (bool default_dir : {true, false}) {
    TempDir dir("drvp");
    const std::string socket = dir.Join("csi.sock");
    const std::string data = default_dir ? dir.Join("sample-csi-data") : dir.Join("elsewhere");
    std::vector<std::string> argv = {Runfile(kDriver), "--endpoint=unix://" + socket, "--nodeid=n"};
    if (!default_dir) argv.push_back("--data-dir=" + data);
    Subprocess driver(argv, dir.Join("log"));
    ASSERT_TRUE(PollUntil([&] { return !PluginName(socket).empty(); })) << driver.Log();

    ASSERT_EQ(mkdir(dir.Join("publish").c_str(), 0750), 0);
    auto node = csi::v1::Node::NewStub(
        grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
    csi::v1::NodePublishVolumeRequest publish;
    publish.set_volume_id("blk-1");
    publish.set_target_path(dir.Join("publish/pod-uid-1"));
    publish.mutable_volume_capability()->mutable_block();
    publish.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    // Unpublished whatever happens: run as root outside a sandbox, the driver mounts for real.
    absl::Cleanup unpublish = [&] {
      csi::v1::NodeUnpublishVolumeRequest request;
      request.set_volume_id("blk-1");
      request.set_target_path(publish.target_path());
      grpc::ClientContext context;
      context.set_deadline(RpcDeadline());
      csi::v1::NodeUnpublishVolumeResponse response;
      grpc::Status status = node->NodeUnpublishVolume(&context, request, &response);
      EXPECT_TRUE(status.ok()) << status.error_message() << "\n" << driver.Log();
    };
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    csi::v1::NodePublishVolumeResponse response;
    grpc::Status status = node->NodePublishVolume(&context, publish, &response);
    ASSERT_TRUE(status.ok()) << status.error_message() << "\n" << driver.Log();
    struct stat st;
    ASSERT_EQ(stat((data + "/blk-1.img").c_str(), &st), 0) << "no disk image in " << data;
    EXPECT_EQ(st.st_size, 1 << 20);
    EXPECT_EQ(stat(publish.target_path().c_str(), &st), 0);
  }
}

}  // namespace
}  // namespace ndr

// Garbage on the registration socket: random bytes, truncated HTTP/2, a huge frame, idle
// connections, and protobuf with unknown or wrong-typed fields. After each, the registrar must
// still run and serve the next real client.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <future>
#include <random>

#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
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

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class GarbageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(reg_.c_str(), 0755), 0);
    driver_ = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("test/csidriver/sample-csi-driver"),
                                 "--endpoint=" + dir_.Join("csi.sock"), "--nodeid=n"},
        dir_.Join("driver.log"));
    registrar_ = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("registrar/csi-node-driver-registrar"),
                                 "--csi-address=" + dir_.Join("csi.sock"),
                                 "--kubelet-registration-path=" + dir_.Join("csi.sock"),
                                 "--plugin-registration-path=" + reg_},
        dir_.Join("registrar.log"));
    ASSERT_TRUE(PollUntil([&] { return Serves(); })) << registrar_->Log();
  }

  bool Serves() {
    auto stub = pluginregistration::Registration::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    pluginregistration::PluginInfo info;
    return stub->GetInfo(&context, {}, &info).ok() && info.name() == "sample.csi.example.com";
  }

  // Connects, writes `bytes`, then closes (or keeps the connection open, returning its fd).
  int Send(const std::string& bytes, bool keep_open = false) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    size_t written = 0;
    while (written < bytes.size()) {
      ssize_t n = send(fd, bytes.data() + written, bytes.size() - written, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server may hang up on garbage: fine
      written += n;
    }
    if (keep_open) return fd;
    close(fd);
    return -1;
  }

  // A real gRPC call with `payload` as the raw request message.
  grpc::Status Call(const std::string& method, const std::string& payload) {
    grpc::GenericStub stub(grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1), response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(s); });
    return done.get_future().get();
  }

  void ExpectStillServing(const std::string& what) {
    EXPECT_TRUE(registrar_->Running()) << what << "\n" << registrar_->Log();
    EXPECT_TRUE(Serves()) << what;
  }

  TempDir dir_{"garbage"};
  const std::string reg_ = dir_.Join("reg");
  const std::string socket_ = reg_ + "/sample.csi.example.com-reg.sock";
  std::unique_ptr<Subprocess> driver_, registrar_;
};

TEST_F(GarbageTest, RawBytes) {
  std::mt19937 random(20261122);
  for (size_t size : {1, 7, 100, 4096, 65536, 1 << 20}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    Send(bytes);
    ExpectStillServing("random bytes, size " + std::to_string(size));
  }
  Send(std::string(kPreface).substr(0, 10));
  ExpectStillServing("truncated HTTP/2 preface");
  // The preface, then a SETTINGS frame header that promises 12 bytes and delivers 2.
  Send(std::string(kPreface) + Bytes({0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 3}));
  ExpectStillServing("truncated SETTINGS frame");
  // A frame header announcing 16 MiB - 1 of DATA on stream 1, and a little of it.
  Send(std::string(kPreface) + Bytes({0, 0, 0, 4, 0, 0, 0, 0, 0}) +
       Bytes({0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1}) + std::string(100000, 'x'));
  ExpectStillServing("huge DATA frame");
  // HEADERS with an undecodable HPACK block.
  Send(std::string(kPreface) + Bytes({0, 0, 0, 4, 0, 0, 0, 0, 0}) +
       Bytes({0, 0, 4, 1, 4, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}));
  ExpectStillServing("bad HPACK");
}

TEST_F(GarbageTest, IdleConnectionsDoNotBlockRealClients) {
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(Send("", /*keep_open=*/true));
  for (int i = 0; i < 20; ++i) idle.push_back(Send(kPreface, /*keep_open=*/true));
  ExpectStillServing("120 idle connections");
  for (int fd : idle) close(fd);
}

TEST_F(GarbageTest, ProtobufWithUnknownAndWrongTypedFields) {
  const std::string get_info = "/pluginregistration.Registration/GetInfo";
  const std::string notify = "/pluginregistration.Registration/NotifyRegistrationStatus";
  const std::string csi_info = "/csiregistration.CSIRegistration/GetCSIDriverInfo";
  // Unknown fields are skipped: the calls succeed.
  const std::string unknown = Bytes({0xf8, 0x06, 0x2a,                 // field 111, varint 42
                                     0x82, 0x07, 0x03, 'a', 'b', 'c'});  // field 112, "abc"
  EXPECT_TRUE(Call(get_info, unknown).ok());
  EXPECT_TRUE(Call(csi_info, unknown).ok());
  // plugin_registered = true plus unknown fields: a confirmation, not a refusal.
  EXPECT_TRUE(Call(notify, Bytes({0x08, 0x01}) + unknown).ok());
  ExpectStillServing("unknown fields");
  // Field 1 (a bool) sent length-delimited, and a truncated varint: rejected, nothing else.
  for (const std::string& bad : {Bytes({0x0a, 0x03, 'a', 'b', 'c'}), Bytes({0x08, 0xff}),
                                 Bytes({0x12, 0x7f, 'x'})}) {
    EXPECT_FALSE(Call(notify, bad).ok());
    EXPECT_FALSE(Call(get_info + "Nope", bad).ok());
  }
  std::mt19937 random(7);
  for (int i = 0; i < 200; ++i) {
    std::string bytes(random() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    Call(get_info, bytes);
    Call(csi_info, bytes);
  }
  ExpectStillServing("malformed protobuf");
}

}  // namespace
}  // namespace ndr

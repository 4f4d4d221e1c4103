// A race found under load on a busy 2-core machine: kubeletclient's GetInfo reached a
// registrar's socket, the socket was then deleted (to be created again), and the handshake's
// second call, CSIRegistration.GetCSIDriverInfo (asked with --ask-csi-registration), which dials
// the socket by path, failed with UNAVAILABLE.
// kubeletclient used to turn that into NotifyRegistrationStatus(registered=false) over the old
// connection, and the registrar exited 1 although its new socket was about to be registered.
// Here a hook in the fake registrar's GetInfo deletes the socket, so the race happens every time.
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/pluginmanager/registration_manager.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

constexpr char kDriver[] = "race.csi.example.com";

// A registrar and its driver in one: the registration API, CSIRegistration and CSI's
// NodeGetInfo, all on one socket (GetInfo's endpoint is empty, so the socket is the driver's
// endpoint too). The socket is bound under a private name and renamed into place, as the real
// registrar does. `on_get_info` runs inside GetInfo, before it answers.
class FakeRegistrar final : public pluginregistration::Registration::Service,
                            public csiregistration::CSIRegistration::Service,
                            public csi::v1::Node::Service {
 public:
  FakeRegistrar(const std::string& socket, std::function<void()> on_get_info = nullptr)
      : on_get_info_(std::move(on_get_info)) {
    const std::string temp = absl::StrCat(socket.substr(0, socket.rfind('/')), "/.fake-",
                                          counter_++, ".sock");
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + temp, grpc::InsecureServerCredentials());
    builder.RegisterService(static_cast<pluginregistration::Registration::Service*>(this));
    builder.RegisterService(static_cast<csiregistration::CSIRegistration::Service*>(this));
    builder.RegisterService(static_cast<csi::v1::Node::Service*>(this));
    server_ = builder.BuildAndStart();
    rename(temp.c_str(), socket.c_str());
  }
  ~FakeRegistrar() override { server_->Shutdown(std::chrono::system_clock::now()); }

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type(kCsiPluginType);
    info->set_name(kDriver);
    info->add_supported_versions("1.0.0");
    if (on_get_info_) on_get_info_();
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    std::lock_guard<std::mutex> lock(mu_);
    notified_.push_back(*status);
    return grpc::Status::OK;
  }
  grpc::Status GetCSIDriverInfo(grpc::ServerContext*, const csiregistration::CSIDriverInfoRequest*,
                                csiregistration::CSIDriverInfo* info) override {
    info->mutable_options()->set_requires_publish_pod(true);
    std::lock_guard<std::mutex> lock(mu_);
    return csi_registration_status_;
  }
  void FailCsiRegistration(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    csi_registration_status_ = status;
  }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    response->set_node_id("node-1");
    return grpc::Status::OK;
  }

  std::vector<pluginregistration::RegistrationStatus> notified() {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }

 private:
  static inline std::atomic<int> counter_{0};
  const std::function<void()> on_get_info_;
  std::mutex mu_;
  std::vector<pluginregistration::RegistrationStatus> notified_;
  grpc::Status csi_registration_status_;
  std::unique_ptr<grpc::Server> server_;
};

class RegistrationRaceTest : public ::testing::Test {
 protected:
  TempDir dir_{"race"};
  const std::string socket_ = dir_.Join(absl::StrCat(kDriver, "-reg.sock"));
  DriverRegistry registry_;
  // The race needs the pod-info design's second call on the socket, an opt-in.
  CsiHandler csi_{&registry_, CsiHandlerOptions{.ask_csi_registration = true}};
};

TEST_F(RegistrationRaceTest, SocketGoneAfterGetInfoIsNoRefusal) {
  FakeRegistrar old_socket(socket_, [&] { unlink(socket_.c_str()); });
  const HandshakeResult result =
      RegisterSocket(socket_, {{kCsiPluginType, &csi_}}, HandshakeTimeouts{}, nullptr);

  // GetCSIDriverInfo failed to reach the path...
  const CsiAttempt attempt = csi_.LastAttempt(socket_);
  ASSERT_TRUE(attempt.csi_driver_info.has_value());
  EXPECT_EQ(attempt.csi_driver_info->status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // ... and that abandoned the attempt: nothing registered, and above all no refusal sent.
  EXPECT_FALSE(result.status.ok());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(result.status.message(), HasSubstr("abandoned without notifying the plugin"));
  EXPECT_EQ(result.handler, nullptr);
  EXPECT_FALSE(result.notified.has_value());
  EXPECT_THAT(old_socket.notified(), ::testing::IsEmpty());
  EXPECT_FALSE(registry_.Get(kDriver).has_value());
}

// What the registration manager does with it: tries again, and registers the socket that took
// the old one's place; the old one never hears a refusal.
TEST_F(RegistrationRaceTest, TheNewSocketIsRegisteredAfterAnAbandonedAttempt) {
  RegistrationManager manager({{kCsiPluginType, &csi_}}, HandshakeTimeouts{});
  FakeRegistrar old_socket(socket_, [&] { unlink(socket_.c_str()); });
  manager.SocketAdded(socket_);
  ASSERT_TRUE(PollUntil([&] {
    const CsiAttempt attempt = csi_.LastAttempt(socket_);
    return attempt.csi_driver_info.has_value() &&
           attempt.csi_driver_info->status.error_code() == grpc::StatusCode::UNAVAILABLE;
  }));
  manager.SocketRemoved(socket_);  // what the plugin watcher reports next ...

  FakeRegistrar new_socket(socket_);
  manager.SocketAdded(socket_);  // ... and then
  ASSERT_TRUE(PollUntil([&] { return !new_socket.notified().empty(); }));
  EXPECT_TRUE(new_socket.notified()[0].plugin_registered());
  ASSERT_TRUE(registry_.Get(kDriver).has_value());
  EXPECT_EQ(registry_.Get(kDriver)->requires_publish_pod, true);
  EXPECT_THAT(old_socket.notified(), ::testing::IsEmpty());
  manager.Shutdown();
}

// A registrar whose CSIRegistration answers with an error of its own (it was reached) is still
// refused, as before: only failing to reach the socket abandons the attempt.
TEST_F(RegistrationRaceTest, AnErrorFromCsiRegistrationItselfIsStillARefusal) {
  FakeRegistrar registrar(socket_);
  registrar.FailCsiRegistration(grpc::Status(grpc::StatusCode::INTERNAL, "broken"));
  const HandshakeResult result =
      RegisterSocket(socket_, {{kCsiPluginType, &csi_}}, HandshakeTimeouts{}, nullptr);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(registrar.notified().size(), 1u);
  EXPECT_FALSE(registrar.notified()[0].plugin_registered());
  EXPECT_THAT(registrar.notified()[0].error(),
              HasSubstr("RegisterPlugin error -- plugin registration failed with err: "
                        "CSIRegistration.GetCSIDriverInfo on "));
  EXPECT_THAT(registrar.notified()[0].error(), HasSubstr("code = Internal desc = broken"));
}

}  // namespace
}  // namespace ndr::kubelet

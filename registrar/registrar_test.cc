// The Registrar in this test's process, with the test deciding when its main thread looks at
// what happened (Start, HandleEvents): the races around kubelet's NotifyRegistrationStatus,
// ordered by the test instead of by luck. registrar_process_test covers the binary.
#include "registrar/registrar.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::registrar {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::kPatience;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;

constexpr char kDriverName[] = "step.csi.example.com";

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// What kubelet's plugin watcher (fsnotify, i.e. inotify) sees happen to names in a directory.
class DirectoryEvents {
 public:
  explicit DirectoryEvents(const std::string& dir) : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
  }
  ~DirectoryEvents() { close(fd_); }

  // How many times `name` was removed and how many times it appeared since the last call.
  std::pair<int, int> RemovedAndAdded(const std::string& name) {
    int removed = 0, added = 0;
    alignas(inotify_event) char buffer[16 * 1024];
    for (ssize_t n; (n = read(fd_, buffer, sizeof(buffer))) > 0;) {
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + event->len;
        if (event->len == 0 || name != event->name) continue;
        if (event->mask & (IN_DELETE | IN_MOVED_FROM)) ++removed;
        if (event->mask & (IN_CREATE | IN_MOVED_TO)) ++added;
      }
    }
    return {removed, added};
  }

 private:
  const int fd_;
};

// GetPluginInfo only: all the registrar asks a driver.
class Identity final : public csi::v1::Identity::Service {
 public:
  explicit Identity(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~Identity() override { server_->Shutdown(std::chrono::system_clock::now()); }

  grpc::Status GetPluginInfo(grpc::ServerContext*, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* response) override {
    response->set_name(kDriverName);
    response->set_vendor_version("1.0.0");
    return grpc::Status::OK;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
};

// Kubelet's end of one connection to a registration socket: GetInfo, then the verdict over the
// same connection, as kubelet's operation generator does (GenerateRegisterPluginFunc). Calls wait
// for the channel to (re)connect, so that a test never depends on when gRPC notices a socket
// replaced.
class KubeletConnection {
 public:
  explicit KubeletConnection(const std::string& socket) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = pluginregistration::Registration::NewStub(
        grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args));
  }
  grpc::Status GetInfo() {
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    context.set_wait_for_ready(true);
    pluginregistration::PluginInfo info;
    return stub_->GetInfo(&context, {}, &info);
  }
  grpc::Status Notify(bool registered,
                      const std::string& error = "RegisterPlugin error -- test refuses") {
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    context.set_wait_for_ready(true);
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    if (!registered) status.set_error(error);
    pluginregistration::RegistrationStatusResponse response;
    return stub_->NotifyRegistrationStatus(&context, status, &response);
  }

 private:
  std::unique_ptr<pluginregistration::Registration::Stub> stub_;
};

class RegistrarStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(dir_.Join("reg").c_str(), 0700), 0);
    driver_ = std::make_unique<Identity>(dir_.Join("csi.sock"));
  }

  Options MakeOptions(absl::Duration retry_after) {
    Options options;
    options.csi_socket_path = dir_.Join("csi.sock");
    options.kubelet_registration_path = "/var/lib/kubelet/plugins/step/csi.sock";
    options.plugin_registration_dir = dir_.Join("reg");
    options.timeout = kPatience;
    options.registration_retry_after = retry_after;
    options.registration_backoff_cap = absl::Milliseconds(200);  // the test's own pace
    return options;
  }

  // Lets the registrar handle events until `condition` holds; false if it stopped or failed
  // first (its status in `status_`) or a real hang's deadline passed.
  bool StepUntil(Registrar& registrar, const std::function<bool()>& condition) {
    const absl::Time deadline = absl::Now() + kPatience;
    while (!condition()) {
      if (absl::Now() > deadline) return false;
      absl::StatusOr<bool> running = registrar.HandleEvents(absl::Milliseconds(50));
      if (!running.ok() || !*running) {
        status_ = running.ok() ? absl::CancelledError("stopped") : running.status();
        return false;
      }
    }
    return true;
  }

  TempDir dir_{"step"};
  const std::string socket_ = dir_.Join(absl::StrCat("reg/", kDriverName, "-reg.sock"));
  std::unique_ptr<Identity> driver_;
  absl::Status status_;
};

// The race kubeletclient's watch found under load: kubelet's GetInfo reached the socket, the
// socket was deleted (and is about to be created again), kubelet failed the rest of its
// registration and said registered=false over the old connection. That is no verdict on the new
// socket: the registrar must create it again and keep going. Before the fix it exited 1.
TEST_F(RegistrarStepTest, RefusalForASocketSinceReplacedIsNotFatal) {
  Registrar registrar(MakeOptions(absl::ZeroDuration()));
  ASSERT_THAT(registrar.Start(), IsOk());
  ASSERT_TRUE(StepUntil(registrar, [&] { return IsSocket(socket_); })) << status_;

  KubeletConnection old_connection(socket_);
  ASSERT_TRUE(old_connection.GetInfo().ok());
  ASSERT_EQ(unlink(socket_.c_str()), 0);
  // The registrar's main thread has not run since: the old server still answers on the
  // connection kubelet holds, and the refusal waits beside the deletion for the main thread.
  ASSERT_TRUE(old_connection.Notify(false).ok());

  ASSERT_TRUE(StepUntil(registrar, [&] {
    return registrar.metrics().refusals_replaced_socket.load() == 1 && IsSocket(socket_);
  })) << status_;
  EXPECT_EQ(registrar.metrics().refusals.load(), 1u);
  EXPECT_EQ(registrar.metrics().socket_recreations.load(), 1u);

  // The new socket serves, and kubelet's verdict on it is still final: a refusal there ends it.
  KubeletConnection current(socket_);
  ASSERT_TRUE(current.GetInfo().ok());
  ASSERT_TRUE(current.Notify(false).ok());
  EXPECT_FALSE(StepUntil(registrar, [] { return false; }));
  EXPECT_THAT(status_, StatusIs(absl::StatusCode::kFailedPrecondition,
                                "kubelet refused to register the driver: "
                                "RegisterPlugin error -- test refuses"));
  EXPECT_FALSE(IsSocket(socket_)) << "the refused socket is removed";
}

// The same race when the registrar has already replaced the socket: the old server is gone, and
// gRPC re-dials kubelet's connection by path, so the refusal arrives on the new socket's server.
// That server never answered kubelet's GetInfo, which every handshake starts with: the refusal
// is about the old socket.
TEST_F(RegistrarStepTest, RefusalRedialledToTheNewSocketIsNotFatal) {
  Registrar registrar(MakeOptions(absl::ZeroDuration()));
  ASSERT_THAT(registrar.Start(), IsOk());
  ASSERT_TRUE(StepUntil(registrar, [&] { return IsSocket(socket_); })) << status_;

  KubeletConnection connection(socket_);
  ASSERT_TRUE(connection.GetInfo().ok());
  ASSERT_EQ(unlink(socket_.c_str()), 0);
  ASSERT_TRUE(StepUntil(registrar, [&] {
    return registrar.metrics().socket_recreations.load() == 1 && IsSocket(socket_);
  })) << status_;
  // The old server is shut down; the same channel now reaches the new socket.
  ASSERT_TRUE(connection.Notify(false).ok());
  ASSERT_TRUE(StepUntil(registrar, [&] {
    return registrar.metrics().refusals_replaced_socket.load() == 1;
  })) << status_;
  EXPECT_TRUE(IsSocket(socket_));

  // Once kubelet has asked the new socket for its info, its refusal there is final.
  ASSERT_TRUE(connection.GetInfo().ok());
  ASSERT_TRUE(connection.Notify(false).ok());
  EXPECT_FALSE(StepUntil(registrar, [] { return false; }));
  EXPECT_THAT(status_, StatusIs(absl::StatusCode::kFailedPrecondition, "kubelet refused"));
}

// The watchdog offers an unconfirmed socket again; kubelet may refuse the new one while it still
// holds the old registration (csi_plugin.go validateVersions: same name, not a higher version).
// That one refusal is retried as a transient one: the socket is withdrawn and offered again after
// the back-off. Any other permanent reason after a re-offer ends the registrar.
TEST_F(RegistrarStepTest, TheSameNameRefusedAfterAReofferIsRetriedAnyOtherEndsIt) {
  Registrar registrar(MakeOptions(absl::Milliseconds(1)));
  ASSERT_THAT(registrar.Start(), IsOk());
  DirectoryEvents events(dir_.Join("reg"));
  ASSERT_TRUE(StepUntil(registrar, [&] { return IsSocket(socket_); })) << status_;
  const std::string name = absl::StrCat(kDriverName, "-reg.sock");
  EXPECT_EQ(events.RemovedAndAdded(name), std::make_pair(0, 1));

  // Nobody confirms: the watchdog fires (after 1 ms) and puts a new socket at the path, which
  // kubelet's plugin watcher sees as the plugin going away and coming back.
  ASSERT_TRUE(StepUntil(registrar, [&] { return registrar.metrics().reoffers.load() >= 1; }))
      << status_;
  ASSERT_TRUE(IsSocket(socket_));
  EXPECT_EQ(events.RemovedAndAdded(name), std::make_pair(1, 1));
  EXPECT_EQ(registrar.metrics().socket_recreations.load(), 0u) << "a re-offer is no recreation";

  // Kubelet refuses the re-offered socket: it still holds the one before.
  KubeletConnection connection(socket_);
  ASSERT_TRUE(connection.GetInfo().ok());
  ASSERT_TRUE(connection.Notify(false,
                                "RegisterPlugin error -- plugin validation failed with err: "
                                "Another driver with the same name is already registered with a "
                                "higher supported version: \"1.0.0\"")
                  .ok());
  ASSERT_TRUE(StepUntil(registrar, [&] {
    return registrar.metrics().refusals_transient.load() == 1 && !IsSocket(socket_);
  })) << status_;
  EXPECT_EQ(registrar.metrics().retrying.load(), 1);
  // ... and offers once more, after the back-off.
  const uint64_t offers = registrar.metrics().reoffers.load();
  ASSERT_TRUE(StepUntil(registrar, [&] {
    return registrar.metrics().reoffers.load() > offers && IsSocket(socket_);
  })) << status_;
  const std::pair<int, int> changes = events.RemovedAndAdded(name);
  EXPECT_GE(changes.first, 1);
  EXPECT_EQ(changes.first, changes.second);

  // A reason no retry changes, after all those re-offers: the end, with kubelet's reason.
  KubeletConnection again(socket_);
  ASSERT_TRUE(again.GetInfo().ok());
  ASSERT_TRUE(again.Notify(false,
                           "RegisterPlugin error -- plugin registration failed with err: error "
                           "adding CSI driver node info: driverNodeID must not be empty")
                  .ok());
  EXPECT_FALSE(StepUntil(registrar, [] { return false; }));
  EXPECT_THAT(status_, StatusIs(absl::StatusCode::kFailedPrecondition,
                                "kubelet refused to register the driver: RegisterPlugin error -- "
                                "plugin registration failed with err: error adding CSI driver "
                                "node info: driverNodeID must not be empty"));
  EXPECT_EQ(registrar.metrics().refusals_permanent.load(), 1u);
  EXPECT_FALSE(IsSocket(socket_));
}

}  // namespace
}  // namespace ndr::registrar

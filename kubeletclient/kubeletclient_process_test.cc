// kubeletclient as a real process against the real registrar, the sample driver and plugins
// faked in this test process, on real unix sockets.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/http_get.h"
#include "test/util/poll.h"
#include "test/util/registrar_log.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::HttpGet;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::ServedHttpPort;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

constexpr char kClient[] = "kubeletclient/kubeletclient";
constexpr char kRegistrar[] = "registrar/csi-node-driver-registrar";
constexpr char kDriver[] = "test/csidriver/sample-csi-driver";

// A plugin registration server faked in this process: what it answers is set by the test, and
// what kubelet told it is recorded.
class FakePlugin final : public pluginregistration::Registration::Service,
                         public csiregistration::CSIRegistration::Service {
 public:
  struct Config {
    std::string type = "CSIPlugin";
    std::string name;
    std::string endpoint;
    std::vector<std::string> versions = {"1.0.0"};
    bool csi_registration = false;  // serve CSIRegistration (only our registrar does)
    bool requires_publish_pod = false;
    bool hang_get_info = false;  // GetInfo answers only when the caller gives up, or at the end
    grpc::Status notify_status;  // what NotifyRegistrationStatus answers (after recording it)
  };

  FakePlugin(const std::string& socket, Config config) : config_(std::move(config)) {
    grpc::ServerBuilder builder;
    // Bind elsewhere and rename into place, so the socket appears complete, as our registrar's do.
    const std::string temp = socket.substr(0, socket.rfind('/')) + "/.fake-" +
                             std::to_string(counter_++) + ".sock";
    builder.AddListeningPort("unix:" + temp, grpc::InsecureServerCredentials());
    builder.RegisterService(static_cast<pluginregistration::Registration::Service*>(this));
    if (config_.csi_registration) {
      builder.RegisterService(static_cast<csiregistration::CSIRegistration::Service*>(this));
    }
    server_ = builder.BuildAndStart();
    rename(temp.c_str(), socket.c_str());
  }
  ~FakePlugin() override {
    stopping_ = true;  // ends a hanging GetInfo, which Shutdown() would wait for
    server_->Shutdown(std::chrono::system_clock::now());
  }

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++get_info_calls_;
    }
    if (config_.hang_get_info) PollUntil([&] { return stopping_ || context->IsCancelled(); });
    info->set_type(config_.type);
    info->set_name(config_.name);
    info->set_endpoint(config_.endpoint);
    for (const std::string& v : config_.versions) info->add_supported_versions(v);
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    std::lock_guard<std::mutex> lock(mu_);
    notified_.push_back(*status);
    return config_.notify_status;
  }
  grpc::Status GetCSIDriverInfo(grpc::ServerContext*, const csiregistration::CSIDriverInfoRequest*,
                                csiregistration::CSIDriverInfo* info) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++csi_registration_calls_;
    }
    info->set_csi_endpoint(config_.endpoint);
    info->mutable_options()->set_requires_publish_pod(config_.requires_publish_pod);
    return grpc::Status::OK;
  }

  std::vector<pluginregistration::RegistrationStatus> notified() {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  int get_info_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return get_info_calls_;
  }
  int csi_registration_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return csi_registration_calls_;
  }

 private:
  static inline std::atomic<int> counter_{0};
  const Config config_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<pluginregistration::RegistrationStatus> notified_;
  int get_info_calls_ = 0;
  int csi_registration_calls_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A CSI Node service faked in this process, for NodeGetInfo answers the sample driver refuses
// to give.
class FakeNode final : public csi::v1::Node::Service {
 public:
  FakeNode(const std::string& socket, std::string node_id, grpc::Status status = grpc::Status::OK)
      : node_id_(std::move(node_id)), status_(status) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeNode() override { server_->Shutdown(std::chrono::system_clock::now()); }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    response->set_node_id(node_id_);
    return status_;
  }

 private:
  const std::string node_id_;
  const grpc::Status status_;
  std::unique_ptr<grpc::Server> server_;
};

class KubeletClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(reg_dir_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(csi_dir_.c_str(), 0755), 0);
  }

  // kubeletclient watch, with deadlines for GetInfo and NotifyRegistrationStatus that no busy
  // machine reaches (kubelet's are 1 s and 5 s), unless `extra` sets its own: a registration must
  // not fail, and be retried, because this machine is slow.
  std::unique_ptr<Subprocess> StartClient(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Runfile(kClient), "watch",
                                     "--plugin-registry-dir=" + reg_dir_,
                                     "--node-status-file=" + status_file_, "--node-name=node1",
                                     "--get-info-timeout=60s", "--notify-timeout=60s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Subprocess>(argv, dir_.Join("client.log"));
  }

  std::unique_ptr<Subprocess> StartDriver(const std::string& name, const std::string& socket,
                                          const std::string& node_id = "node-1") {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile(kDriver), "--endpoint=" + socket, "--drivername=" + name,
                                 "--nodeid=" + node_id},
        dir_.Join("driver.log"));
  }

  std::unique_ptr<Subprocess> StartRegistrar(const std::string& csi_socket,
                                             std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Runfile(kRegistrar), "--csi-address=" + csi_socket,
                                     "--kubelet-registration-path=" + csi_socket,
                                     "--plugin-registration-path=" + reg_dir_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Subprocess>(argv, dir_.Join("registrar.log"));
  }

  json Status() {
    std::string text;
    if (!ReadFile(status_file_, &text)) return json();
    return json::parse(text, nullptr, /*allow_exceptions=*/false);
  }

  bool Registered(const std::string& name) {
    json status = Status();
    return status.is_object() && status["drivers"].contains(name);
  }

  std::string ClientLog() {
    std::string log;
    ReadFile(dir_.Join("client.log"), &log);
    return log;
  }

  TempDir dir_{"kc"};
  const std::string reg_dir_ = dir_.Join("reg");
  const std::string csi_dir_ = dir_.Join("csi");
  const std::string status_file_ = dir_.Join("status.json");
};

// --help: every command's usage line; a command's own --help, its flags and the logging flags;
// none of gflags' own nor klog's; exit 0.
TEST_F(KubeletClientTest, HelpPerCommand) {
  Subprocess all({Runfile(kClient), "--help"}, dir_.Join("help.log"));
  EXPECT_EQ(all.Wait(), 0);
  for (const char* line : {"  kubeletclient watch ", "  kubeletclient probe ",
                           "  kubeletclient publish ", "  kubeletclient unpublish ",
                           "Run 'kubeletclient COMMAND --help'", "  -logging-format string\n"}) {
    EXPECT_THAT(all.Log(), HasSubstr(line));
  }
  unlink(dir_.Join("help.log").c_str());  // Subprocess appends to its log
  struct Case {
    const char* command;
    std::vector<std::string> has, has_not;
  } cases[] = {
      {"publish",
       {"Usage:\n  kubeletclient publish --pod=FILE", "  -pod string\n", "  -objects string\n",
        "  -feature-gates string\n", "  -host-selinux string\n", "(default \"auto\")",
        "  -block-host-ops string\n", "  -root-dir string\n", "(default \"/var/lib/kubelet\")",
        "  -get-info-timeout duration\n", "(default 1s)", "  -node-get-info-timeout duration\n",
        "(default 2m)", "  -v int\n"},
       {"-node-status-file", "-registration-socket", "kubeletclient watch"}},
      {"watch",
       {"Usage:\n  kubeletclient watch ", "  -node-status-file string\n",
        "  -plugin-registry-dir string\n", "  -objects string\n", "  -feature-gates string\n"},
       {"-pod string", "-root-dir"}},
      {"probe",
       {"  -registration-socket string\n", "  -notify\n", "  -ask-csi-registration\n"},
       {"-pod string", "-junit"}},
      {"unpublish",
       {"  -pod string\n", "  -block-host-ops string\n", "  -feature-gates string\n"},
       {"-objects", "-notify\n"}},
  };
  for (const Case& c : cases) {
    Subprocess help({Runfile(kClient), c.command, "--help"}, dir_.Join("help.log"));
    EXPECT_EQ(help.Wait(), 0) << c.command;
    const std::string out = help.Log();
    for (const std::string& text : c.has) EXPECT_THAT(out, HasSubstr(text)) << c.command;
    for (const std::string& text : c.has_not) {
      EXPECT_THAT(out, ::testing::Not(HasSubstr(text))) << c.command;
    }
    for (const char* internal : {"logmailer", "flagfile", "/build/", "logtostderr"}) {
      EXPECT_THAT(out, ::testing::Not(HasSubstr(internal))) << c.command;
    }
    unlink(dir_.Join("help.log").c_str());
  }
}

TEST_F(KubeletClientTest, DiscoversExistingAndNewSocketsAndDeregisters) {
  auto driver_a = StartDriver("a.example.com", csi_dir_ + "/a.sock");
  auto driver_b = StartDriver("b.example.com", csi_dir_ + "/b.sock");
  auto registrar_a = StartRegistrar(csi_dir_ + "/a.sock");
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    return stat((reg_dir_ + "/a.example.com-reg.sock").c_str(), &st) == 0;
  }));
  // a.example.com's socket was there before it started. The registrar's pod-info switch is
  // asked only on request (no kubelet release asks it).
  auto client = StartClient({"--ask-csi-registration"});
  ASSERT_TRUE(PollUntil([&] { return Registered("a.example.com"); })) << ClientLog();

  auto registrar_b = StartRegistrar(csi_dir_ + "/b.sock", {"--requires-publish-pod"});
  ASSERT_TRUE(PollUntil([&] { return Registered("b.example.com"); })) << ClientLog();
  json status = Status();
  EXPECT_EQ(status["annotations"]["csi.volume.kubernetes.io/nodeid"],
            R"({"a.example.com":"node-1","b.example.com":"node-1"})");
  EXPECT_EQ(status["drivers"]["b.example.com"]["requiresPublishPod"], true);
  EXPECT_EQ(status["drivers"]["a.example.com"]["requiresPublishPod"], false);
  EXPECT_EQ(status["drivers"]["a.example.com"]["endpoint"], csi_dir_ + "/a.sock");

  // The registrar's SIGTERM removes its socket: the driver disappears.
  ASSERT_TRUE(registrar_a->Signal(SIGTERM));
  ASSERT_TRUE(PollUntil([&] { return !Registered("a.example.com"); })) << ClientLog();
  EXPECT_TRUE(Registered("b.example.com"));
  EXPECT_EQ(Status()["annotations"]["csi.volume.kubernetes.io/nodeid"],
            R"({"b.example.com":"node-1"})");
  EXPECT_EQ(Status()["csiNode"]["spec"]["drivers"].size(), 1u);
}

TEST_F(KubeletClientTest, RegistrarKilledWithSigkillIsDeregisteredAndComesBack) {
  auto driver = StartDriver("a.example.com", csi_dir_ + "/a.sock");
  auto registrar = StartRegistrar(csi_dir_ + "/a.sock");
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return Registered("a.example.com"); })) << ClientLog();
  // SIGKILL: no cleanup, the socket stays behind, and no filesystem event says anything.
  registrar.reset();
  const std::string socket = reg_dir_ + "/a.example.com-reg.sock";
  struct stat st;
  ASSERT_EQ(lstat(socket.c_str(), &st), 0);
  ASSERT_TRUE(PollUntil([&] { return !Registered("a.example.com"); })) << ClientLog();
  EXPECT_THAT(ClientLog(), HasSubstr("went away without removing its socket"));
  EXPECT_EQ(lstat(socket.c_str(), &st), 0);  // still there: stale
  // The next registrar replaces the stale socket and is registered again.
  registrar = StartRegistrar(csi_dir_ + "/a.sock");
  EXPECT_TRUE(PollUntil([&] { return Registered("a.example.com"); })) << ClientLog();
}

// The registration is in the handler before NotifyRegistrationStatus is sent (kubelet's order,
// pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go,
// GenerateRegisterPluginFunc). A plugin that dies in between, its socket left behind, never
// confirms; it must be deregistered all the same. Killing the registrar just after it shows up as
// registered used to hit this window now and then, and leave the driver registered for good.
TEST_F(KubeletClientTest, PluginDyingBeforeItConfirmsIsDeregistered) {
  FakeNode node(csi_dir_ + "/n.sock", "node-1");
  FakePlugin::Config config;
  config.name = "dying.example.com";
  config.endpoint = csi_dir_ + "/n.sock";
  config.notify_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "going away");
  auto plugin = std::make_unique<FakePlugin>(reg_dir_ + "/dying-reg.sock", config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return !plugin->notified().empty(); })) << ClientLog();
  ASSERT_TRUE(PollUntil([&] { return Registered("dying.example.com"); })) << ClientLog();
  plugin.reset();  // the server stops; its socket file stays, as after SIGKILL
  struct stat st;
  ASSERT_EQ(lstat((reg_dir_ + "/dying-reg.sock").c_str(), &st), 0);
  EXPECT_TRUE(PollUntil([&] { return !Registered("dying.example.com"); })) << ClientLog();
  EXPECT_THAT(ClientLog(), HasSubstr("went away without removing its socket"));
}

TEST_F(KubeletClientTest, IgnoresDotFilesAndNonSockets) {
  FakePlugin::Config config;
  config.name = "hidden.example.com";
  FakeNode node(csi_dir_ + "/n.sock", "node-1");
  config.endpoint = csi_dir_ + "/n.sock";
  FakePlugin hidden(reg_dir_ + "/.hidden-reg.sock", config);
  ASSERT_TRUE(::ndr::testing::WriteFile(reg_dir_ + "/regular-reg.sock", "not a socket"));
  ASSERT_EQ(mkdir((reg_dir_ + "/.dotdir").c_str(), 0755), 0);
  config.name = "indotdir.example.com";
  FakePlugin in_dot_dir(reg_dir_ + "/.dotdir/x-reg.sock", config);
  // A visible plugin in a subdirectory: the watch is recursive.
  ASSERT_EQ(mkdir((reg_dir_ + "/sub").c_str(), 0755), 0);
  config.name = "visible.example.com";
  FakePlugin visible(reg_dir_ + "/sub/visible-reg.sock", config);

  auto client = StartClient({"--v=5"});
  ASSERT_TRUE(PollUntil([&] { return Registered("visible.example.com"); })) << ClientLog();
  // The watcher says what it ignored, and why: proof that it looked at them.
  for (const std::string& line :
       {"Ignoring " + reg_dir_ + "/.hidden-reg.sock: a hidden name",
        "Ignoring " + reg_dir_ + "/.dotdir: a hidden name",
        "Ignoring " + reg_dir_ + "/regular-reg.sock: not a socket"}) {
    EXPECT_TRUE(PollUntil([&] { return ClientLog().find(line) != std::string::npos; }))
        << line << "\n" << ClientLog();
  }
  EXPECT_EQ(hidden.get_info_calls(), 0);
  EXPECT_EQ(in_dot_dir.get_info_calls(), 0);
  EXPECT_EQ(Status()["drivers"].size(), 1u);
}

TEST_F(KubeletClientTest, ReRegistersARecreatedSocketAndSurvivesItsOwnRestart) {
  auto driver = StartDriver("a.example.com", csi_dir_ + "/a.sock");
  auto registrar = StartRegistrar(csi_dir_ + "/a.sock");
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return Registered("a.example.com"); })) << ClientLog();

  // The registrar recreates its socket when it is deleted; kubelet deregisters and registers.
  // Depending on whether both events arrive in one batch, the client sees "removed" then
  // "created", or only "created again".
  ASSERT_EQ(unlink((reg_dir_ + "/a.example.com-reg.sock").c_str()), 0);
  ASSERT_TRUE(PollUntil([&] {
    const std::string log = ClientLog();
    return (log.find("was removed: deregistering") != std::string::npos ||
            log.find("was created again: deregistering") != std::string::npos) &&
           log.find("driver removed") != std::string::npos && Registered("a.example.com");
  })) << ClientLog();

  // A restarted client rediscovers everything from scratch.
  ASSERT_TRUE(client->Signal(SIGTERM));
  ASSERT_EQ(client->Wait(), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(status_file_, "{}"));
  client = StartClient();
  EXPECT_TRUE(PollUntil([&] { return Registered("a.example.com"); })) << ClientLog();
}

TEST_F(KubeletClientTest, RefusalsCarryKubeletsTexts) {
  FakeNode good_node(csi_dir_ + "/good.sock", "node-1");
  FakeNode empty_node(csi_dir_ + "/empty.sock", "");
  FakeNode broken_node(csi_dir_ + "/broken.sock", "",
                       grpc::Status(grpc::StatusCode::INTERNAL, "disk on fire"));
  struct Case {
    std::string name;
    std::function<void(FakePlugin::Config*)> configure;
    std::string text;
  } cases[] = {
      {"wrongtype", [](FakePlugin::Config* c) { c->type = "FancyPlugin"; },
       "RegisterPlugin error -- no handler registered for plugin type: FancyPlugin at socket " +
           reg_dir_ + "/wrongtype-reg.sock"},
      {"oldversion", [](FakePlugin::Config* c) { c->versions = {"0.3.0"}; },
       "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI "
       "Driver oldversion at endpoint " +
           csi_dir_ +
           "/good.sock: kubernetes.io/csi: ValidatePlugin for CSI driver \"oldversion\" failed. "
           "None of the versions specified [\"0.3.0\"] are supported. err=highest supported "
           "version reported by driver is 0.3.0, must be v1.x"},
      {"noversions", [](FakePlugin::Config* c) { c->versions = {}; },
       "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI "
       "Driver noversions at endpoint " +
           csi_dir_ +
           "/good.sock: kubernetes.io/csi: ValidatePlugin for CSI driver \"noversions\" failed. "
           "Plugin returned an empty list for supported versions"},
      {"emptynode",
       [this](FakePlugin::Config* c) { c->endpoint = csi_dir_ + "/empty.sock"; },
       "RegisterPlugin error -- plugin registration failed with err: error adding CSI driver "
       "node info: driverNodeID must not be empty"},
      {"brokennode",
       [this](FakePlugin::Config* c) { c->endpoint = csi_dir_ + "/broken.sock"; },
       "RegisterPlugin error -- plugin registration failed with err: rpc error: code = Internal "
       "desc = disk on fire"},
      // The endpoint is not the driver's socket (a wrong --kubelet-registration-path): gRPC-Go's
      // dial error, as kubelet v1.26 (grpc-go v1.49) words it.
      {"nodriver",
       [this](FakePlugin::Config* c) { c->endpoint = csi_dir_ + "/absent.sock"; },
       "RegisterPlugin error -- plugin registration failed with err: rpc error: code = "
       "Unavailable desc = connection error: desc = \"transport: Error while dialing dial unix " +
           csi_dir_ + "/absent.sock: connect: no such file or directory\""},
  };
  std::vector<std::unique_ptr<FakePlugin>> plugins;
  for (const Case& c : cases) {
    FakePlugin::Config config;
    config.name = c.name;
    config.endpoint = csi_dir_ + "/good.sock";
    c.configure(&config);
    plugins.push_back(std::make_unique<FakePlugin>(reg_dir_ + "/" + c.name + "-reg.sock", config));
  }
  // The texts are v1.26's (its apimachinery and grpc-go).
  auto client = StartClient({"--kubelet-version=1.26"});
  for (size_t i = 0; i < std::size(cases); ++i) {
    ASSERT_TRUE(PollUntil([&] { return !plugins[i]->notified().empty(); })) << cases[i].name;
    pluginregistration::RegistrationStatus first = plugins[i]->notified()[0];
    EXPECT_FALSE(first.plugin_registered()) << cases[i].name;
    EXPECT_EQ(first.error(), cases[i].text) << cases[i].name;
  }
  EXPECT_TRUE(Status()["drivers"].empty());
}

// From v1.29 apimachinery's HighestSupportedVersion words its refusals without "by driver"
// (k8s.io/apimachinery@v0.29.6 and v0.37.2 pkg/util/version/version.go); the default release
// (the newest) uses them.
TEST_F(KubeletClientTest, VersionRefusalsAreWordedAsTheReleaseWordsThem) {
  FakeNode good_node(csi_dir_ + "/good.sock", "node-1");
  FakePlugin::Config config;
  config.name = "oldversion";
  config.endpoint = csi_dir_ + "/good.sock";
  config.versions = {"0.3.0"};
  FakePlugin old_version(reg_dir_ + "/oldversion-reg.sock", config);
  config.name = "garbled";
  config.versions = {"one"};
  FakePlugin garbled(reg_dir_ + "/garbled-reg.sock", config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return !old_version.notified().empty(); }));
  EXPECT_THAT(old_version.notified()[0].error(),
              HasSubstr("None of the versions specified [\"0.3.0\"] are supported. "
                        "err=highest supported version reported is 0.3.0, must be v1.x"));
  ASSERT_TRUE(PollUntil([&] { return !garbled.notified().empty(); }));
  EXPECT_THAT(garbled.notified()[0].error(),
              HasSubstr("err=could not find a highest supported version from versions ([one]) "
                        "reported: "));
  EXPECT_THAT(garbled.notified()[0].error(), Not(HasSubstr("by this driver")));
}

TEST_F(KubeletClientTest, UnimplementedCsiRegistrationMeansNoPodInfo) {
  FakeNode node(csi_dir_ + "/n.sock", "node-9");
  FakePlugin::Config config;
  config.endpoint = csi_dir_ + "/n.sock";
  config.name = "plain.example.com";  // like every registrar but ours
  FakePlugin plain(reg_dir_ + "/plain-reg.sock", config);
  config.name = "ours.example.com";
  config.csi_registration = true;
  config.requires_publish_pod = true;
  FakePlugin ours(reg_dir_ + "/ours-reg.sock", config);
  auto client = StartClient({"--ask-csi-registration"});
  ASSERT_TRUE(PollUntil([&] {
    return Registered("plain.example.com") && Registered("ours.example.com");
  })) << ClientLog();
  EXPECT_TRUE(Status()["drivers"]["plain.example.com"]["requiresPublishPod"].is_null());
  EXPECT_EQ(Status()["drivers"]["ours.example.com"]["requiresPublishPod"], true);
  EXPECT_THAT(ClientLog(), HasSubstr("does not implement CSIRegistration"));
  // Registered first, then told so (kubelet's order): wait for the notification.
  ASSERT_TRUE(PollUntil([&] { return !plain.notified().empty(); }));
  EXPECT_TRUE(plain.notified()[0].plugin_registered());
}

// No kubelet release calls CSIRegistration (csi_plugin.go RegistrationHandler.RegisterPlugin,
// v1.26.15 to v1.37.2): by default neither does kubeletclient, so a registrar's switch gives no
// pod information, as on a real node.
TEST_F(KubeletClientTest, LikeEveryKubeletWatchNeverAsksCsiRegistration) {
  FakeNode node(csi_dir_ + "/n.sock", "node-9");
  FakePlugin::Config config;
  config.endpoint = csi_dir_ + "/n.sock";
  config.name = "ours.example.com";
  config.csi_registration = true;
  config.requires_publish_pod = true;
  FakePlugin ours(reg_dir_ + "/ours-reg.sock", config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return Registered("ours.example.com"); })) << ClientLog();
  EXPECT_TRUE(Status()["drivers"]["ours.example.com"]["requiresPublishPod"].is_null());
  EXPECT_EQ(ours.csi_registration_calls(), 0);
  ASSERT_TRUE(PollUntil([&] { return !ours.notified().empty(); }));
  EXPECT_TRUE(ours.notified()[0].plugin_registered());
}

TEST_F(KubeletClientTest, SecondSocketOfADriverNeedsAHigherVersion) {
  FakeNode node(csi_dir_ + "/n.sock", "node-1");
  FakePlugin::Config config;
  config.name = "twin.example.com";
  config.endpoint = csi_dir_ + "/n.sock";
  config.versions = {"1.1.0"};
  FakePlugin first(reg_dir_ + "/first-reg.sock", config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return Registered("twin.example.com"); })) << ClientLog();

  config.versions = {"1.1.0"};
  FakePlugin same(reg_dir_ + "/same-reg.sock", config);
  ASSERT_TRUE(PollUntil([&] { return !same.notified().empty(); }));
  EXPECT_EQ(same.notified()[0].error(),
            "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI "
            "Driver twin.example.com at endpoint " +
                csi_dir_ +
                "/n.sock: kubernetes.io/csi: ValidatePlugin for CSI driver \"twin.example.com\" "
                "failed. Another driver with the same name is already registered with a higher "
                "supported version: \"1.1.0\"");

  config.versions = {"1.2.0"};
  FakePlugin higher(reg_dir_ + "/higher-reg.sock", config);
  ASSERT_TRUE(PollUntil([&] { return !higher.notified().empty(); }));
  EXPECT_TRUE(higher.notified()[0].plugin_registered());
  // The status file is written right after, by the writer thread.
  EXPECT_TRUE(PollUntil([&] {
    json status = Status();
    return status.is_object() && status["drivers"]["twin.example.com"]["version"] == "1.2.0";
  })) << Status().dump();
}

TEST_F(KubeletClientTest, FailedRegistrationIsRetriedWithBackoff) {
  FakePlugin::Config config;
  config.name = "late.example.com";
  config.endpoint = csi_dir_ + "/late.sock";  // nothing there yet: NodeGetInfo fails
  FakePlugin plugin(reg_dir_ + "/late-reg.sock", config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] { return plugin.notified().size() >= 3; })) << ClientLog();
  // Each refusal is logged with its backoff just after it is sent.
  EXPECT_TRUE(PollUntil([&] { return ClientLog().find("retrying in 2s") != std::string::npos; }))
      << ClientLog();
  EXPECT_THAT(ClientLog(), HasSubstr("retrying in 500ms"));
  EXPECT_THAT(ClientLog(), HasSubstr("retrying in 1s"));
  FakeNode node(csi_dir_ + "/late.sock", "node-1");
  EXPECT_TRUE(PollUntil([&] { return Registered("late.example.com"); })) << ClientLog();
}

// Kubelet keeps each socket path's back-off in its goroutinemap until an operation on the path
// succeeds: a socket created again at the path waits out what is left of it, a socket at a new
// path is tried at once (pkg/util/goroutinemap/goroutinemap.go Run and operationComplete,
// identical v1.26.0 to v1.37.2).
TEST_F(KubeletClientTest, ASocketCreatedAgainWaitsOutItsPathsBackoff) {
  FakePlugin::Config config;
  config.name = "late.example.com";
  config.endpoint = csi_dir_ + "/late.sock";  // nothing there: NodeGetInfo fails every time
  const std::string path = reg_dir_ + "/late-reg.sock";
  auto plugin = std::make_unique<FakePlugin>(path, config);
  auto client = StartClient();
  ASSERT_TRUE(PollUntil([&] {
    return ClientLog().find("Registration of " + path + " failed, retrying in 2s") !=
           std::string::npos;
  })) << ClientLog();
  plugin.reset();
  plugin = std::make_unique<FakePlugin>(path, config);
  ASSERT_TRUE(PollUntil([&] { return !plugin->notified().empty(); })) << ClientLog();
  EXPECT_TRUE(PollUntil([&] {
    return ClientLog().find("Registration of " + path + " failed, retrying in 4s") !=
           std::string::npos;
  })) << ClientLog();
  const std::string log = ClientLog();
  const std::string first = "Registration of " + path + " failed, retrying in 500ms";
  EXPECT_EQ(log.find(first), log.rfind(first)) << "the back-off started again: " << log;
  // Another path has a back-off of its own: tried at once.
  const std::string other = reg_dir_ + "/late2-reg.sock";
  FakePlugin second(other, config);
  EXPECT_TRUE(PollUntil([&] {
    return ClientLog().find("Registration of " + other + " failed, retrying in 500ms") !=
           std::string::npos;
  })) << ClientLog();
}

// kubelet before 1.36 keeps a plugin whose RegisterPlugin failed in its actual state of world
// and never retries it; only a socket created again registers it (v1.26.15
// operation_generator.go GenerateRegisterPluginFunc: AddPlugin before handler.RegisterPlugin).
TEST_F(KubeletClientTest, BeforeKubelet136AFailedRegistrationWaitsForANewSocket) {
  FakePlugin::Config config;
  config.name = "late.example.com";
  config.endpoint = csi_dir_ + "/late.sock";  // nothing there yet: NodeGetInfo fails
  auto plugin = std::make_unique<FakePlugin>(reg_dir_ + "/late-reg.sock", config);
  auto client = StartClient({"--kubelet-version=1.35"});
  ASSERT_TRUE(PollUntil([&] {
    return ClientLog().find("does not retry until the socket is created again") !=
           std::string::npos;
  })) << ClientLog();
  FakeNode node(csi_dir_ + "/late.sock", "node-1");
  // A plugin registering its own second socket is seen at once, so once it is, the first
  // socket's plugin has had every chance to be retried.
  FakePlugin::Config other = config;
  other.name = "other.example.com";
  FakePlugin witness(reg_dir_ + "/other-reg.sock", other);
  ASSERT_TRUE(PollUntil([&] { return Registered("other.example.com"); })) << ClientLog();
  EXPECT_EQ(plugin->notified().size(), 1u);
  EXPECT_FALSE(Registered("late.example.com"));
  EXPECT_THAT(ClientLog(), Not(HasSubstr("retrying in")));
  // The socket made again (the registrar's watchdog does that): registered.
  plugin.reset();
  plugin = std::make_unique<FakePlugin>(reg_dir_ + "/late-reg.sock", config);
  EXPECT_TRUE(PollUntil([&] { return Registered("late.example.com"); })) << ClientLog();
}

TEST_F(KubeletClientTest, HungPluginDoesNotDelayOthers) {
  FakeNode node(csi_dir_ + "/n.sock", "node-1");
  FakePlugin::Config hung_config;
  hung_config.name = "hung.example.com";
  hung_config.endpoint = csi_dir_ + "/n.sock";
  hung_config.hang_get_info = true;
  FakePlugin hung(reg_dir_ + "/hung-reg.sock", hung_config);
  // The hung GetInfo outlasts the test: if registrations waited for one another, none of the
  // others below would ever register.
  auto client = StartClient({"--get-info-timeout=1h"});
  ASSERT_TRUE(PollUntil([&] { return hung.get_info_calls() >= 1; }));
  FakePlugin::Config config;
  config.endpoint = csi_dir_ + "/n.sock";
  std::vector<std::unique_ptr<FakePlugin>> others;
  for (int i = 0; i < 10; ++i) {
    config.name = absl::StrCat("p", i, ".example.com");
    others.push_back(
        std::make_unique<FakePlugin>(reg_dir_ + absl::StrCat("/p", i, "-reg.sock"), config));
  }
  ASSERT_TRUE(PollUntil([&] { return Status()["drivers"].size() == 10; })) << ClientLog();
  // Registered while the hung plugin's only GetInfo call is still outstanding.
  EXPECT_EQ(hung.get_info_calls(), 1);
  EXPECT_FALSE(Registered("hung.example.com"));
}

TEST_F(KubeletClientTest, StatusFileIsAlwaysWholeJson) {
  FakeNode node(csi_dir_ + "/n.sock", "node-1");
  auto client = StartClient();
  // The client writes an empty status first; from then on every read below finds a file.
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    return stat(status_file_.c_str(), &st) == 0;
  })) << ClientLog();
  FakePlugin::Config config;
  config.endpoint = csi_dir_ + "/n.sock";
  std::vector<std::unique_ptr<FakePlugin>> plugins;
  int reads = 0, whole = 0;
  for (int i = 0; i < 30; ++i) {
    config.name = absl::StrCat("p", i, ".example.com");
    plugins.push_back(
        std::make_unique<FakePlugin>(reg_dir_ + absl::StrCat("/p", i, "-reg.sock"), config));
    std::string text;
    if (ReadFile(status_file_, &text)) {
      ++reads;
      whole += json::accept(text);
    }
  }
  ASSERT_TRUE(PollUntil([&] {
    std::string text;
    if (!ReadFile(status_file_, &text)) return false;  // not written yet
    ++reads;
    const bool ok = json::accept(text);
    whole += ok;
    return ok && json::parse(text)["drivers"].size() == 30;
  })) << ClientLog();
  EXPECT_GT(reads, 30);
  EXPECT_EQ(reads, whole);
}

TEST_F(KubeletClientTest, ProbePrintsTheHandshake) {
  auto driver = StartDriver("a.example.com", csi_dir_ + "/a.sock", "node-42");
  auto registrar = StartRegistrar(csi_dir_ + "/a.sock", {"--requires-publish-pod"});
  const std::string socket = reg_dir_ + "/a.example.com-reg.sock";
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    return stat(socket.c_str(), &st) == 0;
  }));
  Subprocess probe({Runfile(kClient), "probe", "--registration-socket=" + socket,
                    "--get-info-timeout=60s", "--notify-timeout=60s", "--notify",
                    "--ask-csi-registration"},
                   dir_.Join("probe.log"));
  EXPECT_EQ(probe.Wait(), 0) << probe.Log();
  const std::string out = probe.Log();
  const json doc = json::parse(out.substr(out.find('{'), out.rfind('}') - out.find('{') + 1));
  EXPECT_EQ(doc["pluginInfo"]["name"], "a.example.com");
  EXPECT_EQ(doc["pluginInfo"]["type"], "CSIPlugin");
  EXPECT_EQ(doc["csiDriverInfo"]["options"]["requiresPublishPod"], true);
  EXPECT_EQ(doc["csiDriverInfo"]["csiEndpoint"], csi_dir_ + "/a.sock");
  EXPECT_EQ(doc["nodeGetInfo"]["nodeId"], "node-42");
  EXPECT_EQ(doc["highestSupportedVersion"], "1.0.0");
  EXPECT_EQ(doc["notified"]["pluginRegistered"], true);
  EXPECT_EQ(doc["registered"], true);

  FakeNode empty(csi_dir_ + "/empty.sock", "");
  FakePlugin::Config config;
  config.name = "bad.example.com";
  config.endpoint = csi_dir_ + "/empty.sock";
  FakePlugin bad(reg_dir_ + "/bad-reg.sock", config);
  Subprocess refused({Runfile(kClient), "probe", "--registration-socket=" + reg_dir_ +
                                                     "/bad-reg.sock",
                      "--get-info-timeout=60s", "--notify-timeout=60s", "--ask-csi-registration"},
                     dir_.Join("probe2.log"));
  EXPECT_EQ(refused.Wait(), 1);
  EXPECT_THAT(refused.Log(), HasSubstr("\"registered\": false"));
  // Read-only without --notify: the refusal is reported, not sent.
  EXPECT_THAT(refused.Log(), HasSubstr("\"verdictNotSent\": {\n    \"pluginRegistered\": false"));
  EXPECT_TRUE(bad.notified().empty());
  EXPECT_THAT(refused.Log(), HasSubstr("driverNodeID must not be empty"));
  EXPECT_THAT(refused.Log(), HasSubstr("\"csiDriverInfoAbsent\": \"the registrar does not "
                                      "implement CSIRegistration (UNIMPLEMENTED)"));
  EXPECT_THAT(refused.Log(), HasSubstr("\"nodeId\": \"\""));
}

// probe without --notify leaves a registrar in production as it was: only GetInfo reaches it, its
// registration counter does not move, and what kubelet would have sent is in the output. With
// --notify the same counter moves, so the check above can fail.
TEST_F(KubeletClientTest, ProbeIsReadOnlyUnlessToldToNotify) {
  auto driver = StartDriver("a.example.com", csi_dir_ + "/a.sock", "node-42");
  auto registrar = StartRegistrar(csi_dir_ + "/a.sock", {"--http-endpoint=127.0.0.1:0"});
  const std::string socket = reg_dir_ + "/a.example.com-reg.sock";
  int port = 0;
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    port = ServedHttpPort(registrar->Log());
    return port != 0 && stat(socket.c_str(), &st) == 0;
  })) << registrar->Log();
  auto registrations = [&] {
    std::string body;
    if (HttpGet(port, "/metrics", &body) != 200) return -1;
    const std::string key = "\ncsi_node_driver_registrar_registrations_total ";
    const size_t at = body.find(key);
    return at == std::string::npos ? -1 : atoi(body.c_str() + at + key.size());
  };
  ASSERT_EQ(registrations(), 0);

  Subprocess probe({Runfile(kClient), "probe", "--registration-socket=" + socket,
                    "--get-info-timeout=60s"},
                   dir_.Join("probe.log"));
  EXPECT_EQ(probe.Wait(), 0) << probe.Log();
  const std::string out = probe.Log();
  const json doc = json::parse(out.substr(out.find('{'), out.rfind('}') - out.find('{') + 1));
  EXPECT_TRUE(doc["notified"].is_null());
  EXPECT_EQ(doc["verdictNotSent"]["pluginRegistered"], true);
  EXPECT_EQ(doc["registered"], true);
  EXPECT_EQ(doc["nodeGetInfo"]["nodeId"], "node-42");
  EXPECT_THAT(doc["csiRegistration"].get<std::string>(), HasSubstr("not asked"));
  EXPECT_FALSE(doc.contains("csiDriverInfo"));
  EXPECT_EQ(registrations(), 0);

  Subprocess notify({Runfile(kClient), "probe", "--registration-socket=" + socket,
                     "--get-info-timeout=60s", "--notify-timeout=60s", "--notify"},
                    dir_.Join("notify.log"));
  EXPECT_EQ(notify.Wait(), 0) << notify.Log();
  EXPECT_THAT(notify.Log(), HasSubstr("\"pluginRegistered\": true"));
  EXPECT_TRUE(PollUntil([&] { return registrations() == 1; })) << registrar->Log();
}

TEST_F(KubeletClientTest, BadCommandLinesAreOneLineErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{}, "expected one command"},
      {{"dance"}, "unknown command \"dance\""},
      {{"watch"}, "--node-status-file is required"},
      {{"probe"}, "--registration-socket is required"},
      // @DIR@: the case's own temporary directory (watch writes the status file first).
      {{"watch", "--node-status-file=@DIR@/status.json", "--plugin-registry-dir=/nonexistent/dir"},
       "plugin registry directory /nonexistent/dir"},
      {{"probe", "--registration-socket=/x", "--get-info-timeout=fast"}, "--get-info-timeout"},
      // A flag of another command would be accepted and do nothing.
      {{"probe", "--registration-socket=/x", "--junit=x", "--volume-handle=zzz"},
       "probe: --junit, --volume-handle are not its flags; its flags are --registration-socket"},
      {{"jwks", "--service-account-key-file=/x", "--pod=p.yaml"},
       "jwks: --pod is not one of its flags; its flags are --service-account-key-file "
       "(kubeletclient jwks --help)"},
      {{"unpublish", "--pod=p.yaml", "--objects=o.yaml"}, "unpublish: --objects is not one"},
      // watch reads its CSIDrivers and gates before it writes anything.
      {{"watch", "--node-status-file=/nonexistent/s.json", "--objects=/nonexistent/d.yaml"},
       "--objects: "},
      {{"watch", "--node-status-file=/nonexistent/s.json", "--kubelet-version=1.32",
        "--feature-gates=MutableCSINodeAllocatableCount=true"},
       "--feature-gates: unrecognized feature gate: MutableCSINodeAllocatableCount"},
  };
  for (const Case& c : cases) {
    TempDir logs("kcl");
    std::vector<std::string> argv = {Runfile(kClient)};
    for (const std::string& arg : c.args) {
      argv.push_back(absl::StrReplaceAll(arg, {{"@DIR@", logs.path()}}));
    }
    Subprocess client(argv, logs.Join("log"));
    EXPECT_EQ(client.Wait(), 1) << c.message;
    EXPECT_THAT(client.Log(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace ndr

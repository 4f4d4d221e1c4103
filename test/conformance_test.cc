// The conformance program against our registrar (it must pass, destructive checks included)
// and against deliberately broken registrars (it must fail, naming the broken checks).
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/registrar_log.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::Runfile;
using ::ndr::testing::ServedHttpPort;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

// The suite's deadline for each call and wait: none a busy machine reaches. The suite itself may
// take several of them only if something hangs.
constexpr char kSuiteTimeout[] = "--timeout=60s";
constexpr absl::Duration kSuitePatience = absl::Minutes(10);

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(ConformanceTest, OurRegistrarPassesEverything) {
  TempDir dir("conf");
  const std::string csi = dir.Join("csi.sock"), reg = dir.Join("reg");
  ASSERT_EQ(mkdir(reg.c_str(), 0755), 0);
  const std::string socket = reg + "/sample.csi.example.com-reg.sock";
  Subprocess driver(
      {Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi, "--nodeid=node-1"},
      dir.Join("driver.log"));
  // --timeout bounds the registrar's own GetInfo behind /healthz: none a busy machine reaches.
  Subprocess registrar({Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi,
                        "--kubelet-registration-path=" + csi, "--plugin-registration-path=" + reg,
                        "--http-endpoint=127.0.0.1:0", "--timeout=60s"},
                       dir.Join("registrar.log"));
  ASSERT_TRUE(PollUntil([&] { return Exists(socket) && ServedHttpPort(registrar.Log()) != 0; }))
      << registrar.Log();
  const int port = ServedHttpPort(registrar.Log());

  // The registrar is this test's child: it stays a zombie after exiting, so the suite can read
  // its exit code.
  Subprocess suite({Runfile("test/registrar-conformance"), "--registration-socket=" + socket,
                    absl::StrCat("--http-endpoint=127.0.0.1:", port),
                    absl::StrCat("--pid=", registrar.pid()), "--destructive", kSuiteTimeout},
                   dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 0) << suite.Log();
  const std::string out = suite.Log();
  EXPECT_THAT(out, Not(HasSubstr("FAIL ")));
  for (const char* check :
       {"getinfo.answered", "getinfo.type", "getinfo.name", "getinfo.endpoint", "getinfo.versions",
        "socket.name", "socket.private", "notify.answered", "csiregistration.consistent",
        "csi.plugin_info", "csi.node_id", "http.healthz", "socket.deletion", "signal.sigterm"}) {
    EXPECT_THAT(out, HasSubstr(absl::StrCat("PASS ", check, ":"))) << check;
  }
  EXPECT_THAT(out, HasSubstr("PASS signal.sigterm: socket removed, exit code 0"));
  EXPECT_THAT(out, HasSubstr("summary: 14 PASS, 0 FAIL, 0 SKIP"));
  EXPECT_EQ(registrar.Wait(), 0);
}

TEST(ConformanceTest, NonDestructiveByDefault) {
  TempDir dir("conf");
  const std::string csi = dir.Join("csi.sock"), reg = dir.Join("reg");
  ASSERT_EQ(mkdir(reg.c_str(), 0755), 0);
  const std::string socket = reg + "/sample.csi.example.com-reg.sock";
  Subprocess driver(
      {Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi, "--nodeid=node-1"},
      dir.Join("driver.log"));
  Subprocess registrar({Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi,
                        "--kubelet-registration-path=" + csi, "--plugin-registration-path=" + reg},
                       dir.Join("registrar.log"));
  ASSERT_TRUE(PollUntil([&] { return Exists(socket); })) << registrar.Log();
  const ino_t before = [&] {
    struct stat st;
    lstat(socket.c_str(), &st);
    return st.st_ino;
  }();
  Subprocess suite({Runfile("test/registrar-conformance"), "--registration-socket=" + socket,
                    absl::StrCat("--pid=", registrar.pid()), kSuiteTimeout},
                   dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 0) << suite.Log();
  EXPECT_THAT(suite.Log(), HasSubstr("SKIP socket.deletion: destructive"));
  EXPECT_THAT(suite.Log(), HasSubstr("SKIP http.healthz: no --http-endpoint"));
  EXPECT_TRUE(registrar.Running());
  struct stat st;
  ASSERT_EQ(lstat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, before);
}

// A registrar that gets things wrong: the suite must say which.
class BrokenRegistrar final : public pluginregistration::Registration::Service {
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type("DevicePlugin");
    info->set_name("Broken_Name");
    info->set_endpoint("relative/csi.sock");
    info->add_supported_versions("0.3.0");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    return grpc::Status(grpc::StatusCode::INTERNAL, "boom");
  }
};

TEST(ConformanceTest, BrokenRegistrarFailsTheRightChecks) {
  TempDir dir("conf");
  const std::string socket = dir.Join("wrong-reg.sock");
  BrokenRegistrar broken;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&broken);
  auto server = builder.BuildAndStart();
  ASSERT_EQ(chmod(socket.c_str(), 0777), 0);
  Subprocess suite(
      {Runfile("test/registrar-conformance"), "--registration-socket=" + socket, kSuiteTimeout},
      dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 1) << suite.Log();
  const std::string out = suite.Log();
  EXPECT_THAT(out, HasSubstr("FAIL getinfo.type: type is \"DevicePlugin\""));
  EXPECT_THAT(out, HasSubstr("FAIL getinfo.name:"));
  EXPECT_THAT(out, HasSubstr("FAIL getinfo.endpoint: endpoint \"relative/csi.sock\""));
  EXPECT_THAT(out, HasSubstr("FAIL getinfo.versions: kubelet refuses [\"0.3.0\"]"));
  EXPECT_THAT(out, HasSubstr("FAIL socket.name: wrong-reg.sock should be Broken_Name-reg.sock"));
  EXPECT_THAT(out, HasSubstr("FAIL socket.private: mode 0777"));
  EXPECT_THAT(out, HasSubstr("FAIL notify.answered"));
  // No CSIRegistration service: SKIP, not FAIL.
  EXPECT_THAT(out, HasSubstr("SKIP csiregistration.consistent: CSIRegistration is not "
                             "implemented (UNIMPLEMENTED)"));
  server->Shutdown();
}

TEST(ConformanceTest, UnreachableSocketFails) {
  TempDir dir("conf");
  Subprocess suite({Runfile("test/registrar-conformance"),
                    "--registration-socket=" + dir.Join("nothing-reg.sock"), kSuiteTimeout},
                   dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 1) << suite.Log();
  EXPECT_THAT(suite.Log(), HasSubstr("FAIL getinfo.answered: GetInfo on "));
}

// Harness mode: the suite runs the registrar binary itself. Every check a registrar can pass.
const char* const kHarnessChecks[] = {"registrar.starts",
                                      "getinfo.answered",
                                      "getinfo.type",
                                      "getinfo.name",
                                      "getinfo.endpoint",
                                      "getinfo.versions",
                                      "socket.name",
                                      "socket.private",
                                      "notify.answered",
                                      "csiregistration.consistent",
                                      "csi.plugin_info",
                                      "csi.node_id",
                                      "http.healthz",
                                      "socket.deletion",
                                      "notify.refused",
                                      "notify.refused_for_now",
                                      "driver.restart_same_name",
                                      "driver.restart_new_name",
                                      "driver.slow_5s",
                                      "driver.slow_40s",
                                      "flags.connection_timeout",
                                      "name.escape",
                                      "name.too_long",
                                      "name.invalid",
                                      "signal.sigterm",
                                      "signal.sigint",
                                      "registration.retry",
                                      "flags.extra"};

TEST(ConformanceHarnessTest, OurRegistrarPassesEveryCheck) {
  TempDir dir("confh");
  // The extra flags are ours and harmless: flags.extra passes too.
  Subprocess suite({Runfile("test/registrar-conformance"),
                    "--registrar-binary=" + Runfile("registrar/csi-node-driver-registrar"),
                    kSuiteTimeout, "--", "--v=2", "--requires-publish-pod"},
                   dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 0) << suite.Log();
  const std::string out = suite.Log();
  EXPECT_THAT(out, Not(HasSubstr("FAIL ")));
  for (const char* check : kHarnessChecks) {
    EXPECT_THAT(out, HasSubstr(absl::StrCat("PASS ", check, ":"))) << check;
  }
  EXPECT_THAT(out, HasSubstr("PASS flags.extra: the registrar runs with --v=2 "
                             "--requires-publish-pod"));
  EXPECT_THAT(out, HasSubstr("requires_publish_pod=true"));
  EXPECT_THAT(out, HasSubstr("PASS driver.slow_40s: waited: registered"));
  EXPECT_THAT(out, HasSubstr("PASS flags.connection_timeout: --connection-timeout=2s had no "
                             "effect: the driver appeared 6s after the registrar"));
  EXPECT_THAT(out, HasSubstr("summary: 28 PASS, 0 FAIL, 0 SKIP"));
}

// The broken registrar has the Go registrar's reported faults (test/broken_registrar_main.cc):
// each fails its check, with the reason, and what it does right passes.
TEST(ConformanceHarnessTest, BrokenRegistrarFailsTheChecksItBreaks) {
  TempDir dir("confh");
  Subprocess suite({Runfile("test/registrar-conformance"),
                    "--registrar-binary=" + Runfile("test/broken-registrar"), kSuiteTimeout, "--",
                    "--no-such-flag=1"},
                   dir.Join("suite.log"));
  EXPECT_EQ(suite.Wait(kSuitePatience), 1) << suite.Log();
  const std::string out = suite.Log();
  // An unknown extra flag is a SKIP, and the checks go on without it.
  EXPECT_THAT(out, HasSubstr("SKIP flags.extra: the registrar refused --no-such-flag=1"));
  EXPECT_THAT(out, HasSubstr("FAIL notify.refused: the call got no answer"));
  // It exits inside the handler on any refusal, even one that goes away by itself.
  EXPECT_THAT(out, HasSubstr("FAIL notify.refused_for_now: the call got no answer"));
  EXPECT_THAT(out, HasSubstr("FAIL driver.restart_new_name: still registered as "
                             "conformance.csi.example.com"));
  // Its one second to ask the driver's name ends long before 40 s (5 s could, in theory, pass
  // before a starved process even asks, so that verdict is not checked).
  EXPECT_THAT(out, HasSubstr("FAIL driver.slow_40s: gave up: exit code 1"));
  // It asks the driver's name once: with no driver yet it exits, flag or no flag.
  EXPECT_THAT(out, HasSubstr("FAIL flags.connection_timeout: with --connection-timeout=2s and no "
                             "driver yet, the registrar gave up: exit code 1"));
  EXPECT_THAT(out, HasSubstr("FAIL name.escape: with a driver name that climbs out of the "
                             "directory (\"../../conformance-escape\") the registrar created "));
  EXPECT_THAT(out, HasSubstr("/t/a/conformance-escape-reg.sock outside the registration "
                             "directory"));
  EXPECT_THAT(out, HasSubstr("FAIL name.too_long: with a 64-character driver name (CSI allows "
                             "63) the registrar registered without a word"));
  EXPECT_THAT(out, HasSubstr("FAIL name.invalid: with an invalid driver name "
                             "(\"Conformance_Driver!\") the registrar registered without a word"));
  EXPECT_THAT(out, HasSubstr("FAIL signal.sigint: SIGINT: killed by signal 2, and its socket was "
                             "left behind"));
  // Like the Go registrar, it has no watchdog flag: a feature only ours has is not applicable to
  // it, never a FAIL.
  EXPECT_THAT(out, HasSubstr("SKIP registration.retry: not applicable: the registrar has no "
                             "--registration-retry-after"));
  EXPECT_THAT(out, Not(HasSubstr("FAIL registration.retry")));
  // Not recreating a deleted socket is allowed when /healthz says 404, as the Go registrar's does.
  EXPECT_THAT(out, HasSubstr("PASS socket.deletion: not recreated, and /healthz said 404"));
  for (const char* check : {"registrar.starts", "getinfo.answered", "socket.private",
                            "driver.restart_same_name", "signal.sigterm"}) {
    EXPECT_THAT(out, HasSubstr(absl::StrCat("PASS ", check, ":"))) << check;
  }
}

TEST(ConformanceHarnessTest, UsageErrors) {
  TempDir dir("confh");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  } cases[] = {
      {{}, 2, "give either --registration-socket"},
      {{"--registration-socket=/x", "--registrar-binary=/y"}, 2, "not both"},
      {{"--registration-socket=/x", "--", "--v=2"}, 2, "need --registrar-binary"},
      {{"--registrar-binary=" + dir.Join("missing")},
       1,
       "FAIL registrar.starts: " + dir.Join("missing") + " is not an executable file"},
      // A registrar that never registers: that check fails, and every later one is a SKIP.
      {{"--registrar-binary=/bin/false", kSuiteTimeout},
       1,
       "SKIP signal.sigint: the registrar does not register even with a well-behaved driver"},
      {{"--registrar-binary=/bin/false", kSuiteTimeout},
       1,
       "FAIL registrar.starts: with a well-behaved driver the registrar did not serve"},
  };
  int run = 0;
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Runfile("test/registrar-conformance")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Subprocess suite(argv, dir.Join(absl::StrCat("suite", run++, ".log")));
    EXPECT_EQ(suite.Wait(), c.code) << suite.Log();
    EXPECT_THAT(suite.Log(), HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace ndr

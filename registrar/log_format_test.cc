// Every line the registrar writes during a full run (start, registration, its socket deleted and
// recreated, the driver restarting, SIGTERM) read back by a parser of klog's text header, and,
// with --logging-format=json --v=4, by a JSON parser checking component-base's keys. The formats
// are those of klog v2.130 (text) and component-base v0.31 logs/json (JSON); see
// logging/logging.h.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kDriverName[] = "sample.csi.example.com";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

class LogFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(dir_.Join("csi").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(reg_.c_str(), 0755), 0);
  }

  std::unique_ptr<Subprocess> StartDriver() {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile("test/csidriver/sample-csi-driver"),
                                 "--endpoint=" + csi_, "--nodeid=node-1"},
        dir_.Join("driver.log"));
  }

  bool Serving() {
    pluginregistration::PluginInfo info;
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = pluginregistration::Registration::NewStub(grpc::CreateCustomChannel(
        "unix:" + socket_, grpc::InsecureChannelCredentials(), args));
    return stub->GetInfo(&context, {}, &info).ok() && info.name() == kDriverName;
  }

  void Notify(bool registered) {
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    if (!registered) status.set_error("RegisterPlugin error -- plugin validation failed");
    pluginregistration::RegistrationStatusResponse response;
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    auto stub = pluginregistration::Registration::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    EXPECT_TRUE(stub->NotifyRegistrationStatus(&context, status, &response).ok());
  }

  // A full run: start, registration confirmed, socket deleted and recreated, the driver killed
  // and restarted, SIGTERM. Returns what the registrar wrote to stderr.
  std::string FullRun(std::vector<std::string> flags) {
    auto driver = StartDriver();
    std::vector<std::string> argv = {Runfile("registrar/csi-node-driver-registrar"),
                                     "--csi-address=" + csi_, "--kubelet-registration-path=" + csi_,
                                     "--plugin-registration-path=" + reg_, "--timeout=60s"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Subprocess registrar(argv, dir_.Join("registrar.err"), dir_.Join("registrar.out"));
    EXPECT_TRUE(PollUntil([&] { return Serving(); })) << registrar.Log();
    Notify(true);
    EXPECT_EQ(unlink(socket_.c_str()), 0);
    // Recreated: it says so (the new socket may well get the old inode number back).
    EXPECT_TRUE(PollUntil([&] {
      const std::string log = registrar.Log();
      return log.find("Registration socket serving") != log.rfind("Registration socket serving") &&
             Serving();
    })) << registrar.Log();
    driver.reset();  // SIGKILL: its socket stays
    driver = StartDriver();
    EXPECT_TRUE(PollUntil([&] {
      std::string log = registrar.Log();
      return log.find("answered again with the same name") != std::string::npos;
    })) << registrar.Log();
    EXPECT_TRUE(registrar.Signal(SIGTERM));
    EXPECT_EQ(registrar.Wait(), 0) << registrar.Log();
    std::string out;
    ReadFile(dir_.Join("registrar.out"), &out);
    EXPECT_EQ(out, "") << "nothing goes to stdout without --log-*-split-stream";
    return registrar.Log();
  }

  TempDir dir_{"logfmt"};
  const std::string csi_ = dir_.Join("csi/csi.sock"), reg_ = dir_.Join("reg");
  const std::string socket_ = reg_ + "/" + kDriverName + "-reg.sock";
};

TEST_F(LogFormatTest, EveryTextLineHasKlogsHeader) {
  const std::string log = FullRun({"--v=4"});
  // klog's header: severity, mmdd, time with microseconds, the pid in 7 columns, file:line.
  const std::regex header(R"(^[IWEF](0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01]) )"
                          R"([0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{6} [ 0-9]{6}[0-9] )"
                          R"([A-Za-z0-9_.\-]+:[0-9]+\] .+$)");
  std::vector<std::string> lines = Lines(log);
  ASSERT_GT(lines.size(), 8u) << log;
  const std::string first_pid = lines[0].substr(22, 7);
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, header)) << "not a klog line: " << line;
    EXPECT_EQ(line.substr(22, 7), first_pid) << line;  // klog writes the process ID
  }
  // The main events, each a structured message with its facts as pairs.
  for (const std::string& event : {
           std::string("] \"CSI driver name learnt\" driver=\"sample.csi.example.com\""),
           "] \"Registration socket serving\" path=\"" + socket_ + "\" driver=\"" + kDriverName +
               "\" endpoint=\"" + csi_ + "\" requiresPublishPod=false",
           std::string("] \"Registration notified\" registered=true"),
           "] \"Registration socket was deleted; creating it again\" path=\"" + socket_ + "\"",
           "] \"CSI driver socket appeared again: the driver restarted; asking its name again\" "
           "csiAddress=\"" + csi_ + "\"",
           std::string("] \"Received a signal: removing the registration socket and exiting\" "
                       "signal=\"SIGTERM\""),
           "] \"Removed registration socket\" path=\"" + socket_ + "\"",
       }) {
    EXPECT_THAT(log, HasSubstr(event));
  }
}

TEST_F(LogFormatTest, EveryJsonLineIsComponentBaseJson) {
  const std::string log = FullRun({"--logging-format=json", "--v=4"});
  std::vector<std::string> lines = Lines(log);
  ASSERT_GT(lines.size(), 8u) << log;
  bool saw_verbose = false;
  for (const std::string& line : lines) {
    const json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(object.is_object()) << "not JSON: " << line;
    // ts, caller, msg first, in that order (checked on the text: nlohmann sorts keys), then v
    // for all but errors.
    EXPECT_EQ(line.rfind("{\"ts\":", 0), 0u) << line;
    EXPECT_NE(line.find(",\"caller\":\""), std::string::npos) << line;
    EXPECT_LT(line.find(",\"caller\":"), line.find(",\"msg\":")) << line;
    // A number: zap writes the float64 with strconv.AppendFloat(f, 'f', -1, 64), so a time that
    // falls on a whole millisecond (one line in about 4096, at a double's precision) has no
    // fractional part, in Go's output as in ours.
    EXPECT_TRUE(object["ts"].is_number()) << line;
    // Milliseconds since the epoch: this year, give or take.
    EXPECT_GT(object["ts"].get<double>(), 1.6e12) << line;
    EXPECT_THAT(object["caller"].get<std::string>(), ::testing::MatchesRegex(R"([a-z_/]+\.cc:[0-9]+)"))
        << line;
    EXPECT_TRUE(object["msg"].is_string()) << line;
    EXPECT_TRUE(object["v"].is_number_integer()) << line;  // no error in this run
    saw_verbose = saw_verbose || object["v"] == 4;
  }
  EXPECT_TRUE(saw_verbose) << "--v=4 shows the RPCs";
  EXPECT_THAT(log, HasSubstr("\"msg\":\"CSI driver name learnt\",\"v\":0,\"driver\":"
                             "\"sample.csi.example.com\"}"));
  EXPECT_THAT(log, HasSubstr("\"msg\":\"Registration notified\",\"v\":0,\"registered\":true}"));
  EXPECT_THAT(log, HasSubstr("\"msg\":\"Received a signal: removing the registration socket and "
                             "exiting\",\"v\":0,\"signal\":\"SIGTERM\"}"));
}

// Split streams: info lines on stdout, errors on stderr, in either format; an error line in JSON
// has "err" last and no "v".
TEST_F(LogFormatTest, SplitStreamsAndErrors) {
  for (const std::string format : {"text", "json"}) {
    auto driver = StartDriver();
    Subprocess registrar(
        {Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi_,
         "--kubelet-registration-path=" + csi_, "--plugin-registration-path=" + reg_,
         "--logging-format=" + format, "--log-" + format + "-split-stream",
         "--log-" + format + "-info-buffer-size=1Ki", "--log-flush-frequency=1s"},
        dir_.Join(format + ".err"), dir_.Join(format + ".out"));
    ASSERT_TRUE(PollUntil([&] { return Serving(); })) << registrar.Log();
    Notify(false);  // a refusal: logged as an error, then the registrar exits 1
    EXPECT_EQ(registrar.Wait(), 1) << registrar.Log();
    std::string out, err;
    ReadFile(dir_.Join(format + ".out"), &out);
    ReadFile(dir_.Join(format + ".err"), &err);
    ASSERT_FALSE(out.empty()) << format << ": buffered info was flushed at exit";
    for (const std::string& line : Lines(out)) {
      EXPECT_TRUE(format == "text" ? line[0] == 'I' : json::parse(line).contains("v")) << line;
    }
    ASSERT_FALSE(err.empty()) << format;
    for (const std::string& line : Lines(err)) {
      if (format == "text") {
        EXPECT_NE(line[0], 'I') << line;
      } else {
        const json object = json::parse(line);
        EXPECT_FALSE(object.contains("v")) << line;
      }
    }
    if (format == "json") {
      EXPECT_THAT(err, HasSubstr("\"msg\":\"Kubelet refused the registration\","
                                 "\"registered\":false,\"refusal\":\"unknown\",\"why\":"
                                 "\"a reason kubelet v1.26 to v1.37 does not give\",\"err\":"
                                 "\"RegisterPlugin error -- plugin validation failed\"}"));
    } else {
      EXPECT_THAT(err, HasSubstr("] \"Kubelet refused the registration\" err=\"RegisterPlugin "
                                 "error -- plugin validation failed\" registered=false "
                                 "refusal=\"unknown\""));
    }
  }
}

// The component-base flags are checked as component-base checks them; each error is one line
// naming the flag, and the program exits 1 before anything is created.
TEST_F(LogFormatTest, BadLoggingFlagsAreOneLineErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  } cases[] = {
      {{"--logging-format=xml"},
       "--logging-format: Invalid value: \"xml\": Unsupported log format (permitted: \"json\", "
       "\"text\")"},
      {{"--log-flush-frequency=soon"}, "--log-flush-frequency"},
      {{"--log-flush-frequency=0s"}, "--log-flush-frequency: must be greater than 0"},
      {{"--log-json-info-buffer-size=lots"}, "--log-json-info-buffer-size: \"lots\" is not a size"},
      {{"--logging-format=json", "--vmodule=registrar=4"},
       "--vmodule: only supported for text log format"},
      {{"--v=-1"}, "--v: -1 is negative"},
      {{"--vmodule=registrar"},
       "--vmodule: syntax error: expect comma-separated list of filename=N"},
      {{"--stderrthreshold=LOUD"}, "--stderrthreshold: \"LOUD\" is not a severity"},
      {{"--log_backtrace_at=main"}, "--log_backtrace_at: \"main\": syntax error"},
      {{"--logging-format=json", "--skip_headers"},
       "--skip_headers: only supported for text log format"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Runfile("registrar/csi-node-driver-registrar"),
                                     "--csi-address=" + csi_, "--kubelet-registration-path=" + csi_,
                                     "--plugin-registration-path=" + reg_};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    TempDir logs("lf");
    Subprocess registrar(argv, logs.Join("log"));
    EXPECT_EQ(registrar.Wait(), 1) << c.error;
    const std::string log = registrar.Log();
    EXPECT_EQ(log.rfind("csi-node-driver-registrar: " + c.error, 0), 0u) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_THAT(::ndr::testing::DirEntries(reg_), ::testing::IsEmpty());
  }
}

// The klog flags of the Go registrar v2.0-v2.10 (see logging/logging.cc): --skip_headers and
// --add_dir_header change the text header as klog's do; --logtostderr=false and the file flags
// write no file anywhere, and each says so once, as a warning naming the flag.
TEST_F(LogFormatTest, KlogFlagsOfOlderManifests) {
  const std::string files = dir_.Join("files");
  ASSERT_EQ(mkdir(files.c_str(), 0755), 0);
  {
    const std::vector<std::string> lines = Lines(FullRun({"--skip_headers"}));
    ASSERT_FALSE(lines.empty());
    for (const std::string& line : lines) {
      EXPECT_FALSE(std::regex_search(line, std::regex("^[IWEF][0-9]{4} "))) << line;
    }
    EXPECT_THAT(lines,
                ::testing::Contains(::testing::StartsWith("\"Registration socket serving\"")));
  }
  {
    const std::string log = FullRun({"--add_dir_header", "--v=4"});
    EXPECT_THAT(log, HasSubstr(" registrar/registrar.cc:"));
    EXPECT_THAT(log, ::testing::Not(HasSubstr("] A klog flag")));
  }
  const std::string log =
      FullRun({"--logtostderr=false", "--log_dir=" + files, "--log_file=" + files + "/x.log",
               "--alsologtostderr", "--one_output", "--stderrthreshold=INFO"});
  for (const std::string& flag : std::vector<std::string>{
           "--logtostderr=false", "--log_dir=" + files, "--log_file=" + files + "/x.log",
           "--alsologtostderr=true", "--one_output=true", "--stderrthreshold=INFO"}) {
    const std::string line = "\"A klog flag has no effect here\" flag=\"" + flag + "\"";
    const std::vector<std::string> lines = Lines(log);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& l) {
                              return l[0] == 'W' && absl::StrContains(l, line);
                            }),
              1)
        << flag << "\n"
        << log;
  }
  EXPECT_THAT(::ndr::testing::DirEntries(files), ::testing::IsEmpty());
  // Registered and stopped as always: the full run's steps all passed above.
  EXPECT_THAT(log, HasSubstr("Registration socket serving"));
}

}  // namespace
}  // namespace ndr

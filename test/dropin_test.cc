// Drop-in: the registrar container of each manifest in test/dropin_manifests.h, run unchanged but
// for its paths and ports, against the sample driver under the manifest's driver name. Kubelet's
// side is the conformance suite (test/conformance_suite), destructive checks included: the
// registrar must register, serve /healthz where the manifest asks for it, recreate its socket,
// pass the manifest's exec liveness probe, and stop cleanly on SIGTERM (socket removed, exit 0).
//
// What is moved, and only that: the CSI socket's directory (its file name stays, and
// the default --csi-address is made explicit where a manifest relies on it), the registration
// directory (the manifests mount it at the default /registration), and the HTTP port (port 0 for
// --http-endpoint, read back from the log; a free port for --health-port, where 0 means off).
// --kubelet-registration-path is only ever reported to kubelet, so it stays as written.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "test/conformance_suite/conformance.h"
#include "test/dropin_manifests.h"
#include "test/util/poll.h"
#include "test/util/registrar_log.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace dropin {

// Names a failing case by its id instead of the bytes of the struct.
void PrintTo(const Manifest& manifest, std::ostream* os) { *os << manifest.id; }

}  // namespace dropin
namespace {

using ::ndr::dropin::Manifest;
using ::ndr::testing::PollUntil;
using ::ndr::testing::Runfile;
using ::ndr::testing::ServedHttpPort;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;

// $(VAR) expansion as kubelet does it for args and exec probe commands
// (kubernetes/third_party/forked/golang/expansion/expand.go, Expand): a defined variable is
// replaced, an undefined reference stays as written, and $$ stands for a single $.
std::string Expand(const std::string& in, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 == in.size()) {
      out += in[i];
    } else if (in[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (in[i + 1] == '(') {
      const size_t close = in.find(')', i + 2);
      if (close == std::string::npos) {
        out += in.substr(i);
        break;
      }
      const std::string name = in.substr(i + 2, close - i - 2);
      auto it = env.find(name);
      out += it != env.end() ? it->second : in.substr(i, close - i + 1);
      i = close;
    } else {
      out += in[i];
    }
  }
  return out;
}

TEST(ExpandTest, AsKubelet) {
  const std::map<std::string, std::string> env = {{"A", "/csi/csi.sock"}, {"B", "x"}};
  EXPECT_EQ(Expand("--csi-address=$(A)", env), "--csi-address=/csi/csi.sock");
  EXPECT_EQ(Expand("$(B)$(B)-$(C)", env), "xx-$(C)");
  EXPECT_EQ(Expand("$$(A) $ $(", env), "$(A) $ $(");
}

// One argument list's flag: "--name=value", "-name=value", or "--name"/"-name" followed by its
// value as the next argument.
struct Flag {
  std::string name;
  size_t index;                  // of the argument holding the value
  std::optional<size_t> eq;      // where the value starts in it, if after '='
};

// Flags whose value the test moves; all of them take a value.
std::map<std::string, Flag> FindMovedFlags(const std::vector<std::string>& args) {
  static const char* const kMoved[] = {"csi-address", "plugin-registration-path",
                                       "http-endpoint", "health-port"};
  std::map<std::string, Flag> found;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg[0] != '-') continue;
    const size_t start = arg.size() > 1 && arg[1] == '-' ? 2 : 1;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(start, eq == std::string::npos ? eq : eq - start);
    for (const char* moved : kMoved) {
      if (name != moved) continue;
      if (eq != std::string::npos) {
        found[name] = {name, i, eq + 1};
      } else if (i + 1 < args.size()) {
        found[name] = {name, i + 1, std::nullopt};
      }
    }
  }
  return found;
}

std::string Value(const std::vector<std::string>& args, const Flag& flag) {
  return flag.eq ? args[flag.index].substr(*flag.eq) : args[flag.index];
}

void SetValue(std::vector<std::string>* args, const Flag& flag, const std::string& value) {
  std::string& arg = (*args)[flag.index];
  arg = flag.eq ? arg.substr(0, *flag.eq) + value : value;
}

// A TCP port nobody listens on now. Another process may take it before the registrar binds it;
// the test then starts the registrar again with another.
int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  socklen_t length = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// The manifest's registrar, as run here.
struct Moved {
  std::vector<std::string> args;
  std::string csi_socket;        // where the sample driver listens
  std::string registration_dir;  // where the registrar puts its socket
  bool http = false;             // the manifest serves /healthz
  std::string http_host;         // as the manifest gives it
};

Moved Move(const Manifest& manifest, const std::string& dir, int health_port) {
  Moved moved;
  for (const std::string& arg : manifest.args) moved.args.push_back(Expand(arg, manifest.env));
  std::map<std::string, Flag> flags = FindMovedFlags(moved.args);

  // --csi-address keeps its spelling (path, unix:// or unix:) and its file name.
  std::string address = flags.count("csi-address") ? Value(moved.args, flags["csi-address"])
                                                   : "/run/csi/socket";  // the flag's default
  std::string prefix;
  for (const char* scheme : {"unix://", "unix:"}) {
    if (absl::StartsWith(address, scheme)) {
      prefix = scheme;
      break;
    }
  }
  const std::string path = address.substr(prefix.size());
  moved.csi_socket = absl::StrCat(dir, "/csi/", path.substr(path.find_last_of('/') + 1));
  if (flags.count("csi-address")) {
    SetValue(&moved.args, flags["csi-address"], prefix + moved.csi_socket);
  } else {
    moved.args.push_back("--csi-address=" + moved.csi_socket);
  }

  moved.registration_dir = dir + "/registration";
  if (flags.count("plugin-registration-path")) {
    SetValue(&moved.args, flags["plugin-registration-path"], moved.registration_dir);
  } else {
    moved.args.push_back("--plugin-registration-path=" + moved.registration_dir);
  }

  if (flags.count("http-endpoint")) {
    const std::string endpoint = Value(moved.args, flags["http-endpoint"]);
    moved.http = true;
    moved.http_host = endpoint.substr(0, endpoint.rfind(':'));
    SetValue(&moved.args, flags["http-endpoint"], moved.http_host + ":0");
  }
  if (flags.count("health-port")) {
    moved.http = true;
    SetValue(&moved.args, flags["health-port"], std::to_string(health_port));
  }
  return moved;
}

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// Lines of a klog text log at error or fatal severity.
std::vector<std::string> ErrorLines(const std::string& log) {
  std::vector<std::string> errors;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.size() > 5 && (line[0] == 'E' || line[0] == 'F') && isdigit(line[1])) {
      errors.push_back(line);
    }
    start = end + 1;
  }
  return errors;
}

class DropInTest : public ::testing::TestWithParam<Manifest> {};

TEST_P(DropInTest, RegistersServesAndStopsCleanly) {
  const Manifest& manifest = GetParam();
  SCOPED_TRACE(absl::StrCat(manifest.driver, ", from ", manifest.source));
  TempDir dir("dropin");
  ASSERT_EQ(mkdir(dir.Join("csi").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(dir.Join("registration").c_str(), 0755), 0);

  Moved moved = Move(manifest, dir.path(), UnusedPort());
  Subprocess driver({Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + moved.csi_socket,
                     "--drivername=" + manifest.driver, "--nodeid=node-1"},
                    dir.Join("driver.log"));
  ASSERT_TRUE(PollUntil([&] { return IsSocket(moved.csi_socket); })) << driver.Describe();

  const std::string socket = absl::StrCat(moved.registration_dir, "/", manifest.driver, "-reg.sock");
  std::vector<std::string> argv = {Runfile("registrar/csi-node-driver-registrar")};
  argv.insert(argv.end(), moved.args.begin(), moved.args.end());
  std::unique_ptr<Subprocess> registrar;
  // Only --health-port needs a second try, if another process took the port meanwhile.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) {
      moved = Move(manifest, dir.path(), UnusedPort());
      argv.resize(1);
      argv.insert(argv.end(), moved.args.begin(), moved.args.end());
    }
    registrar = std::make_unique<Subprocess>(argv, dir.Join("registrar.log"));
    ASSERT_TRUE(PollUntil([&] {
      return !registrar->Running() ||
             (IsSocket(socket) && (!moved.http || ServedHttpPort(registrar->Log()) != 0));
    }));
    if (registrar->Running() || !absl::StrContains(registrar->Log(), "Address already in use")) {
      break;
    }
  }
  ASSERT_TRUE(registrar->Running()) << "registrar " << absl::StrJoin(moved.args, " ")
                                    << " exited:\n" << registrar->Describe();

  if (!manifest.exec_probe.empty()) {
    std::vector<std::string> probe = {argv[0]};  // in place of /csi-node-driver-registrar
    for (size_t i = 1; i < manifest.exec_probe.size(); ++i) {
      probe.push_back(Expand(manifest.exec_probe[i], manifest.env));
    }
    Subprocess liveness(probe, dir.Join("probe.log"));
    EXPECT_EQ(liveness.Wait(), 0) << liveness.Describe();
  }

  if (moved.http) {
    // Polled rather than asked once: /healthz calls GetInfo with the manifest's --timeout (1 s
    // by default), which a loaded machine may exceed now and then, as kubelet's liveness probe
    // allows for with its failureThreshold.
    const std::string host = moved.http_host.empty() || moved.http_host == "0.0.0.0" ||
                                     moved.http_host == "localhost"
                                 ? "127.0.0.1"
                                 : moved.http_host;
    httplib::Client client(host, ServedHttpPort(registrar->Log()));
    EXPECT_TRUE(PollUntil([&] {
      httplib::Result result = client.Get("/healthz");
      return result && result->status == 200 && result->body == "ok";
    })) << "GET http://" << host << ":" << ServedHttpPort(registrar->Log()) << "/healthz";
  }

  conformance::Config config;  // without http_endpoint: /healthz is checked above
  config.registration_socket = socket;
  config.csi_endpoint = moved.csi_socket;
  config.pid = registrar->pid();
  config.destructive = true;
  config.timeout = ::ndr::testing::kPatience;
  std::map<std::string, conformance::Outcome> outcomes;
  for (const conformance::CheckResult& result : conformance::RunChecks(config)) {
    outcomes[result.name] = result.outcome;
    EXPECT_NE(result.outcome, conformance::Outcome::kFail) << conformance::Format(result);
  }
  EXPECT_EQ(outcomes["getinfo.answered"], conformance::Outcome::kPass);
  EXPECT_EQ(outcomes["notify.answered"], conformance::Outcome::kPass);
  EXPECT_EQ(outcomes["csi.plugin_info"], conformance::Outcome::kPass);
  EXPECT_EQ(outcomes["socket.deletion"], conformance::Outcome::kPass);
  EXPECT_EQ(outcomes["signal.sigterm"], conformance::Outcome::kPass);
  EXPECT_EQ(registrar->Wait(), 0);
  EXPECT_THAT(ErrorLines(registrar->Log()), ::testing::IsEmpty()) << registrar->Log();
}

std::string TestName(const ::testing::TestParamInfo<Manifest>& info) { return info.param.id; }

INSTANTIATE_TEST_SUITE_P(PublicManifests, DropInTest,
                         ::testing::ValuesIn(dropin::Manifests()), TestName);

// A line of test/go_registrar_v2.17.0_flags.tsv or test/go_registrar_v2.0-v2.10_flags.tsv: a flag
// of a Go registrar, and a value it accepts.
struct GoFlag {
  std::string name, type, default_value, value;
  std::string expect;    // "serves": registers with it; "exit0": exits 0 at once
  std::string releases;  // the older list only: the releases that had it
};

constexpr char kNewestFlags[] = "test/go_registrar_v2.17.0_flags.tsv";
constexpr char kOlderFlags[] = "test/go_registrar_v2.0-v2.10_flags.tsv";

std::vector<GoFlag> GoRegistrarFlags(const std::string& list = kNewestFlags) {
  const std::string path = Runfile(list);
  const size_t columns = list == kOlderFlags ? 6 : 5;
  std::string text;
  if (!::ndr::testing::ReadFile(path, &text)) ADD_FAILURE() << "cannot read " << path;
  std::vector<GoFlag> flags;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    if (fields.size() != columns) {
      ADD_FAILURE() << path << ": not " << columns << " tab-separated fields: " << line;
      continue;
    }
    fields.resize(6);
    flags.push_back({fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]});
  }
  return flags;
}

// Each flag of `list` that registers, as a manifest: what every manifest passes, and that flag
// set to its value (in place of the common one, for the common flags). From the older list,
// only the flags the newest release no longer has (klog's): the others are the newest list's.
std::vector<Manifest> GoFlagManifests(const std::string& list = kNewestFlags) {
  std::set<std::string> newest;
  for (const GoFlag& flag : GoRegistrarFlags()) newest.insert(flag.name);
  std::vector<Manifest> manifests;
  for (const GoFlag& flag : GoRegistrarFlags(list)) {
    if (flag.expect != "serves") continue;
    if (list != kNewestFlags && newest.count(flag.name)) continue;
    std::map<std::string, std::string> values = {
        {"csi-address", "/csi/csi.sock"},
        {"kubelet-registration-path", "/var/lib/kubelet/plugins/sample/csi.sock"},
        {"http-endpoint", ":9809"}};
    if (flag.name == "health-port") values.erase("http-endpoint");  // the two exclude each other
    values[flag.name] = flag.value;
    Manifest manifest;
    manifest.id = absl::StrReplaceAll(flag.name, {{"-", "_"}});
    manifest.driver = "sample.csi.example.com";
    manifest.source = list;
    for (const auto& [name, value] : values) {
      manifest.args.push_back(absl::StrCat("--", name, "=", value));
    }
    manifests.push_back(manifest);
  }
  return manifests;
}

// Every flag of the Go registrar v2.17.0, set as its line says: our registrar must register,
// serve /healthz and stop cleanly with it, as with any manifest.
INSTANTIATE_TEST_SUITE_P(GoRegistrarV2_17_0Flags, DropInTest,
                         ::testing::ValuesIn(GoFlagManifests()), TestName);

// Every flag of the Go registrar v2.0-v2.10 the newest release no longer has (klog's flags, which
// manifests written for those releases pass): our registrar must register with each.
INSTANTIATE_TEST_SUITE_P(GoRegistrarV2_0ToV2_10Flags, DropInTest,
                         ::testing::ValuesIn(GoFlagManifests(kOlderFlags)), TestName);

TEST(GoFlagsTest, TheOlderListIsWhole) {
  const std::vector<GoFlag> flags = GoRegistrarFlags(kOlderFlags);
  // 23 in v2.10.1's --help (v2.0.1's 19 are among them); a line lost here would be a flag no
  // test covers.
  EXPECT_EQ(flags.size(), 23u);
  std::set<std::string> newest;
  for (const GoFlag& flag : GoRegistrarFlags()) newest.insert(flag.name);
  int klog = 0;
  for (const GoFlag& flag : flags) {
    EXPECT_THAT(flag.releases, ::testing::MatchesRegex("v2\\.[0-9]+\\.[0-9]+-v2\\.10\\.1"))
        << flag.name;
    if (!newest.count(flag.name)) ++klog;
  }
  EXPECT_EQ(klog, 11) << "klog's flags less --v and --vmodule";
  EXPECT_EQ(GoFlagManifests(kOlderFlags).size(), 11u);
}

TEST(GoFlagsTest, TheListIsWhole) {
  const std::vector<GoFlag> flags = GoRegistrarFlags();
  // 19 in v2.17.0's --help; a line lost here would be a flag no test covers.
  EXPECT_EQ(flags.size(), 19u);
  std::set<std::string> names;
  for (const GoFlag& flag : flags) {
    EXPECT_TRUE(names.insert(flag.name).second) << flag.name << " twice";
    EXPECT_THAT(flag.expect, ::testing::AnyOf("serves", "exit0")) << flag.name;
  }
  EXPECT_EQ(names.count("automaxprocs"), 1u);
}

TEST(GoFlagsTest, ThoseThatEndAtOnceExitZero) {
  for (const GoFlag& flag : GoRegistrarFlags()) {
    if (flag.expect != "exit0") continue;
    TempDir dir("goflag");
    Subprocess registrar({Runfile("registrar/csi-node-driver-registrar"),
                          absl::StrCat("--", flag.name, "=", flag.value)},
                         dir.Join("registrar.log"));
    EXPECT_EQ(registrar.Wait(), 0) << flag.name << ": " << registrar.Describe();
  }
}

// Our --help lists each of them, as Go's does (`  -name ...` at the start of a line).
TEST(GoFlagsTest, HelpListsEveryOne) {
  TempDir dir("gohelp");
  Subprocess help({Runfile("registrar/csi-node-driver-registrar"), "--help"},
                  dir.Join("help.log"));
  ASSERT_EQ(help.Wait(), 0) << help.Describe();
  const std::string text = help.Log();
  for (const GoFlag& flag : GoRegistrarFlags()) {
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("\n  -", flag.name, "\n")) ||
                absl::StrContains(text, absl::StrCat("\n  -", flag.name, " ")))
        << "-" << flag.name << " is not in --help:\n"
        << text;
  }
}

// --automaxprocs in every spelling Go's flag package takes for a bool: each starts and registers,
// and all but =false say what they found.
TEST(GoFlagsTest, AutomaxprocsSpellings) {
  for (const char* spelling :
       {"-automaxprocs", "--automaxprocs", "--automaxprocs=true", "-automaxprocs=1",
        "--automaxprocs=false"}) {
    SCOPED_TRACE(spelling);
    TempDir dir("amp");
    ASSERT_EQ(mkdir(dir.Join("csi").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(dir.Join("registration").c_str(), 0755), 0);
    const std::string csi = dir.Join("csi/csi.sock");
    Subprocess driver({Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi},
                      dir.Join("driver.log"));
    ASSERT_TRUE(PollUntil([&] { return IsSocket(csi); })) << driver.Describe();
    Subprocess registrar(
        {Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi,
         "--kubelet-registration-path=/var/lib/kubelet/plugins/sample/csi.sock",
         "--plugin-registration-path=" + dir.Join("registration"), spelling},
        dir.Join("registrar.log"));
    const std::string socket = dir.Join("registration/sample.csi.example.com-reg.sock");
    ASSERT_TRUE(PollUntil([&] { return IsSocket(socket) || !registrar.Running(); }));
    ASSERT_TRUE(registrar.Running()) << registrar.Describe();
    EXPECT_EQ(absl::StrContains(registrar.Log(), "automaxprocs:"),
              !absl::EndsWith(spelling, "=false"))
        << registrar.Log();
    EXPECT_TRUE(registrar.Signal(SIGTERM));
    EXPECT_EQ(registrar.Wait(), 0) << registrar.Describe();
  }
}

// The table's breadth, as the drop-in promise needs it.
TEST(DropInTableTest, CoversTheFormsManifestsUse) {
  std::set<std::string> drivers;
  std::map<std::string, int> forms;
  for (const Manifest& m : dropin::Manifests()) {
    drivers.insert(m.driver);
    const std::string all = absl::StrJoin(m.args, " ");
    if (absl::StrContains(all, "$(")) ++forms["$(VAR)"];
    if (absl::StrContains(all, " -v=") || absl::StartsWith(all, "-v=")) ++forms["-v="];
    if (absl::StrContains(all, "-csi-address /")) ++forms["split -csi-address"];
    if (absl::StrContains(all, "--logtostderr")) ++forms["--logtostderr"];
    if (absl::StrContains(all, "--health-port=")) ++forms["--health-port"];
    if (absl::StrContains(all, "--http-endpoint=localhost:")) ++forms["localhost:"];
    if (absl::StrContains(all, "--http-endpoint=0.0.0.0:")) ++forms["0.0.0.0:"];
    if (absl::StrContains(all, "--http-endpoint=:")) ++forms[":port"];
    if (absl::StrContains(all, "--timeout=60s")) ++forms["--timeout=60s"];
    if (absl::StrContains(all, "--logging-format=")) ++forms["--logging-format"];
    if (absl::StrContains(all, "unix://")) ++forms["unix://"];
    if (!m.exec_probe.empty()) ++forms["exec probe"];
  }
  EXPECT_GE(drivers.size(), 20u);
  for (const char* form : {"$(VAR)", "-v=", "split -csi-address", "--health-port", "localhost:",
                           "0.0.0.0:", ":port", "--timeout=60s", "--logging-format", "unix://",
                           "exec probe", "--logtostderr"}) {
    EXPECT_GT(forms[form], 0) << form;
  }
  RecordProperty("drivers", static_cast<int>(drivers.size()));
  RecordProperty("manifests", static_cast<int>(dropin::Manifests().size()));
}

}  // namespace
}  // namespace ndr

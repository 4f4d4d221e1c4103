#include "test/conformance_suite/conformance.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csi_name.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/endpoint.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "kubeletclient/csi/versions.h"

namespace ndr::conformance {
namespace {

class Suite {
 public:
  explicit Suite(const Config& config) : config_(config) {}

  std::vector<CheckResult> Run();

 private:
  void Pass(const std::string& name, const std::string& reason) {
    results_.push_back({name, Outcome::kPass, reason});
  }
  void Fail(const std::string& name, const std::string& reason) {
    results_.push_back({name, Outcome::kFail, reason});
  }
  void Skip(const std::string& name, const std::string& reason) {
    results_.push_back({name, Outcome::kSkip, reason});
  }
  void Check(const std::string& name, bool ok, const std::string& pass, const std::string& fail) {
    ok ? Pass(name, pass) : Fail(name, fail);
  }
  std::chrono::system_clock::time_point Deadline() const {
    return absl::ToChronoTime(absl::Now() + config_.timeout);
  }
  // GET path on the HTTP endpoint; returns the status (or -1) and the body.
  int HttpGet(const std::string& path, std::string* body) const;

  void CheckInfo();
  void CheckSocket();
  void CheckNotify();
  void CheckCsiRegistration();
  void CheckDriver();
  void CheckHealthz();
  void CheckSocketDeletion();
  void CheckSigterm();

  const Config& config_;
  std::vector<CheckResult> results_;
  std::optional<pluginregistration::PluginInfo> info_;
};

int Suite::HttpGet(const std::string& path, std::string* body) const {
  return ::ndr::conformance::HttpGet(config_.http_endpoint, path, config_.timeout, body);
}

std::vector<CheckResult> Suite::Run() {
  CheckInfo();
  CheckSocket();
  CheckNotify();
  CheckCsiRegistration();
  CheckDriver();
  CheckHealthz();
  if (config_.destructive) {
    CheckSocketDeletion();
    CheckSigterm();
  } else {
    Skip("socket.deletion", "destructive; run with --destructive");
    Skip("signal.sigterm", "destructive; run with --destructive and --pid");
  }
  return results_;
}

// CONTRACT: GetInfo -> {type: "CSIPlugin", name, endpoint: --kubelet-registration-path,
// supported_versions} and kubelet's version rule.
void Suite::CheckInfo() {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  pluginregistration::PluginInfo info;
  grpc::Status status =
      pluginregistration::Registration::NewStub(UnixChannel(config_.registration_socket))
          ->GetInfo(&context, pluginregistration::InfoRequest(), &info);
  if (!status.ok()) {
    Fail("getinfo.answered",
         absl::StrCat("GetInfo on ", config_.registration_socket, " failed: code ",
                      status.error_code(), " ", status.error_message()));
    for (const char* name :
         {"getinfo.type", "getinfo.name", "getinfo.endpoint", "getinfo.versions", "socket.name"}) {
      Skip(name, "GetInfo did not answer");
    }
    return;
  }
  info_ = info;
  Pass("getinfo.answered", absl::StrCat("GetInfo: ", info.ShortDebugString()));
  Check("getinfo.type", info.type() == "CSIPlugin", "type is CSIPlugin",
        absl::StrCat("type is \"", info.type(), "\", kubelet's CSI handler wants \"CSIPlugin\""));
  absl::Status name = ValidateCsiDriverName(info.name());
  Check("getinfo.name", name.ok(), absl::StrCat("\"", info.name(), "\" is a valid CSI name"),
        std::string(name.message()));
  const std::string& endpoint = info.endpoint();
  if (endpoint.empty() || endpoint[0] != '/') {
    Fail("getinfo.endpoint",
         absl::StrCat("endpoint \"", endpoint, "\" is not an absolute socket path"));
  } else if (absl::Status s = CheckSocketPathLength(endpoint, "endpoint"); !s.ok()) {
    Fail("getinfo.endpoint", std::string(s.message()));
  } else {
    struct stat st;
    if (lstat(endpoint.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      Fail("getinfo.endpoint", absl::StrCat(endpoint, " exists here and is not a socket"));
    } else {
      Pass("getinfo.endpoint", absl::StrCat("\"", endpoint, "\" is an absolute socket path"));
    }
  }
  std::vector<std::string> versions(info.supported_versions().begin(),
                                    info.supported_versions().end());
  absl::StatusOr<kubelet::Version> highest = kubelet::HighestSupportedVersion(versions);
  Check("getinfo.versions", highest.ok(),
        absl::StrCat("kubelet accepts ", kubelet::GoQuoteList(versions), " (highest ",
                     highest.ok() ? highest->String() : "", ")"),
        absl::StrCat("kubelet refuses ", kubelet::GoQuoteList(versions), ": ",
                     highest.status().message()));
  // CONTRACT: the socket is <plugin-registration-path>/<driver name>-reg.sock.
  const std::string base =
      config_.registration_socket.substr(config_.registration_socket.find_last_of('/') + 1);
  Check("socket.name", base == info.name() + "-reg.sock", absl::StrCat(base, " is <name>-reg.sock"),
        absl::StrCat(base, " should be ", info.name(), "-reg.sock"));
}

// CONTRACT: mode 0700 (ours: never accessible to group or others).
void Suite::CheckSocket() {
  struct stat st;
  if (lstat(config_.registration_socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    Fail("socket.private", absl::StrCat(config_.registration_socket, " is not a socket"));
    return;
  }
  Check("socket.private", (st.st_mode & 077) == 0,
        absl::StrFormat("mode %04o: not accessible to group or others", st.st_mode & 07777),
        absl::StrFormat("mode %04o: group or others may connect to it", st.st_mode & 07777));
}

void Suite::CheckNotify() {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  grpc::Status s =
      pluginregistration::Registration::NewStub(UnixChannel(config_.registration_socket))
          ->NotifyRegistrationStatus(&context, status, &response);
  Check("notify.answered", s.ok(), "NotifyRegistrationStatus(plugin_registered=true) answered",
        absl::StrCat("NotifyRegistrationStatus failed: code ", s.error_code(), " ",
                     s.error_message()));
}

// The pod-info design: GetCSIDriverInfo answers consistently with GetInfo, or is UNIMPLEMENTED.
void Suite::CheckCsiRegistration() {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  csiregistration::CSIDriverInfo driver_info;
  grpc::Status s =
      csiregistration::CSIRegistration::NewStub(UnixChannel(config_.registration_socket))
          ->GetCSIDriverInfo(&context, {}, &driver_info);
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    Skip("csiregistration.consistent",
         "CSIRegistration is not implemented (UNIMPLEMENTED): kubelet assumes no pod info");
  } else if (!s.ok()) {
    Fail("csiregistration.consistent",
         absl::StrCat("GetCSIDriverInfo failed: code ", s.error_code(), " ", s.error_message()));
  } else if (!info_.has_value()) {
    Skip("csiregistration.consistent", "GetInfo did not answer; nothing to compare with");
  } else {
    Check("csiregistration.consistent", driver_info.csi_endpoint() == info_->endpoint(),
          absl::StrCat("csi_endpoint matches GetInfo's endpoint; requires_publish_pod=",
                       driver_info.options().requires_publish_pod() ? "true" : "false"),
          absl::StrCat("csi_endpoint \"", driver_info.csi_endpoint(),
                       "\" differs from GetInfo's endpoint \"", info_->endpoint(), "\""));
  }
}

// The endpoint serves CSI: GetPluginInfo names the same driver, NodeGetInfo gives a node ID.
void Suite::CheckDriver() {
  std::string endpoint = config_.csi_endpoint;
  if (endpoint.empty() && info_.has_value()) {
    struct stat st;
    if (lstat(info_->endpoint().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      endpoint = info_->endpoint();
    }
  }
  if (endpoint.empty()) {
    Skip("csi.plugin_info", "the driver's socket is not reachable here; pass --csi-endpoint");
    Skip("csi.node_id", "the driver's socket is not reachable here; pass --csi-endpoint");
    return;
  }
  absl::StatusOr<std::string> path = UnixSocketPath(endpoint, "--csi-endpoint");
  if (!path.ok()) {
    Fail("csi.plugin_info", std::string(path.status().message()));
    Skip("csi.node_id", "no usable CSI endpoint");
    return;
  }
  auto channel = UnixChannel(*path);
  {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    csi::v1::GetPluginInfoResponse response;
    grpc::Status s = csi::v1::Identity::NewStub(channel)->GetPluginInfo(&context, {}, &response);
    if (!s.ok()) {
      Fail("csi.plugin_info", absl::StrCat("GetPluginInfo failed: ", s.error_message()));
    } else if (!info_.has_value()) {
      Skip("csi.plugin_info", "GetInfo did not answer; nothing to compare with");
    } else {
      Check("csi.plugin_info", response.name() == info_->name(),
            absl::StrCat("the driver is \"", response.name(), "\", as GetInfo says"),
            absl::StrCat("the driver says \"", response.name(), "\", GetInfo says \"",
                         info_->name(), "\""));
    }
  }
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  csi::v1::NodeGetInfoResponse node;
  grpc::Status s = csi::v1::Node::NewStub(channel)->NodeGetInfo(&context, {}, &node);
  if (!s.ok()) {
    Fail("csi.node_id", absl::StrCat("NodeGetInfo failed: ", s.error_message()));
  } else {
    Check("csi.node_id", !node.node_id().empty() && node.node_id().size() <= 256,
          absl::StrCat("node ID \"", node.node_id(), "\""),
          absl::StrCat("node ID \"", node.node_id(), "\" is empty or over 256 bytes"));
  }
}

// CONTRACT: /healthz answers 200 "ok" while all is well.
void Suite::CheckHealthz() {
  if (config_.http_endpoint.empty()) {
    Skip("http.healthz", "no --http-endpoint");
    return;
  }
  std::string body;
  const int code = HttpGet("/healthz", &body);
  Check("http.healthz", code == 200, absl::StrCat("GET /healthz: 200 \"", body, "\""),
        absl::StrCat("GET /healthz: ", code, " \"", body, "\", expected 200"));
}

// Deleting the socket: either it comes back (self-healing) or /healthz says 404 (Go semantics).
void Suite::CheckSocketDeletion() {
  if (unlink(config_.registration_socket.c_str()) != 0) {
    Fail("socket.deletion",
         absl::StrCat("unlink ", config_.registration_socket, ": ", strerror(errno)));
    return;
  }
  const absl::Time deadline = absl::Now() + config_.timeout;
  bool saw_404 = false;
  while (absl::Now() < deadline) {
    struct stat st;
    if (lstat(config_.registration_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      Pass("socket.deletion", "the registrar created its socket again");
      return;
    }
    std::string body;
    if (!config_.http_endpoint.empty() && HttpGet("/healthz", &body) == 404) saw_404 = true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (saw_404) {
    Pass("socket.deletion", "not recreated, and /healthz reported 404 as the Go registrar does");
  } else if (config_.http_endpoint.empty()) {
    Skip("socket.deletion", "not recreated (self-healing is not required); no /healthz to check");
  } else {
    Fail("socket.deletion", "not recreated, and /healthz did not report 404");
  }
}

// CONTRACT: SIGTERM removes the socket and the registrar exits 0.
void Suite::CheckSigterm() {
  if (config_.pid <= 0) {
    Skip("signal.sigterm", "no --pid");
    return;
  }
  if (kill(config_.pid, SIGTERM) != 0) {
    Fail("signal.sigterm", absl::StrCat("kill ", config_.pid, ": ", strerror(errno)));
    return;
  }
  const absl::Duration patience = std::max(config_.timeout, absl::Seconds(10));
  const absl::Time deadline = absl::Now() + patience;
  std::optional<int> exit_code;
  bool gone = false;
  while (absl::Now() < deadline) {
    std::ifstream in(absl::StrCat("/proc/", config_.pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (stat.empty()) {  // reaped already: the exit code cannot be seen
      gone = true;
      break;
    }
    std::vector<std::string> fields = absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ');
    if (!fields.empty() && fields[0] == "Z") {  // exited, not yet reaped
      int raw = 0;
      if (fields.size() >= 50 && absl::SimpleAtoi(fields[49], &raw)) exit_code = raw;
      gone = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  struct stat st;
  const bool socket_left = lstat(config_.registration_socket.c_str(), &st) == 0;
  if (!gone) {
    Fail("signal.sigterm", absl::StrCat("the process did not exit within ",
                                        absl::FormatDuration(patience), " of SIGTERM"));
  } else if (socket_left) {
    Fail("signal.sigterm", "the process exited but left its socket behind");
  } else if (exit_code.has_value() && !(WIFEXITED(*exit_code) && WEXITSTATUS(*exit_code) == 0)) {
    Fail("signal.sigterm",
         absl::StrCat("the process ended with status ", *exit_code, ", expected exit code 0"));
  } else {
    Pass("signal.sigterm", exit_code.has_value()
                               ? "socket removed, exit code 0"
                               : "socket removed, process gone (exit code not observable here)");
  }
}

}  // namespace

std::vector<CheckResult> RunChecks(const Config& config) { return Suite(config).Run(); }

int HttpGet(const std::string& host_port, const std::string& path, absl::Duration timeout,
            std::string* body) {
  const size_t colon = host_port.rfind(':');
  std::string host = host_port.substr(0, colon);
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port)) {
    return -1;
  }
  if (host.empty()) host = "127.0.0.1";
  httplib::Client client(host, port);
  client.set_connection_timeout(absl::ToChronoSeconds(timeout));
  client.set_read_timeout(absl::ToChronoSeconds(timeout));
  httplib::Result result = client.Get(path.c_str());
  if (!result) return -1;
  *body = result->body;
  return result->status;
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(GrpcUnixTarget(path), grpc::InsecureChannelCredentials(), args);
}

std::string Format(const CheckResult& result) {
  const char* word = result.outcome == Outcome::kPass   ? "PASS"
                     : result.outcome == Outcome::kFail ? "FAIL"
                                                        : "SKIP";
  return absl::StrCat(word, " ", result.name, ": ", result.reason);
}

}  // namespace ndr::conformance

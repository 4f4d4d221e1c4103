// broken-registrar: a registrar with the faults users have long reported in the Go
// node-driver-registrar (kubernetes-csi/node-driver-registrar, cmd/csi-node-driver-registrar),
// built to behave as that code does, so that the conformance harness's tests can show it catches
// each one. It takes the Go registrar's standard flags and
//  - asks the driver's name once, with --timeout, and exits 1 if that fails (main.go: main,
//    csirpc.GetDriverName, then klog.FlushAndExit);
//  - joins the name into the socket path unchecked (node_register.go: buildSocketPath);
//  - exits 1 inside NotifyRegistrationStatus(plugin_registered=false), so the call is never
//    answered and the socket stays (main.go: NotifyRegistrationStatus, os.Exit(1));
//  - never recreates a deleted socket; /healthz then answers 404 (node_register.go: httpServer);
//  - never asks the driver's name again, whatever the driver does;
//  - removes its socket and exits 0 on SIGTERM only; SIGINT kills it, socket left behind
//    (node_register.go: removeRegSocket, signal.Notify(sigc, syscall.SIGTERM)).
// Everything else (GetInfo, socket mode 0700, the CSI checks) is right, as it is in the Go
// registrar. Not for any other use.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/go_duration.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gflags/gflags.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"

// Under ThreadSanitizer (test/run-tests.sh's tsan stage) this program ends as Go's os.Exit ends
// a program, with gRPC's and httplib's threads still about. TSan's exit check counts a thread of
// theirs that has just finished, and that nobody joins, as a leak and turns the exit code into
// 66: seen once at SIGTERM in a CI run (not reproduced in 26 more), it failed the harness's
// signal.sigterm check for a reason that is not the one under test. The check stays on for every
// other program.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "report_thread_leaks=0"; }
#endif

DEFINE_string(csi_address, "/run/csi/socket", "The driver's CSI socket.");
DEFINE_string(kubelet_registration_path, "", "The driver's socket as kubelet sees it.");
DEFINE_string(plugin_registration_path, "/registration", "Kubelet's plugin registry directory.");
DEFINE_string(http_endpoint, "", "host:port for /healthz.");
DEFINE_string(timeout, "1s", "Deadline of GetPluginInfo.");
DEFINE_string(connection_timeout, "0s", "Deprecated; no effect, as in the Go registrar.");

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class Registration final : public pluginregistration::Registration::Service {
 public:
  explicit Registration(std::string name) : name_(std::move(name)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type("CSIPlugin");
    info->set_name(name_);
    info->set_endpoint(FLAGS_kubelet_registration_path);
    info->add_supported_versions("1.0.0");
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    if (!status->plugin_registered()) {
      std::cerr << "E registration failed: " << status->error()
                << ", restarting registration container" << std::endl;
      _exit(1);  // as os.Exit(1): no reply, no clean-up
    }
    return grpc::Status::OK;
  }

 private:
  const std::string name_;
};

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<absl::Duration> timeout = ndr::ParseGoDuration(FLAGS_timeout, "timeout");
  if (!timeout.ok()) {
    std::cerr << "E " << timeout.status().message() << std::endl;
    return 1;
  }
  // SIGTERM is taken by sigwait below; SIGINT keeps its default action.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);

  auto channel =
      grpc::CreateChannel("unix:" + FLAGS_csi_address, grpc::InsecureChannelCredentials());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + *timeout));
  context.set_wait_for_ready(true);
  csi::v1::GetPluginInfoResponse plugin;
  grpc::Status s = csi::v1::Identity::NewStub(channel)->GetPluginInfo(&context, {}, &plugin);
  if (!s.ok()) {
    std::cerr << "E error retrieving CSI driver name: " << s.error_message() << std::endl;
    return 1;
  }
  const std::string socket = FLAGS_plugin_registration_path + "/" + plugin.name() + "-reg.sock";
  unlink(socket.c_str());
  Registration registration(plugin.name());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&registration);
  const mode_t old_mask = umask(077);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_mask);
  if (server == nullptr) {
    std::cerr << "E failed to listen on socket " << socket << std::endl;
    return 1;
  }
  std::cerr << "I registration server started on " << socket << std::endl;

  httplib::Server http;
  std::thread http_thread;
  if (!FLAGS_http_endpoint.empty()) {
    const size_t colon = FLAGS_http_endpoint.rfind(':');
    int port = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(FLAGS_http_endpoint.substr(colon + 1), &port)) {
      std::cerr << "E bad --http-endpoint " << FLAGS_http_endpoint << std::endl;
      return 1;
    }
    http.Get("/healthz", [&](const httplib::Request&, httplib::Response& response) {
      if (Exists(socket)) {
        response.set_content("ok", "text/plain");
      } else {
        response.status = 404;
        response.set_content("registration socket does not exist", "text/plain");
      }
    });
    http_thread = std::thread([&http, host = FLAGS_http_endpoint.substr(0, colon), port] {
      http.listen(host.c_str(), port);
    });
  }

  int signal = 0;
  sigwait(&term, &signal);
  unlink(socket.c_str());
  _exit(0);  // as os.Exit(0)
}

// registrar-conformance: checks that a running node-driver-registrar talks to kubelet correctly.
//
//   registrar-conformance --registration-socket=/var/lib/kubelet/plugins_registry/<d>-reg.sock
//       [--csi-endpoint=/var/lib/kubelet/plugins/<d>/csi.sock] [--http-endpoint=127.0.0.1:9809]
//       [--pid=PID] [--destructive]
//
// One line per check (PASS, FAIL or SKIP with the reason) and a summary; exit 0 only if no
// check failed.
#include <iostream>

#include "api/go_duration.h"
#include "gflags/gflags.h"
#include "test/conformance_suite/conformance.h"

DEFINE_string(registration_socket, "", "The registrar's registration socket. Required.");
DEFINE_string(csi_endpoint, "",
              "The driver's CSI socket as reachable from here (default: GetInfo's endpoint).");
DEFINE_string(http_endpoint, "", "host:port of the registrar's /healthz (optional).");
DEFINE_int32(pid, 0, "The registrar's process ID, for the SIGTERM check (with --destructive).");
DEFINE_bool(destructive, false,
            "Also run the checks that delete the socket and stop the registrar with SIGTERM.");
DEFINE_string(timeout, "5s",
              "Deadline of each call, and how long to wait for a deleted socket to come back "
              "(at least 10s for the exit after SIGTERM).");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("registrar-conformance --registration-socket=SOCKET [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_registration_socket.empty()) {
    std::cerr << "registrar-conformance: --registration-socket is required" << std::endl;
    return 2;
  }
  absl::StatusOr<absl::Duration> timeout = ndr::ParseGoDuration(FLAGS_timeout, "timeout");
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    std::cerr << "registrar-conformance: --timeout must be a positive duration" << std::endl;
    return 2;
  }
  ndr::conformance::Config config;
  config.registration_socket = FLAGS_registration_socket;
  config.csi_endpoint = FLAGS_csi_endpoint;
  config.http_endpoint = FLAGS_http_endpoint;
  config.pid = FLAGS_pid;
  config.destructive = FLAGS_destructive;
  config.timeout = *timeout;
  int passed = 0, failed = 0, skipped = 0;
  for (const ndr::conformance::CheckResult& result : ndr::conformance::RunChecks(config)) {
    std::cout << ndr::conformance::Format(result) << std::endl;
    (result.outcome == ndr::conformance::Outcome::kPass   ? passed
     : result.outcome == ndr::conformance::Outcome::kFail ? failed
                                                          : skipped)++;
  }
  std::cout << "summary: " << passed << " PASS, " << failed << " FAIL, " << skipped << " SKIP"
            << std::endl;
  return failed == 0 ? 0 : 1;
}

// registrar-conformance: judges a node-driver-registrar, in one of two modes.
//
// Live: checks a registrar that is already running, through its sockets.
//   registrar-conformance --registration-socket=/var/lib/kubelet/plugins_registry/<d>-reg.sock
//       [--csi-endpoint=/var/lib/kubelet/plugins/<d>/csi.sock] [--http-endpoint=127.0.0.1:9809]
//       [--pid=PID] [--destructive]
//
// Harness: owns everything around a registrar binary (its own CSI driver, kubelet's part, the
// directories) and runs it through every behaviour, failures included (harness.h).
//   registrar-conformance --registrar-binary=PATH [--timeout=5s] [-- EXTRA REGISTRAR FLAGS...]
//
// One line per check (PASS, FAIL or SKIP with the reason) and a summary; exit 0 only if no
// check failed, 2 on a usage error.
#include <stdlib.h>

#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "api/go_duration.h"
#include "gflags/gflags.h"
#include "test/conformance_suite/conformance.h"
#include "test/conformance_suite/harness.h"
#include "version/version.h"

DEFINE_string(registration_socket, "", "Live mode: the registrar's registration socket.");
DEFINE_string(csi_endpoint, "",
              "Live mode: the driver's CSI socket as reachable from here (default: GetInfo's "
              "endpoint).");
DEFINE_string(http_endpoint, "", "Live mode: host:port of the registrar's /healthz (optional).");
DEFINE_int32(pid, 0,
             "Live mode: the registrar's process ID, for the SIGTERM check (with --destructive).");
DEFINE_bool(destructive, false,
            "Live mode: also run the checks that delete the socket and stop the registrar with "
            "SIGTERM.");
DEFINE_string(registrar_binary, "",
              "Harness mode: the registrar binary to start and judge. Flags after -- are given "
              "to it too.");
DEFINE_string(timeout, "5s",
              "Deadline of each call, and how long to wait for each thing a check expects (live "
              "mode: at least 10s for the exit after SIGTERM).");

namespace {

int Usage(const std::string& message) {
  std::cerr << "registrar-conformance: " << message << "\n"
            << "usage: registrar-conformance --registration-socket=SOCKET [flags]   (live)\n"
            << "       registrar-conformance --registrar-binary=PATH [--timeout=5s] [-- FLAGS...]"
               "   (harness)"
            << std::endl;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (ndr::version::VersionRequested(argc, argv)) {
    std::cout << ndr::version::VersionText("registrar-conformance");
    return 0;
  }
  gflags::SetUsageMessage(
      "registrar-conformance --registration-socket=SOCKET [flags]  or  registrar-conformance "
      "--registrar-binary=PATH [-- registrar flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, /*remove_flags=*/true);
  // What gflags left: the flags after "--", for the registrar in harness mode.
  const std::vector<std::string> extra(argv + 1, argv + argc);
  absl::StatusOr<absl::Duration> timeout = ndr::ParseGoDuration(FLAGS_timeout, "timeout");
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return Usage("--timeout must be a positive duration, e.g. 5s");
  }
  const bool harness = !FLAGS_registrar_binary.empty();
  if (harness == !FLAGS_registration_socket.empty()) {
    return Usage(
        "give either --registration-socket (a running registrar) or --registrar-binary "
        "(a binary to run), not both");
  }
  if (!harness && !extra.empty()) {
    return Usage(
        "unexpected arguments; flags for the registrar (after --) need --registrar-binary");
  }

  int passed = 0, failed = 0, skipped = 0;
  auto report = [&](const ndr::conformance::CheckResult& result) {
    std::cout << ndr::conformance::Format(result) << std::endl;
    (result.outcome == ndr::conformance::Outcome::kPass   ? passed
     : result.outcome == ndr::conformance::Outcome::kFail ? failed
                                                          : skipped)++;
  };
  const absl::Time start = absl::Now();
  if (harness) {
    ndr::conformance::HarnessConfig config;
    config.registrar_binary = FLAGS_registrar_binary;
    // `bazel run` starts this program in its runfiles; a relative path meant the user's directory.
    const char* cwd = getenv("BUILD_WORKING_DIRECTORY");
    if (config.registrar_binary[0] != '/' && cwd != nullptr) {
      config.registrar_binary = std::string(cwd) + "/" + config.registrar_binary;
    }
    config.extra_flags = extra;
    config.timeout = *timeout;
    ndr::conformance::RunHarness(config, report);
  } else {
    ndr::conformance::Config config;
    config.registration_socket = FLAGS_registration_socket;
    config.csi_endpoint = FLAGS_csi_endpoint;
    config.http_endpoint = FLAGS_http_endpoint;
    config.pid = FLAGS_pid;
    config.destructive = FLAGS_destructive;
    config.timeout = *timeout;
    for (const auto& result : ndr::conformance::RunChecks(config)) report(result);
  }
  std::cout << "summary: " << passed << " PASS, " << failed << " FAIL, " << skipped << " SKIP"
            << absl::StrFormat(" in %.1f s", absl::ToDoubleSeconds(absl::Now() - start))
            << std::endl;
  return failed == 0 ? 0 : 1;
}

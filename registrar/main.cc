// csi-node-driver-registrar: registers a CSI driver with kubelet. See registrar.h.
//
// Flags keep the Go node-driver-registrar's names and defaults, so that existing manifests work
// unchanged; gflags accepts --csi-address for csi_address.
#include <malloc.h>

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "api/go_flag_usage.h"
#include "gflags/gflags.h"
#include "logging/logging.h"
#include "program/parse_flags.h"
#include "program/shipped.h"
#include "program/termination_message.h"
#include "registrar/automaxprocs.h"
#include "registrar/options.h"
#include "registrar/registrar.h"
#include "registrar/version.h"
#include "version/version.h"

DEFINE_string(csi_address, "/run/csi/socket",
              "Path of the CSI driver's socket (or a unix:// URL) inside this container.");
DEFINE_string(kubelet_registration_path, "",
              "Path of the CSI driver's socket on the host, as kubelet dials it. Required.");
DEFINE_string(plugin_registration_path, "/registration",
              "Directory (kubelet's plugins_registry, mounted) where the registration socket "
              "<driver>-reg.sock is created.");
DEFINE_string(timeout, "1s", "Deadline of each GetPluginInfo attempt and of the health check.");
DEFINE_string(http_endpoint, "",
              "host:port of the HTTP server for /healthz and /metrics, e.g. :9809. Empty: off.");
DEFINE_int64(health_port, 0,
             "Deprecated: TCP port of the HTTP server (0: off). Use --http-endpoint.");
DEFINE_string(mode, "",
              "Deprecated. kubelet-registration-probe only exits 0, as in the Go registrar; any "
              "other value registers.");
DEFINE_string(connection_timeout, "0s",
              "Deprecated, and has no effect, as in the Go registrar: the CSI driver is waited "
              "for however long it takes.");
DEFINE_bool(enable_pprof, false, "Accepted for compatibility; has no effect.");
DEFINE_string(registration_retry_after, "3m",
              "Offer the registration socket again when kubelet has not confirmed it "
              "(NotifyRegistrationStatus) within this long, doubling up to 6m; 0 disables. Not a "
              "flag of the Go registrar.");
DEFINE_string(registration_backoff_cap, "2m2s",
              "After a refusal kubelet says goes away by itself, offer the registration socket "
              "again no sooner than kubelet's own per-socket back-off would retry it, whose "
              "longest wait this is (2m2s in kubelet v1.26 to v1.37); the first offer is spread "
              "over up to this long. Lower it only in tests: a fleet of registrars would retry "
              "faster than kubelet does. Not a flag of the Go registrar.");
DEFINE_bool(release_startup_pages, true,
            "Accepted so that manifests of releases up to 1.0 keep working; has no effect. (It "
            "released the program's start-up pages, which lowered the resident size but not the "
            "working set a cluster sees.)");
DEFINE_bool(automaxprocs, false,
            "Size gRPC's thread pools (and the registration server's pollers) by the container's "
            "CPU limit (cgroup cpu.max, or cpu.cfs_quota_us / cpu.cfs_period_us) instead of by "
            "the host's CPUs; the Go registrar sets GOMAXPROCS by it.");
DEFINE_string(termination_message_path, ndr::program::kDefaultTerminationMessagePath,
              "Where the reason for an exit (a flag error, kubelet's refusal, a crash) is written "
              "for Kubernetes to show as the container's last state: the container's "
              "terminationMessagePath. Written only if the file exists; empty: never. Not a flag "
              "of the Go registrar.");
DEFINE_bool(requires_publish_pod, false,
            "Tell kubelet (CSIRegistration.GetCSIDriverInfo) that the driver wants pod "
            "information in NodePublishVolume.");

// glibc's limit on the stacks it keeps of ended threads for reuse (nptl/nptl-stack.c, glibc 2.36:
// 40 MiB by default); what GLIBC_TUNABLES=glibc.pthread.stack_cache_size sets at start. Weak: a
// dynamically linked build (the sanitizers') cannot reach it, and leaves glibc's default.
extern "C" size_t __nptl_stack_cache_maxsize __attribute__((weak));

namespace {

// A deliberate exit: the reason to stderr and as the termination message; returns main's status.
int ExitWithReason(const std::string& reason) {
  std::cerr << "csi-node-driver-registrar: " << reason << std::endl;
  ndr::program::WriteTerminationMessage(reason);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ndr::program::SetUpShippedProgram(argv[0]);  // first: no lock-order tracking; crash reports
  // Ended threads' stacks go back to the kernel instead of into glibc's cache. gRPC's threads end
  // whenever it stops (kubelet hung up: registration_server.h), and every page they touched, the
  // 30 kB of static thread-local storage glibc zeroes for each included, stayed resident in the
  // cache: a quarter of an idle registrar's anonymous memory. A static program cannot set a
  // tunable for itself once started, so it sets what the tunable sets. Before any thread starts.
  if (&__nptl_stack_cache_maxsize != nullptr) __nptl_stack_cache_maxsize = 0;
  // One malloc arena for all threads. glibc gives each thread that allocates an arena of its own
  // (up to eight per core), and each keeps the pages it has touched; the registrar's threads
  // allocate little and seldom at the same moment, so they share the main one. Set before any
  // thread starts.
  mallopt(M_ARENA_MAX, 1);
  if (ndr::version::VersionRequested(argc, argv)) {
    std::cout << ndr::version::VersionText(
        "csi-node-driver-registrar",
        {absl::StrCat("matches: node-driver-registrar ", ndr::registrar::kGoRegistrarRelease,
                      " (its flags and behaviour)")});
    return 0;
  }
  if (ndr::HelpRequested(argc, argv)) {
    // As the Go registrar's flag package prints it (flags sorted), then the logging flags.
    std::cout << ndr::GoFlagUsage(
        absl::StrCat("Usage of ", argv[0], ":"),
        {{"", {"automaxprocs", "connection_timeout", "csi_address", "enable_pprof", "health_port",
               "http_endpoint", "kubelet_registration_path", "mode", "plugin_registration_path",
               "registration_backoff_cap", "registration_retry_after", "release_startup_pages",
               "requires_publish_pod", "termination_message_path", "timeout", "version"}},
         {"Logging flags (component-base):", ndr::LoggingFlagNames()}});
    return 0;
  }
  gflags::SetUsageMessage(
      "csi-node-driver-registrar --kubelet-registration-path=/var/lib/kubelet/plugins/<driver>/"
      "csi.sock [--csi-address=/csi/csi.sock] [flags]");
  // A gflags error goes to stderr and the termination message, and exits 1.
  ndr::program::ParseFlags(&argc, &argv, &FLAGS_termination_message_path);
  ndr::program::SetTerminationMessagePath(FLAGS_termination_message_path);
  absl::StatusOr<ndr::logging::Options> logging = ndr::logging::OptionsFromFlags();
  if (!logging.ok()) return ExitWithReason(std::string(logging.status().message()));
  ndr::logging::Init(*logging);
  if (argc > 1) {
    return ExitWithReason(
        absl::StrCat("unexpected argument \"", argv[1], "\"; all options are --flags"));
  }

  ndr::registrar::RawFlags flags;
  flags.csi_address = FLAGS_csi_address;
  flags.kubelet_registration_path = FLAGS_kubelet_registration_path;
  flags.plugin_registration_path = FLAGS_plugin_registration_path;
  flags.timeout = FLAGS_timeout;
  flags.http_endpoint = FLAGS_http_endpoint;
  flags.health_port = FLAGS_health_port;
  flags.mode = FLAGS_mode;
  flags.connection_timeout = FLAGS_connection_timeout;
  flags.enable_pprof = FLAGS_enable_pprof;
  flags.requires_publish_pod = FLAGS_requires_publish_pod;
  flags.registration_retry_after = FLAGS_registration_retry_after;
  flags.registration_backoff_cap = FLAGS_registration_backoff_cap;
  flags.automaxprocs = FLAGS_automaxprocs;
  absl::StatusOr<ndr::registrar::Options> options = ndr::registrar::ParseOptions(flags);
  if (!options.ok()) return ExitWithReason(std::string(options.status().message()));
  if (options->registration_probe_mode) {
    NDR_LOG(INFO) << "--mode=kubelet-registration-probe is deprecated and does nothing; exiting 0";
    return 0;
  }
  if (options->automaxprocs) {
    // Before the registrar starts gRPC, which sizes its pools at grpc_init(); first in the log, as
    // the Go registrar's "maxprocs: ..." line is.
    const ndr::registrar::ThreadSizing sizing = ndr::registrar::ApplyAutomaxprocs();
    options->max_pollers = std::min(options->max_pollers, sizing.cpus);
  }
  NDR_LOG(INFO) << "Version" << ndr::logging::Kv("version", ndr::version::Version())
                << ndr::logging::Kv("commit", ndr::version::Commit())
                << ndr::logging::Kv("matches", ndr::registrar::kGoRegistrarRelease);

  ndr::registrar::BlockTerminationSignals();
  ndr::registrar::Registrar registrar(*std::move(options));
  if (absl::Status status = registrar.Run(); !status.ok()) {
    NDR_LOG(ERROR) << status.message();
    ndr::program::WriteTerminationMessage(status.message());
    return 1;
  }
  return 0;
}

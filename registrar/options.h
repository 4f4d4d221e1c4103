// The registrar's command line, as plain data, and its validation.
//
// main.cc copies the gflags into RawFlags; ParseOptions turns them into Options or returns a
// one-line error naming the offending flag. Nothing here touches the filesystem, so a bad
// command line fails before anything is created on disk. The flag names and defaults are those of
// the Go node-driver-registrar, so existing manifests work unchanged.
#ifndef NDR_REGISTRAR_OPTIONS_H_
#define NDR_REGISTRAR_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "registrar/registration_lifecycle.h"
#include "registrar/registration_watchdog.h"

namespace ndr::registrar {

// The flag values exactly as given, before validation. Defaults are the Go registrar's.
struct RawFlags {
  std::string csi_address = "/run/csi/socket";
  std::string kubelet_registration_path;  // required
  std::string plugin_registration_path = "/registration";
  std::string timeout = "1s";
  std::string http_endpoint;  // empty: no HTTP server
  int64_t health_port = 0;    // deprecated; 0: off
  std::string mode;  // the Go registrar's default: empty, which registers
  std::string connection_timeout = "0s";
  bool enable_pprof = false;
  bool requires_publish_pod = false;
  std::string registration_retry_after = "3m";  // ours; the Go registrar has no such flag
  std::string registration_backoff_cap = "2m2s";  // ours
  bool automaxprocs = false;                    // Go's since v2.14
};

// Validated options; every field is safe to use as is.
struct Options {
  // Filesystem path of the CSI driver's socket (--csi-address, "unix://" stripped).
  std::string csi_socket_path;
  // Path kubelet uses to reach the driver; returned as PluginInfo.endpoint and
  // CSIDriverInfo.csi_endpoint (--kubelet-registration-path).
  std::string kubelet_registration_path;
  // Directory in which the registration socket is created (--plugin-registration-path).
  std::string plugin_registration_dir;
  // Deadline of each GetPluginInfo attempt and of the health check's GetInfo (--timeout).
  absl::Duration timeout = absl::Seconds(1);
  // --connection-timeout: accepted, with no effect, as in the Go registrar since v2.0; a non-zero
  // value earns the Go registrar's deprecation line. The registrar waits for its driver however
  // long it takes.
  absl::Duration connection_timeout = absl::ZeroDuration();
  // Whether to serve /healthz and /metrics over HTTP (--http-endpoint or --health-port), and
  // where: an empty host means all interfaces, port 0 a free port chosen at start.
  bool serve_http = false;
  std::string http_host;
  int http_port = 0;
  // Answer of CSIRegistration.GetCSIDriverInfo's options.requires_publish_pod.
  bool requires_publish_pod = false;
  // How long to wait for NotifyRegistrationStatus(registered=true) after offering the socket
  // before offering it again (doubling, up to 6 minutes); zero: never offer again
  // (--registration-retry-after; see registration_watchdog.h).
  absl::Duration registration_retry_after = kDefaultRegistrationRetryAfter;
  // The cap of kubelet's per-socket retry back-off, which the re-offers after a transient refusal
  // follow (--registration-backoff-cap; see registration_lifecycle.h). Shorter only in tests.
  absl::Duration registration_backoff_cap = kKubeletBackoffCap;
  // --mode=kubelet-registration-probe: the deprecated probe mode, which only exits 0.
  bool registration_probe_mode = false;
  // --mode as given, when it is neither empty, registration nor the probe mode: the Go registrar
  // registers for any such value, and so does this one, with a warning.
  std::string unknown_mode;
  // --enable-pprof was given; it has no effect here and only earns a warning.
  bool pprof_requested = false;
  // Size the thread pools by the container's CPU limit (--automaxprocs; automaxprocs.h). main
  // applies it before the registrar starts gRPC.
  bool automaxprocs = false;
  // Most threads the registration server's gRPC pollers may keep: 2, or fewer when
  // --automaxprocs found a limit below two CPUs. Set by main, not by a flag.
  int max_pollers = 2;
};

absl::StatusOr<Options> ParseOptions(const RawFlags& flags);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_OPTIONS_H_

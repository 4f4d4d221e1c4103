#include "registrar/options.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/endpoint.h"
#include "api/go_duration.h"

namespace ndr::registrar {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// Splits "host:port", "[v6]:port" or ":port" into host (without brackets) and port.
absl::Status ParseHostPort(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return FlagError("http-endpoint", absl::StrCat("\"", text,
                                                    "\" is not host:port (for example :9809)"));
  }
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int p = 0;
  // Port 0 picks a free port, as Go's net.Listen does; the registrar logs the one it got.
  if (!absl::SimpleAtoi(text.substr(colon + 1), &p) || p < 0 || p > 65535) {
    return FlagError("http-endpoint", absl::StrCat("\"", text,
                                                    "\" has no valid port (0 to 65535)"));
  }
  unsigned char buffer[sizeof(struct in6_addr)];
  if (!h.empty() && h != "localhost" && inet_pton(AF_INET, h.c_str(), buffer) != 1 &&
      inet_pton(AF_INET6, h.c_str(), buffer) != 1) {
    return FlagError("http-endpoint",
                     absl::StrCat("host \"", h,
                                  "\" is not a numeric IPv4 or IPv6 address (or localhost); "
                                  "leave it empty, as in :9809, to listen on all interfaces"));
  }
  *host = h;
  *port = p;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Options> ParseOptions(const RawFlags& flags) {
  Options options;
  // The Go registrar's default is "" (v2.17.0 cmd/csi-node-driver-registrar/main.go, the mode
  // flag), and it registers for any value but the probe (modeIsKubeletRegistrationProbe): a
  // manifest with another value runs there, so it runs here, with a warning (Registrar::Start).
  options.registration_probe_mode = flags.mode == "kubelet-registration-probe";
  if (!flags.mode.empty() && flags.mode != "registration" && !options.registration_probe_mode) {
    options.unknown_mode = flags.mode;
  }
  // The deprecated probe mode only exits 0; its manifests need not carry the other flags.
  if (options.registration_probe_mode) return options;

  absl::StatusOr<std::string> csi = UnixSocketPath(flags.csi_address, "--csi-address");
  if (!csi.ok()) return csi.status();
  options.csi_socket_path = *csi;

  if (flags.kubelet_registration_path.empty()) {
    return FlagError("kubelet-registration-path",
                     "is required: the path of the driver's socket as kubelet sees it, e.g. "
                     "/var/lib/kubelet/plugins/<driver>/csi.sock");
  }
  if (flags.kubelet_registration_path[0] != '/') {
    return FlagError("kubelet-registration-path",
                     absl::StrCat("\"", flags.kubelet_registration_path,
                                  "\" must be an absolute path: kubelet dials it as given"));
  }
  if (absl::Status s =
          CheckSocketPathLength(flags.kubelet_registration_path, "--kubelet-registration-path");
      !s.ok()) {
    return s;
  }
  options.kubelet_registration_path = flags.kubelet_registration_path;

  if (flags.plugin_registration_path.empty()) {
    return FlagError("plugin-registration-path", "must not be empty");
  }
  options.plugin_registration_dir = flags.plugin_registration_path;
  while (options.plugin_registration_dir.size() > 1 && options.plugin_registration_dir.back() == '/') {
    options.plugin_registration_dir.pop_back();
  }

  absl::StatusOr<absl::Duration> timeout = ParseGoDuration(flags.timeout, "timeout");
  if (!timeout.ok()) return timeout.status();
  if (*timeout <= absl::ZeroDuration()) return FlagError("timeout", "must be greater than 0");
  options.timeout = *timeout;

  absl::StatusOr<absl::Duration> connection_timeout =
      ParseGoDuration(flags.connection_timeout, "connection-timeout");
  if (!connection_timeout.ok()) return connection_timeout.status();
  options.connection_timeout = *connection_timeout;

  absl::StatusOr<absl::Duration> retry_after =
      ParseGoDuration(flags.registration_retry_after, "registration-retry-after");
  if (!retry_after.ok()) return retry_after.status();
  options.registration_retry_after = *retry_after;

  absl::StatusOr<absl::Duration> backoff_cap =
      ParseGoDuration(flags.registration_backoff_cap, "registration-backoff-cap");
  if (!backoff_cap.ok()) return backoff_cap.status();
  if (*backoff_cap < absl::Seconds(1)) {
    return FlagError("registration-backoff-cap",
                     "must be at least 1s; the default, 2m2s, is kubelet's own back-off cap");
  }
  options.registration_backoff_cap = *backoff_cap;

  if (!flags.http_endpoint.empty() && flags.health_port != 0) {
    return FlagError("health-port",
                     "may not be combined with --http-endpoint; use only --http-endpoint "
                     "(--health-port is deprecated)");
  }
  if (flags.health_port < 0 || flags.health_port > 65535) {
    return FlagError("health-port", absl::StrCat(flags.health_port,
                                                 " is not a port (0 to disable, 1 to 65535)"));
  }
  if (!flags.http_endpoint.empty()) {
    if (absl::Status s = ParseHostPort(flags.http_endpoint, &options.http_host, &options.http_port);
        !s.ok()) {
      return s;
    }
    options.serve_http = true;
  } else if (flags.health_port != 0) {
    options.http_port = static_cast<int>(flags.health_port);
    options.serve_http = true;
  }
  options.requires_publish_pod = flags.requires_publish_pod;
  options.pprof_requested = flags.enable_pprof;
  options.automaxprocs = flags.automaxprocs;
  return options;
}

}  // namespace ndr::registrar

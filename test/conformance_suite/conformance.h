// A conformance suite for node-driver-registrars: does a running registrar talk to kubelet
// correctly? It speaks only the wire APIs (kubelet's pluginregistration, the pod-info design's
// CSIRegistration, CSI, HTTP), so it checks any registrar, ours or not.
//
// Each check is traceable to kubelet's plugin-registration contract, the CSI spec or the pod-info
// design proposal; its name says which part.
// Checks that change the registrar's state (deleting its socket, SIGTERM) run only when asked.
#ifndef NDR_TEST_CONFORMANCE_CONFORMANCE_H_
#define NDR_TEST_CONFORMANCE_CONFORMANCE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace ndr::conformance {

struct Config {
  std::string registration_socket;  // required
  // The driver's CSI socket as seen from here; default: GetInfo's endpoint, if reachable.
  std::string csi_endpoint;
  std::string http_endpoint;  // host:port of /healthz; empty: skip the HTTP checks
  pid_t pid = 0;              // the registrar's process; 0: skip the signal check
  bool destructive = false;   // run the checks that delete the socket or stop the registrar
  // Deadline of each call, and how long to wait for the socket to come back after deleting it
  // (at least 10 s for the exit after SIGTERM).
  absl::Duration timeout = absl::Seconds(5);
};

enum class Outcome { kPass, kFail, kSkip };

struct CheckResult {
  std::string name;
  Outcome outcome;
  std::string reason;
};

std::vector<CheckResult> RunChecks(const Config& config);

// "PASS name: reason" and so on.
std::string Format(const CheckResult& result);

// GET `path` from host:port (an empty host is 127.0.0.1), waiting at most `timeout` to connect
// and to read: the status code, or -1 if nothing answered; the body into `body`.
int HttpGet(const std::string& host_port, const std::string& path, absl::Duration timeout,
            std::string* body);

// A channel to the unix socket at `path`, of its own (not shared with other channels to the same
// socket, so that a check never reuses a connection an earlier one made to a socket since
// replaced).
std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path);

}  // namespace ndr::conformance

#endif  // NDR_TEST_CONFORMANCE_CONFORMANCE_H_

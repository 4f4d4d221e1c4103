// The registrar's counters, rendered in the Prometheus text exposition format on /metrics.
// Thread-safe: counters are atomics.
#ifndef NDR_REGISTRAR_METRICS_H_
#define NDR_REGISTRAR_METRICS_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace ndr::registrar {

struct Metrics {
  // NotifyRegistrationStatus(plugin_registered=true) calls.
  std::atomic<uint64_t> registrations{0};
  // NotifyRegistrationStatus(plugin_registered=false) calls.
  std::atomic<uint64_t> refusals{0};
  // Refusals not taken as kubelet's verdict on the socket served (registration_watchdog.h), by
  // why: the socket was since replaced or withdrawn, or it was gone from its path.
  std::atomic<uint64_t> refusals_replaced_socket{0};
  std::atomic<uint64_t> refusals_socket_gone{0};
  // Refusals of the socket served, by what kubelet's reason says of a retry (kubelet_refusal.h):
  // transient ones are retried, the others end the registrar.
  std::atomic<uint64_t> refusals_transient{0};
  std::atomic<uint64_t> refusals_permanent{0};
  std::atomic<uint64_t> refusals_unknown{0};
  // 1 while kubelet's last verdict on the socket served was yes; 1 while a transient refusal is
  // retried (registration_lifecycle.h).
  std::atomic<int> registered{0};
  std::atomic<int> retrying{0};
  // Times the socket was offered again: kubelet had not confirmed it, or after a transient
  // refusal's wait.
  std::atomic<uint64_t> reoffers{0};
  // Registration sockets created again after being deleted or replaced.
  std::atomic<uint64_t> socket_recreations{0};
  // Times the driver's socket reappeared and its name was asked again.
  std::atomic<uint64_t> driver_reconnects{0};
  // Signs of a wrong path (path_hints.h), 1 while shown: kubelet has not called GetInfo on the
  // socket offered (--plugin-registration-path), or refused because it could not dial the driver
  // (--kubelet-registration-path).
  std::atomic<int> unwatched_registry{0};
  std::atomic<int> driver_unreachable{0};
  // /healthz answers by outcome.
  std::atomic<uint64_t> health_ok{0};
  std::atomic<uint64_t> health_socket_missing{0};
  std::atomic<uint64_t> health_failed{0};
};

// All counters, with HELP and TYPE lines, newline-terminated.
std::string RenderPrometheus(const Metrics& metrics);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_METRICS_H_

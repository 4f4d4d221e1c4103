#include "registrar/metrics.h"

#include "absl/strings/str_cat.h"

namespace ndr::registrar {
namespace {

void Counter(std::string* out, const char* name, const char* help, const char* labels,
             uint64_t value, bool header = true) {
  if (header) {
    absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n");
  }
  absl::StrAppend(out, name, labels, " ", value, "\n");
}

}  // namespace

std::string RenderPrometheus(const Metrics& m) {
  std::string out;
  Counter(&out, "csi_node_driver_registrar_registrations_total",
          "Registrations kubelet confirmed with NotifyRegistrationStatus.", "",
          m.registrations.load());
  Counter(&out, "csi_node_driver_registrar_registration_refusals_total",
          "Registrations kubelet refused with NotifyRegistrationStatus.", "", m.refusals.load());
  Counter(&out, "csi_node_driver_registrar_registration_refusals_ignored_total",
          "Refusals not taken as kubelet's verdict on the socket served, by reason.",
          "{reason=\"replaced_socket\"}", m.refusals_replaced_socket.load());
  Counter(&out, "csi_node_driver_registrar_registration_refusals_ignored_total", "",
          "{reason=\"socket_gone\"}", m.refusals_socket_gone.load(), false);
  Counter(&out, "csi_node_driver_registrar_registration_refusals_by_kind_total",
          "Refusals of the socket served, by what kubelet's reason says of a retry: transient "
          "ones (the API server or the driver not answering) are retried, permanent and unknown "
          "ones end the registrar.",
          "{kind=\"transient\"}", m.refusals_transient.load());
  Counter(&out, "csi_node_driver_registrar_registration_refusals_by_kind_total", "",
          "{kind=\"permanent\"}", m.refusals_permanent.load(), false);
  Counter(&out, "csi_node_driver_registrar_registration_refusals_by_kind_total", "",
          "{kind=\"unknown\"}", m.refusals_unknown.load(), false);
  absl::StrAppend(
      &out,
      "# HELP csi_node_driver_registrar_registered 1 while kubelet has confirmed the "
      "registration socket served now.\n# TYPE csi_node_driver_registrar_registered gauge\n",
      "csi_node_driver_registrar_registered ", m.registered.load(), "\n",
      "# HELP csi_node_driver_registrar_registration_retrying 1 while a transient refusal is "
      "being retried (the log and /healthz say why).\n"
      "# TYPE csi_node_driver_registrar_registration_retrying gauge\n",
      "csi_node_driver_registrar_registration_retrying ", m.retrying.load(), "\n");
  Counter(&out, "csi_node_driver_registrar_registration_reoffers_total",
          "Times the registration socket was offered again: kubelet had not confirmed it within "
          "--registration-retry-after (doubling up to 6 minutes), or after the wait that "
          "follows a transient refusal.",
          "", m.reoffers.load());
  Counter(&out, "csi_node_driver_registrar_socket_recreations_total",
          "Registration sockets created again after being deleted or replaced.", "",
          m.socket_recreations.load());
  Counter(&out, "csi_node_driver_registrar_driver_reconnects_total",
          "Times the CSI driver's socket reappeared and its name was asked again.", "",
          m.driver_reconnects.load());
  absl::StrAppend(
      &out,
      "# HELP csi_node_driver_registrar_path_problem 1 while a wrong path is suspected, by sign: "
      "kubelet never asked the registration socket for its info (--plugin-registration-path), "
      "or could not dial the driver (--kubelet-registration-path). The log says which values "
      "to use.\n# TYPE csi_node_driver_registrar_path_problem gauge\n",
      "csi_node_driver_registrar_path_problem{sign=\"unwatched_registry\"} ",
      m.unwatched_registry.load(), "\n",
      "csi_node_driver_registrar_path_problem{sign=\"driver_unreachable\"} ",
      m.driver_unreachable.load(), "\n");
  Counter(&out, "csi_node_driver_registrar_health_checks_total", "Answers of /healthz by result.",
          "{result=\"ok\"}", m.health_ok.load());
  Counter(&out, "csi_node_driver_registrar_health_checks_total", "",
          "{result=\"socket_missing\"}", m.health_socket_missing.load(), false);
  Counter(&out, "csi_node_driver_registrar_health_checks_total", "", "{result=\"failed\"}",
          m.health_failed.load(), false);
  return out;
}

}  // namespace ndr::registrar

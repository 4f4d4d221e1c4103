#include "kubeletclient/probe.h"

#include "google/protobuf/util/json_util.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/util/grpc_status.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

using json = nlohmann::ordered_json;

json ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(message, &text, options);
  return json::parse(text);
}

}  // namespace

ProbeOutcome Probe(const std::string& registration_socket, const HandshakeTimeouts& handshake,
                   const CsiHandlerOptions& csi_options, RegistrationVerdict verdict) {
  DriverRegistry registry;
  CsiHandler csi(&registry, csi_options);
  HandshakeResult result = RegisterSocket(registration_socket, {{kCsiPluginType, &csi}},
                                          handshake, /*calls=*/nullptr, verdict);
  json out = {{"registrationSocket", registration_socket}};
  out["pluginInfo"] = result.info.has_value() ? ToJson(*result.info) : json(nullptr);
  if (!result.endpoint.empty()) out["endpoint"] = result.endpoint;
  const CsiAttempt attempt = csi.LastAttempt(registration_socket);
  if (!csi_options.ask_csi_registration) {
    out["csiRegistration"] =
        "not asked, as by every kubelet release: pod information only through the CSIDriver's "
        "podInfoOnMount (--ask-csi-registration asks the registrar, as the pod-info design "
        "proposes)";
  }
  if (attempt.csi_driver_info.has_value()) {
    if (attempt.csi_driver_info->info.has_value()) {
      out["csiDriverInfo"] = ToJson(*attempt.csi_driver_info->info);
    } else {
      out["csiDriverInfo"] = nullptr;
      out["csiDriverInfoAbsent"] =
          attempt.csi_driver_info->status.error_code() == grpc::StatusCode::UNIMPLEMENTED
              ? "the registrar does not implement CSIRegistration (UNIMPLEMENTED): no pod "
                "information unless the CSIDriver object asks for it"
              : GoRpcError(attempt.csi_driver_info->status);
    }
  }
  if (attempt.node_get_info.has_value()) {
    if (attempt.node_get_info->ok()) {
      out["nodeGetInfo"] = ToJson(**attempt.node_get_info);
    } else {
      out["nodeGetInfo"] = nullptr;
      out["nodeGetInfoError"] = std::string(attempt.node_get_info->status().message());
    }
  }
  if (result.info.has_value()) {
    if (std::optional<DriverInfo> driver = registry.Get(result.info->name())) {
      out["highestSupportedVersion"] = driver->version;
    }
  }
  if (result.notified.has_value()) {
    out["notified"] = {{"pluginRegistered", result.notified->plugin_registered()},
                       {"error", result.notified->error()}};
  } else {
    out["notified"] = nullptr;
  }
  if (result.withheld.has_value()) {
    out["verdictNotSent"] = {
        {"pluginRegistered", result.withheld->plugin_registered()},
        {"error", result.withheld->error()},
        {"why", "probe is read-only: NotifyRegistrationStatus is the registering kubelet's to "
                "send (--notify sends it)"}};
  }
  ProbeOutcome outcome;
  outcome.registered = result.status.ok();
  out["registered"] = outcome.registered;
  if (!result.status.ok()) out["error"] = std::string(result.status.message());
  outcome.json = out.dump(2) + "\n";
  return outcome;
}

}  // namespace ndr::kubelet

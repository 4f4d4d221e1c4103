// registration/...: the driver registered as kubelet registers it (judge.h).
#include "kubeletclient/sanity/judge.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/pluginmanager/plugin_watcher.h"
#include "kubeletclient/sanity/own_registrar.h"

namespace ndr::kubelet::sanity {

bool Judge::Register() {
  const std::string check = "registration/handshake";
  const std::string kubelet =
      "pluginmanager operation_generator.go GenerateRegisterPluginFunc: GetInfo, "
      "csi_plugin.go ValidatePlugin and RegisterPlugin (NodeGetInfo); NotifyRegistrationStatus "
      "only to a registration socket the judge serves itself";
  std::vector<std::string> sockets;
  std::unique_ptr<OwnRegistrar> own;
  if (!options_.csi_address.empty()) {
    absl::StatusOr<std::unique_ptr<OwnRegistrar>> started =
        OwnRegistrar::Start(options_.csi_address, node_.timeout);
    if (!started.ok()) {
      Fail(check, kubelet, "the driver could not be offered for registration",
           {std::string(started.status().message())});
      return false;
    }
    own = *std::move(started);
    sockets.push_back(own->socket());
  } else if (!options_.registration_socket.empty()) {
    sockets.push_back(options_.registration_socket);
  } else {
    absl::StatusOr<std::unique_ptr<PluginWatcher>> scan = PluginWatcher::Start(
        options_.plugin_registry_dir, [&sockets](const std::string& s) { sockets.push_back(s); },
        [](const std::string&) {});
    if (!scan.ok()) {
      Fail(check, kubelet, std::string(scan.status().message()), {});
      return false;
    }
  }
  CsiHandler csi(&registry_, options_.csi);
  std::vector<std::string> errors, names;
  for (const std::string& socket : sockets) {
    // Read-only towards a registrar it did not start: the judge is not the kubelet that
    // registers the driver, and a registrar that is told it is registered counts it and stops
    // offering its socket. Its own registration socket gets the verdict, as kubelet sends it.
    HandshakeResult result = RegisterSocket(
        socket, {{kCsiPluginType, &csi}}, options_.handshake, /*calls=*/nullptr,
        own != nullptr ? RegistrationVerdict::kSend : RegistrationVerdict::kWithhold);
    if (result.status.ok() && result.info.has_value()) {
      names.push_back(result.info->name());
    } else {
      errors.push_back(absl::StrCat(socket, ": ", result.status.message()));
    }
  }
  if (names.size() != 1) {
    std::vector<std::string> details = errors;
    const std::string summary =
        names.empty()
            ? (sockets.empty()
                   ? absl::StrCat("no registration socket in ", options_.plugin_registry_dir)
                   : "no CSI driver registered")
            : absl::StrCat(names.size(), " CSI drivers registered (", absl::StrJoin(names, ", "),
                           "); give --registration-socket to judge one");
    Fail(check, kubelet, summary, details);
    return false;
  }
  std::optional<DriverInfo> info = registry_.Get(names[0]);
  driver_ = *info;
  report_.driver = driver_.name;
  std::string how = "verdict not sent";
  if (own != nullptr) {
    std::optional<registrar::Verdict> verdict = own->verdict();
    if (!verdict.has_value() || !verdict->registered) {
      Fail(check, kubelet, "the judge's own registration socket got no confirmation",
           {verdict.has_value() ? verdict->error : "no NotifyRegistrationStatus arrived"});
      return false;
    }
    how = "offered directly from the judge's registration socket, as our registrar offers it";
  }
  Pass(check, kubelet,
       absl::StrCat(
           "driver ", driver_.name, " registered (", how, "), CSI version ",
           driver_.version, ", endpoint ", driver_.endpoint,
           errors.empty() ? "" : absl::StrCat(" (", errors.size(), " other sockets failed)")));
  JudgeNodeInfo(driver_);
  return true;
}

void Judge::JudgeNodeInfo(const DriverInfo& info) {
  const std::string kubelet =
      "csi_plugin.go RegisterPlugin and nodeinfomanager.go InstallCSIDriver: the node ID goes to "
      "the node's annotation and CSINode, topology keys become node labels, the limit the "
      "CSINode's allocatable count";
  std::vector<std::string> problems;
  if (info.node_id.empty()) problems.push_back("node_id is empty");
  for (const auto& [key, value] : info.topology) {
    for (const std::string& m : IsQualifiedName(key)) {
      problems.push_back(absl::StrCat("topology key \"", key, "\" is not a valid label key: ", m));
    }
  }
  if (info.max_volumes_per_node < 0) {
    problems.push_back(
        absl::StrCat("max_volumes_per_node is negative (", info.max_volumes_per_node, ")"));
  }
  if (!problems.empty()) {
    Fail("registration/node-info", kubelet, "NodeGetInfo's answer cannot be used", problems);
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, value] : info.topology) keys.push_back(key);
  Pass("registration/node-info", kubelet,
       absl::StrCat("node ID \"", info.node_id, "\", topology keys [", absl::StrJoin(keys, ", "),
                    "], max volumes ", info.max_volumes_per_node));
}

void Judge::ReadCapabilities() {
  const std::string kubelet =
      "csi_client.go nodeSupportsStageUnstage, nodeSupportsNodeExpand, nodeSupportsVolumeStats: "
      "a NodeGetCapabilities before each decision";
  CsiNodeClient client(driver_.endpoint, node_.timeout);
  absl::StatusOr<bool> stage = client.NodeSupportsStageUnstage();
  absl::StatusOr<bool> expand = client.NodeSupportsNodeExpand();
  absl::StatusOr<bool> stats = client.NodeSupportsVolumeStats();
  for (const absl::StatusOr<bool>* answer : {&stage, &expand, &stats}) {
    if (!answer->ok()) {
      Fail("registration/capabilities", kubelet, "NodeGetCapabilities failed",
           {std::string(answer->status().message())});
      return;
    }
  }
  stages_ = *stage;
  expands_ = *expand;
  stats_ = *stats;
  std::vector<std::string> have;
  if (stages_) have.push_back("STAGE_UNSTAGE_VOLUME");
  if (expands_) have.push_back("EXPAND_VOLUME");
  if (stats_) have.push_back("GET_VOLUME_STATS");
  Pass("registration/capabilities", kubelet,
       have.empty() ? "none of STAGE_UNSTAGE_VOLUME, EXPAND_VOLUME, GET_VOLUME_STATS"
                    : absl::StrJoin(have, ", "));
}

void Judge::JudgeStorageHealth() {
  const std::string name = "registration/storage-health";
  const std::string kubelet =
      "volumehealth/manager.go probeStorageHealth, csi_client.go NodeGetStorageHealth and "
      "mapStorageBackendHealth (kubelet 1.37, with CSIVolumeHealth): what it maps goes to the "
      "CSINode's status.storageHealth";
  if (!node_.release.Has(ReleaseBehaviour::kVolumeHealthManager)) {
    Skip(name, kubelet,
         absl::StrCat("kubelet ", node_.release.Name(),
                      " does not call NodeGetStorageHealth (from 1.37, with CSIVolumeHealth)"));
    return;
  }
  if (Interrupted()) {
    Skip(name, kubelet, "interrupted");
    return;
  }
  if (!Selected(name)) return;
  CsiNodeClient client(driver_.endpoint, node_.timeout);
  absl::StatusOr<bool> supported = client.NodeSupportsStorageHealth();
  if (!supported.ok()) {
    Fail(name, kubelet, "NodeGetCapabilities failed", {std::string(supported.status().message())});
    return;
  }
  if (!*supported) {
    Skip(name, kubelet, "the driver lacks the GET_STORAGE_HEALTH node capability");
    return;
  }
  absl::StatusOr<std::vector<HealthCondition>> conditions = client.NodeGetStorageHealth();
  if (!conditions.ok() && !node_.feature_gates.csi_volume_health) {
    // A default kubelet 1.37 never asks: not a failure of the driver's here.
    Skip(name, kubelet,
         absl::StrCat("NodeGetStorageHealth's answer is not one kubelet can use (",
                      conditions.status().message(),
                      "), but kubelet asks only with CSIVolumeHealth on (alpha, off by default): "
                      "--feature-gates=CSIVolumeHealth=true judges it"));
    return;
  }
  if (!conditions.ok()) {
    Fail(name, kubelet, "NodeGetStorageHealth's answer is not one kubelet can use",
         {"request: NodeGetStorageHealth (no secrets, as kubelet sends it)",
          absl::StrCat("answer: ", conditions.status().message()),
          "kubelet needs OK with at most 16 conditions, each capability with an access type and "
          "a known access mode; otherwise it leaves the CSINode's storage health as it was"});
    return;
  }
  std::vector<std::string> described;
  for (const HealthCondition& c : *conditions) described.push_back(c.status + "/" + c.reason);
  Pass(name, kubelet,
       absl::StrCat("NodeGetStorageHealth: ",
                    described.empty() ? "no adverse condition" : absl::StrJoin(described, ", "),
                    node_.feature_gates.csi_volume_health
                        ? ""
                        : " (kubelet asks only with CSIVolumeHealth on, an alpha gate)"));
}

}  // namespace ndr::kubelet::sanity

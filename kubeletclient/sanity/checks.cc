#include "kubeletclient/sanity/checks.h"

#include "absl/strings/str_format.h"

namespace ndr::kubelet::sanity {

const std::vector<CheckInfo>& AllChecks() {
  using G = CheckGroup;
  static const std::vector<CheckInfo> checks = {
      {G::kRegistration, "handshake", "GenerateRegisterPluginFunc, csi_plugin.go RegisterPlugin",
       "GetInfo, the version check, NodeGetInfo: exactly one CSI driver would register (the "
       "verdict is not sent to the registrar: the judge is not the node's kubelet)"},
      {G::kRegistration, "node-info", "nodeinfomanager.go InstallCSIDriver",
       "a node ID, topology keys that are valid label keys, a limit that is not negative"},
      {G::kRegistration, "capabilities", "csi_client.go nodeSupports*",
       "NodeGetCapabilities answers (which decides what applies below)"},
      {G::kRegistration, "storage-health",
       "volumehealth/manager.go probeStorageHealth, csi_client.go NodeGetStorageHealth (1.37+)",
       "for a driver with GET_STORAGE_HEALTH: NodeGetStorageHealth answers what kubelet can map "
       "(at most 16 conditions, each capability with an access type and mode)"},
      {G::kVolume, "publish", "GenerateMountVolumeFunc, GenerateMapVolumeFunc",
       "pod A: NodeStageVolume (if the driver stages) and NodePublishVolume at kubelet's paths "
       "succeed"},
      {G::kVolume, "target", "csi_mounter.go SetUpAt, csi_block.go MapPodDevice",
       "the target is a directory (filesystem) or a device (block: a device node, a bind mount "
       "of one, a symbolic link to one)"},
      {G::kVolume, "tokens", "csi_mounter.go podServiceAccountTokenAttrs",
       "for a CSIDriver with tokenRequests: the publish carried a token per audience and was "
       "accepted"},
      {G::kVolume, "restart-replay", "reconciler.go reconstructVolumes",
       "the very same NodeStageVolume and NodePublishVolume again: OK, target unchanged"},
      {G::kVolume, "republish", "csi_plugin.go RequiresRemount",
       "for a CSIDriver with requiresRepublish: SetUp (or MapPodDevice) again, fresh tokens"},
      {G::kVolume, "second-pod", "desired_state_of_world.go",
       "pod B on the staged volume: NodePublishVolume only"},
      {G::kVolume, "read-only", "csi_mounter.go SetUpAt", "pod C with readOnly: true"},
      {G::kVolume, "stats", "csi_metrics.go GetMetrics",
       "NodeGetVolumeStats at kubelet's path: no negative number, used and available within "
       "capacity"},
      {G::kVolume, "volume-health",
       "volumehealth/manager.go probeVolumeHealth, csi_client.go NodeGetVolumeHealth (1.37+)",
       "for a driver with GET_VOLUME_HEALTH: NodeGetVolumeHealth with kubelet's staging and "
       "publish paths answers OK"},
      {G::kVolume, "expand", "GenerateExpandInUseVolumeFunc",
       "the PV grown to twice its size: NodeExpandVolume OK (or FAILED_PRECONDITION)"},
      {G::kVolume, "unpublish-twice", "csi_mounter.go TearDownAt",
       "pod B's NodeUnpublishVolume twice, before kubelet's own teardown"},
      {G::kVolume, "teardown",
       "GenerateUnmountVolumeFunc, GenerateUnmountDeviceFunc, GenerateUnmapVolumeFunc, "
       "GenerateUnmapDeviceFunc",
       "pods B, C, A torn down as kubelet does, NodeUnstageVolume after the last"},
      {G::kVolume, "unpublish-removed-target", "csi_mounter.go TearDownAt",
       "pod C's NodeUnpublishVolume again once kubelet removed the target: OK"},
      {G::kVolume, "unstage-repeated", "csi_attacher.go UnmountDevice",
       "the NodeUnstageVolume again: OK"},
      {G::kVolume, "clean", "removeMountDir, TearDownDevice",
       "no target, staging directory or volume file left, nothing mounted under --root-dir"},
      {G::kEphemeral, "publish", "csi_mounter.go SetUpAt, desired_state_of_world_populator.go",
       "an inline volume (kubelet's csi-<sha256> handle, no stage) or a generic ephemeral one "
       "(its claim controlled by the pod) published"},
      {G::kEphemeral, "target", "csi_mounter.go SetUpAt", "the target is a directory"},
      {G::kEphemeral, "restart-replay", "reconciler.go reconstructVolumes",
       "the very same calls again: OK, target unchanged"},
      {G::kEphemeral, "teardown", "GenerateUnmountVolumeFunc", "the pod torn down as kubelet does"},
      {G::kEphemeral, "unpublish-removed-target", "csi_mounter.go TearDownAt",
       "NodeUnpublishVolume again once kubelet removed the target: OK"},
      {G::kEphemeral, "clean", "removeMountDir", "nothing left, nothing mounted under --root-dir"},
      {G::kController, "capabilities", "(csi-sanity's, not kubelet's)",
       "without --volume-handle: GetPluginCapabilities and ControllerGetCapabilities say the "
       "driver creates volumes"},
      {G::kController, "create-volume", "the external-provisioner's",
       "without --volume-handle: CreateVolume; its volume_context becomes the PV's attributes"},
      {G::kController, "controller-publish", "the external-attacher's; kubelet's WaitForAttach",
       "when the CSIDriver wants attachments: ControllerPublishVolume to the node ID"},
      {G::kController, "controller-unpublish", "the external-attacher's",
       "what was attached is detached"},
      {G::kController, "delete-volume", "the external-provisioner's", "what was created is deleted"},
  };
  return checks;
}

std::vector<std::string> CheckNames(CheckGroup group) {
  std::vector<std::string> names;
  for (const CheckInfo& check : AllChecks()) {
    if (check.group == group) names.push_back(check.name);
  }
  return names;
}

void ListChecks(std::ostream& out) {
  out << "<mode> is filesystem or block (<mode>/<handle> with several --volume-handle); "
         "--only and --skip match these names.\n";
  for (const CheckInfo& check : AllChecks()) {
    std::string name, group;
    switch (check.group) {
      case CheckGroup::kRegistration:
        name = absl::StrFormat("registration/%s", check.name);
        group = "registration";
        break;
      case CheckGroup::kVolume:
        name = absl::StrFormat("<mode>/%s", check.name);
        group = "volume";
        break;
      case CheckGroup::kEphemeral:
        name = absl::StrFormat("{inline,generic-ephemeral}/%s", check.name);
        group = "ephemeral";
        break;
      case CheckGroup::kController:
        name = std::string(check.name) == "capabilities"
                   ? "controller/capabilities"
                   : absl::StrFormat("{<mode>,generic-ephemeral}/%s", check.name);
        group = "controller";
        break;
    }
    out << absl::StrFormat("%-50s %-12s %s (kubelet: %s)\n", name, group, check.does,
                           check.kubelet);
  }
}

}  // namespace ndr::kubelet::sanity

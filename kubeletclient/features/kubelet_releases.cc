#include "kubeletclient/features/kubelet_releases.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ndr::kubelet {
namespace {

// A gate's life: from release `since` on it is `state`, until the next step. A step with no
// state: the gate was removed in that release.
struct Step {
  int since;
  std::optional<GateAtRelease> state;
};

constexpr GateAtRelease kAlphaOff{GateStage::kAlpha, false, false};
constexpr GateAtRelease kBetaOff{GateStage::kBeta, false, false};
constexpr GateAtRelease kBetaOn{GateStage::kBeta, true, false};
constexpr GateAtRelease kGaLocked{GateStage::kGA, true, true};
constexpr GateAtRelease kGaOn{GateStage::kGA, true, false};

struct GateHistory {
  const char* name;
  std::vector<Step> steps;
};

// pkg/features/kube_features.go of v1.26.15, v1.27.16, v1.28.15, v1.29.6, v1.30.14, v1.31.14,
// v1.32.13, v1.33.13, v1.34.4, v1.35.4, v1.36.3 and v1.37.2 (docs/kubelet-versions.md).
const std::vector<GateHistory>& Histories() {
  static const auto* histories = new std::vector<GateHistory>{
      // Beta and on from 1.27, GA and locked in 1.29, gone in 1.31.
      {"ReadWriteOncePod", {{26, kAlphaOff}, {27, kBetaOn}, {29, kGaLocked}, {31, std::nullopt}}},
      {"CSINodeExpandSecret",
       {{26, kAlphaOff}, {27, kBetaOn}, {29, kGaLocked}, {31, std::nullopt}}},
      // Beta but off in 1.27 (kubernetes#117745), on from 1.28, GA and locked in 1.36.
      {"SELinuxMountReadWriteOncePod",
       {{26, kAlphaOff}, {27, kBetaOff}, {28, kBetaOn}, {36, kGaLocked}}},
      // Alpha and off in every release.
      {"CSIVolumeHealth", {{26, kAlphaOff}}},
      // Alpha 1.30, beta but off 1.33, GA and on (not locked) 1.37.
      {"SELinuxMount", {{30, kAlphaOff}, {33, kBetaOff}, {37, kGaOn}}},
      // Alpha 1.32, beta and on 1.33, GA and locked 1.36.
      {"SELinuxChangePolicy", {{32, kAlphaOff}, {33, kBetaOn}, {36, kGaLocked}}},
      // Alpha and off to 1.31, beta and on 1.32, GA and locked 1.34.
      {"RecoverVolumeExpansionFailure", {{26, kAlphaOff}, {32, kBetaOn}, {34, kGaLocked}}},
      // Alpha 1.33, beta but off 1.34, on 1.35, GA and locked 1.36 (v1.37.2's versioned spec).
      {"MutableCSINodeAllocatableCount",
       {{33, kAlphaOff}, {34, kBetaOff}, {35, kBetaOn}, {36, kGaLocked}}},
  };
  return *histories;
}

}  // namespace

absl::StatusOr<int> ParseKubeletRelease(absl::string_view text) {
  absl::string_view rest = text;
  absl::ConsumePrefix(&rest, "v");
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '.');
  int major = 0, minor = 0, patch = 0;
  const bool well_formed = (parts.size() == 2 || parts.size() == 3) &&
                           absl::SimpleAtoi(parts[0], &major) &&
                           absl::SimpleAtoi(parts[1], &minor) &&
                           (parts.size() == 2 || absl::SimpleAtoi(parts[2], &patch)) &&
                           major == 1 && patch >= 0;
  if (!well_formed || minor < kOldestKubeletMinor || minor > kNewestKubeletMinor) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a kubelet release kubeletclient knows: give 1.",
                     kOldestKubeletMinor, " to 1.", kNewestKubeletMinor,
                     ", such as 1.37 or v1.29.6"));
  }
  // Each minor is modelled as its newest patch read (docs/kubelet-versions.md); an older patch
  // may differ from it (1.36.0 removes the target directory of a volume reconstructed after a
  // restart when its publish fails for good; 1.31.0 to 1.33.5 take no recovery path with the gate
  // off), so only that one is accepted by number.
  constexpr int kNewestPatchRead[] = {15, 16, 15, 6, 14, 14, 13, 13, 4, 4, 3, 2};  // 1.26..1.37
  const int newest_patch = kNewestPatchRead[minor - kOldestKubeletMinor];
  if (parts.size() == 3 && patch != newest_patch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\": kubeletclient models 1.", minor, " as 1.", minor, ".", newest_patch,
        ", the newest patch read, and 1.", minor, ".", patch,
        " may differ from it (docs/kubelet-versions.md); give 1.", minor, " to act as 1.", minor,
        ".", newest_patch));
  }
  return minor;
}

std::optional<GateAtRelease> GateAt(absl::string_view gate, int minor) {
  for (const GateHistory& history : Histories()) {
    if (history.name != gate) continue;
    std::optional<GateAtRelease> state;
    for (const Step& step : history.steps) {
      if (step.since <= minor) state = step.state;
    }
    return state;
  }
  return std::nullopt;
}

FeatureGates DefaultFeatureGates(int minor) {
  std::vector<std::pair<std::string, bool>> items;
  for (const GateHistory& history : Histories()) {
    std::optional<GateAtRelease> state = GateAt(history.name, minor);
    // No gate: not yet (its behaviour is absent) or removed after GA (always present).
    const bool not_yet = minor < history.steps.front().since;
    items.emplace_back(history.name, state.has_value() ? state->default_on : !not_yet);
  }
  // Every history is a known gate, so this cannot fail.
  return *ApplyFeatureGateItems(items, FeatureGates());
}

absl::StatusOr<FeatureGates> ParseFeatureGatesAt(const std::string& value, int minor) {
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> items = ParseFeatureGateItems(value);
  if (!items.ok()) return items.status();
  for (const auto& [name, on] : *items) {
    const GateHistory* modelled = nullptr;
    for (const GateHistory& history : Histories()) {
      if (history.name == name) modelled = &history;
    }
    if (modelled == nullptr) continue;  // ApplyFeatureGateItems refuses it, naming the known ones
    std::optional<GateAtRelease> state = GateAt(name, minor);
    if (!state.has_value()) {
      const int since = modelled->steps.front().since;
      return absl::InvalidArgumentError(absl::StrCat(
          "unrecognized feature gate: ", name, " (kubelet 1.", minor,
          minor < since ? absl::StrCat(" does not have it yet: it came in 1.", since)
                        : std::string(" no longer has it: its behaviour is always on"),
          ")"));
    }
    if (state->locked && on != state->default_on) {
      return absl::InvalidArgumentError(absl::StrCat("cannot set feature gate ", name, " to ",
                                                     on ? "true" : "false",
                                                     ", feature is locked to ",
                                                     state->default_on ? "true" : "false"));
    }
  }
  return ApplyFeatureGateItems(*items, DefaultFeatureGates(minor));
}

const std::vector<ReleaseBehaviourInfo>& ReleaseBehaviours() {
  static const auto* behaviours = new std::vector<ReleaseBehaviourInfo>{
      {ReleaseBehaviour::kExpandUnsupportedIsNotSupportedError, "ExpandUnsupportedIsNotSupported",
       28, "pkg/volume/csi/expander.go NodeExpand",
       "a driver without EXPAND_VOLUME fails NodeExpand with an OperationNotSupported error "
       "(before: a plain error)"},
      {ReleaseBehaviour::kShortVersionRefusalTexts, "ShortVersionRefusalTexts", 29,
       "pkg/volume/csi/csi_plugin.go validateVersions; apimachinery util/version "
       "HighestSupportedVersion",
       "a driver's unusable CSI versions are refused with \"... reported: ...\" and \"highest "
       "supported version reported is ...\" (before: \"reported by this driver\", \"reported by "
       "driver\")"},
      {ReleaseBehaviour::kInfeasibleExpandErrors, "InfeasibleExpandErrors", 31,
       "pkg/volume/csi/expander.go nodeExpandWithClient, isInfeasibleError",
       "NodeExpandVolume's INVALID_ARGUMENT, OUT_OF_RANGE and NOT_FOUND are infeasible: worded "
       "\"failed to expand the volume <error>\" and, on the expansion-recovery path, the claim's "
       "resize status becomes NodeResizeInfeasible (before: \"failed to expand the volume : "
       "<error>\", retried)"},
      {ReleaseBehaviour::kFsGroupForReadWriteOncePod, "FsGroupForReadWriteOncePod", 32,
       "pkg/volume/csi/csi_util.go hasReadWriteOnce",
       "kubelet applies fsGroup itself to ReadWriteOncePod volumes too (before: ReadWriteOnce "
       "only)"},
      {ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers, "DeviceVolDataOnlyForStagingDrivers",
       34, "pkg/volume/csi/csi_attacher.go MountDevice, UnmountDevice",
       "MountDevice writes the device directory's vol_data.json only for a driver with "
       "STAGE_UNSTAGE_VOLUME, after its VOLUME_MOUNT_GROUP check; UnmountDevice skips a device "
       "directory without one (before: written for every driver, before the staging check)"},
      {ReleaseBehaviour::kTokensInSecretsField, "TokensInSecretsField", 35,
       "pkg/volume/csi/csi_mounter.go SetUpAt, podServiceAccountTokenAttrs",
       "with the CSIDriver's serviceAccountTokenInSecrets: true the service-account tokens go in "
       "NodePublishVolume's secrets, not its volume_context (before: the field is not read)"},
      {ReleaseBehaviour::kRegistrationRetriedAfterValidation,
       "RegistrationRetriedAfterValidation", 36,
       "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go "
       "GenerateRegisterPluginFunc, notifyPlugin (1.36.0)",
       "a registration that fails after validation (NodeGetInfo, the CSINode update, or telling "
       "the plugin) is retried with exponential backoff, and a plugin that cannot be told it is "
       "registered is deregistered (before: it stays in kubelet's actual state and is not "
       "retried until its socket is created again)"},
      {ReleaseBehaviour::kNoVolumeConditionFromStats, "NoVolumeConditionFromStats", 37,
       "pkg/volume/csi/csi_client.go NodeGetVolumeStats, csi_metrics.go GetMetrics",
       "NodeGetVolumeStats' volume_condition is not read and VOLUME_CONDITION not asked, whatever "
       "CSIVolumeHealth says (the gate now drives the health RPCs: VolumeHealthManager)"},
      {ReleaseBehaviour::kVolumeHealthManager, "VolumeHealthManager", 37,
       "pkg/kubelet/volumemanager/volumehealth/manager.go probeVolumeHealth, probeStorageHealth; "
       "pkg/volume/csi/csi_client.go NodeGetVolumeHealth, NodeGetStorageHealth",
       "with CSIVolumeHealth (alpha, off), each mounted PersistentVolume's NodeGetVolumeHealth "
       "(GET_VOLUME_HEALTH) and each driver's NodeGetStorageHealth (GET_STORAGE_HEALTH), on the "
       "volume stats period, into the pod's status.volumeHealth and the CSINode's "
       "status.storageHealth"},
  };
  return *behaviours;
}

bool KubeletRelease::Has(ReleaseBehaviour behaviour) const {
  for (const ReleaseBehaviourInfo& info : ReleaseBehaviours()) {
    if (info.behaviour == behaviour) return minor >= info.since;
  }
  return false;
}

std::string KubeletRelease::Name() const { return absl::StrCat("1.", minor); }

}  // namespace ndr::kubelet

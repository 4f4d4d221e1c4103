// kubelet releases v1.26 to v1.37 and their feature gates, for `--kubelet-version`
// (docs/kubelet-versions.md has every behaviour by release, with sources).
//
// For each gate kubeletclient models (kube_features.h), its stage, default and lock in each
// release, as that release's pkg/features/kube_features.go declares it (from v1.32 the versioned
// specs), and kubelet's --feature-gates rules at that release (k8s.io/component-base/featuregate
// feature_gate.go Set / unsafeSetFromMap, v0.26.15 and v0.37.2): a gate the release does not have
// is "unrecognized feature gate: X", a locked gate set to the other value "cannot set feature
// gate X to V, feature is locked to D". And the behaviours that changed between releases without
// a gate (ReleaseBehaviour), each with the release that brought it and the kubelet function it
// follows. A release is named by its minor and means that minor's newest patch read
// (docs/kubelet-versions.md lists them).
//
// Plain data and pure functions; thread-compatible.
#ifndef NDR_KUBELETCLIENT_FEATURES_KUBELET_RELEASES_H_
#define NDR_KUBELETCLIENT_FEATURES_KUBELET_RELEASES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kubeletclient/features/kube_features.h"

namespace ndr::kubelet {

inline constexpr int kOldestKubeletMinor = 26;
inline constexpr int kNewestKubeletMinor = 37;

// "1.29", "v1.29", "1.29.6" or "v1.29.6" as its minor (29), for releases 1.26 to 1.37.
absl::StatusOr<int> ParseKubeletRelease(absl::string_view text);

enum class GateStage { kAlpha, kBeta, kGA };

struct GateAtRelease {
  GateStage stage;
  bool default_on;
  bool locked;  // LockToDefault
};

// `gate` (a kubeletclient gate, KnownFeatureGates()) at release 1.`minor`; nullopt when that
// release has no such gate (not yet, or removed after GA: its behaviour is then unconditional).
std::optional<GateAtRelease> GateAt(absl::string_view gate, int minor);

// The gates as kubelet 1.`minor` has them by default; a gate the release no longer has is on,
// as its behaviour is.
FeatureGates DefaultFeatureGates(int minor);

// `value` ("Name=bool,...") applied to DefaultFeatureGates(minor) with kubelet 1.`minor`'s
// refusals (above); a gate kubeletclient does not model is refused as ParseFeatureGates does.
absl::StatusOr<FeatureGates> ParseFeatureGatesAt(const std::string& value, int minor);

// What a node plugin can observe of kubelet that changed between v1.26 and v1.37 without a
// feature gate of its own (the gated ones are FeatureGates, with each release's defaults above).
enum class ReleaseBehaviour {
  kShortVersionRefusalTexts,
  kInfeasibleExpandErrors,
  kExpandUnsupportedIsNotSupportedError,
  kFsGroupForReadWriteOncePod,
  kDeviceVolDataOnlyForStagingDrivers,
  kTokensInSecretsField,
  kNoVolumeConditionFromStats,
  kVolumeHealthManager,
  kRegistrationRetriedAfterValidation,
};

struct ReleaseBehaviourInfo {
  ReleaseBehaviour behaviour;
  const char* name;    // for reports and --help
  int since;           // the first minor that does it
  const char* source;  // the kubelet file and function it follows
  const char* what;    // what the driver sees from then on
};

// Every ReleaseBehaviour, oldest first.
const std::vector<ReleaseBehaviourInfo>& ReleaseBehaviours();

// The kubelet release kubeletclient acts as (--kubelet-version). The struct's default is v1.26,
// the release the golden tests were written from; the commands default to the newest.
struct KubeletRelease {
  int minor = kOldestKubeletMinor;

  // Whether this release does `behaviour`.
  bool Has(ReleaseBehaviour behaviour) const;
  std::string Name() const;  // "1.37"
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_FEATURES_KUBELET_RELEASES_H_

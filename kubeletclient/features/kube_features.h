// The feature gates of kubelet (pkg/features/kube_features.go) that change what its CSI volume
// plugin sends or writes, set as kubelet's --feature-gates flag sets them
// (k8s.io/component-base/featuregate: "Name=bool,Name=bool").
//
// The struct's defaults are the baseline of the v1.26 golden tests: v1.26's sequence with
// ReadWriteOncePod, SELinuxMountReadWriteOncePod and CSINodeExpandSecret on (their defaults from
// v1.27/v1.28 on) and the gates of later releases off. What a given release has by default, and
// which of its gates are locked, is kubelet_releases.h (DefaultFeatureGates); the commands start
// from the --kubelet-version's.
//
// Plain data and pure functions; thread-compatible.
#ifndef NDR_KUBELETCLIENT_FEATURES_KUBE_FEATURES_H_
#define NDR_KUBELETCLIENT_FEATURES_KUBE_FEATURES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

struct FeatureGates {
  // The ReadWriteOncePod access mode: kubelet refuses to mount such a volume for a second pod
  // on the node, and it is a condition of SELinux mounts.
  bool read_write_once_pod = true;
  // Mount ReadWriteOncePod volumes with -o context=<the pod's SELinux label> on SELinux hosts.
  bool selinux_mount_read_write_once_pod = true;
  // Ask drivers with VOLUME_CONDITION for the volume's health.
  bool csi_volume_health = false;
  // Send the PV's nodeExpandSecretRef secret with NodeExpandVolume (csi/expander.go).
  bool csi_node_expand_secret = true;
  // (v1.30 alpha, v1.33 beta off, v1.37 GA on) With SELinuxMountReadWriteOncePod: every
  // PersistentVolume may be mounted with -o context, not only ReadWriteOncePod ones
  // (pkg/volume/util/selinux.go VolumeSupportsSELinuxMount).
  bool selinux_mount = false;
  // (v1.32 alpha, v1.33 beta on, v1.36 GA) A pod whose securityContext.seLinuxChangePolicy is
  // Recursive gets no -o context (selinux.go GetMountSELinuxLabel).
  bool selinux_change_policy = false;
  // (alpha to v1.31, v1.32 beta on, v1.34 GA) Node expansion follows the claim's
  // status.allocatedResources and allocatedResourceStatuses (operation_generator.go
  // checkForRecoveryFromExpansion, node_expander.go).
  bool recover_volume_expansion_failure = false;
  // (v1.33 alpha, v1.34 beta off, v1.35 beta on, v1.36 GA) Ask a registered driver's NodeGetInfo
  // again every CSIDriver nodeAllocatableUpdatePeriodSeconds and update its CSINode entry
  // (pkg/volume/csi/csi_node_updater.go runPeriodicUpdate, csi_plugin.go updateCSIDriver).
  bool mutable_csi_node_allocatable_count = false;
};

// The gates kubeletclient knows, by their kubelet names.
std::vector<std::string> KnownFeatureGates();

// Applies `value` ("Name=bool,Name=bool", strconv.ParseBool's spellings) to `defaults`, with
// component-base's error texts: "missing bool value for X", "invalid value of X=Y, err: ...",
// "unrecognized feature gate: X" (which also lists the gates kubeletclient knows).
absl::StatusOr<FeatureGates> ParseFeatureGates(const std::string& value,
                                               FeatureGates defaults = {});

// The two halves of ParseFeatureGates: the items of `value`, checked for form only, and their
// application to `gates` (unknown names refused).
absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateItems(
    const std::string& value);
absl::StatusOr<FeatureGates> ApplyFeatureGateItems(
    const std::vector<std::pair<std::string, bool>>& items, FeatureGates gates);

// "Name=bool,..." for every known gate, in KnownFeatureGates() order.
std::string FeatureGatesString(const FeatureGates& gates);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_FEATURES_KUBE_FEATURES_H_

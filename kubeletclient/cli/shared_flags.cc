#include "kubeletclient/cli/shared_flags.h"

#include <limits.h>
#include <unistd.h>

#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/go_duration.h"
#include "hostutil/mount.h"
#include "kubeletclient/features/kube_features.h"
#include "kubeletclient/volumeutil/selinux.h"

DEFINE_string(plugin_registry_dir, "/var/lib/kubelet/plugins_registry",
              "Directory where plugins put their registration sockets (watched recursively).");
DEFINE_string(node_name, "", "The node's name (default: this host's name).");
DEFINE_string(registration_socket, "",
              "The registration socket to probe (probe: required), or whose driver to judge "
              "(sanity).");
DEFINE_string(pod, "", "The Pod (YAML or JSON). Required.");
DEFINE_string(objects, "",
              "Files or directories, comma-separated, with the PersistentVolumeClaims, "
              "PersistentVolumes, CSIDrivers, VolumeAttachments and Secrets the pod's volumes "
              "need (sanity: also StorageClasses; watch: the CSIDrivers, for their "
              "nodeAllocatableUpdatePeriodSeconds).");
DEFINE_string(root_dir, "/var/lib/kubelet", "Kubelet's root directory.");
DEFINE_string(allowed_inline_drivers, "",
              "Drivers whose inline (ephemeral) volumes this node allows, comma-separated; empty "
              "allows none.");
DEFINE_string(kubelet_version, "1.37",
              "The kubelet release to act as, 1.26 to 1.37 (\"1.29\", \"v1.29.6\"): its "
              "default feature gates and what its CSI volume plugin sends and writes "
              "(docs/kubelet-versions.md). sanity takes several, comma-separated, and judges "
              "the driver against each.");
DEFINE_string(feature_gates, "",
              "Kubelet's feature gates that change what is sent, Name=bool,... (ReadWriteOncePod, "
              "SELinuxMountReadWriteOncePod, SELinuxMount, SELinuxChangePolicy, CSIVolumeHealth, "
              "CSINodeExpandSecret, RecoverVolumeExpansionFailure, MutableCSINodeAllocatableCount), "
              "over the --kubelet-version's "
              "defaults; a gate the release lacks or has locked is refused as kubelet refuses "
              "it.");
DEFINE_string(host_selinux, "auto",
              "Whether this node has SELinux, for SELinux mount labels: true, false, or auto "
              "(what this machine says).");
DEFINE_string(block_host_ops, "auto",
              "The bind mounts and loop devices kubelet makes for raw block volumes: auto (made "
              "when running as root on the host, as kubelet runs; skipped otherwise, and the "
              "report says so) or skip (never made).");
DEFINE_string(service_account_key_file, "",
              "PEM private key (RSA, or EC on P-256, P-384 or P-521) that signs the "
              "service-account tokens of CSIDrivers with tokenRequests, as the API server's "
              "--service-account-signing-key-file does. Without it such volumes are refused.");
DEFINE_string(service_account_issuer, "https://kubernetes.default.svc.cluster.local",
              "The tokens' issuer (iss), as the API server's --service-account-issuer; also their "
              "audience when a tokenRequest names none.");
DEFINE_string(get_info_timeout, "1s",
              "Deadline of GetInfo (kubelet: 1s) and of GetCSIDriverInfo, the other call on the "
              "registration socket.");
DEFINE_string(notify_timeout, "5s", "Deadline of NotifyRegistrationStatus (kubelet: 5s).");
DEFINE_string(node_get_info_timeout, "2m", "Deadline of the driver's NodeGetInfo (kubelet: 2m).");
DEFINE_bool(ask_csi_registration, false,
            "Also ask the registrar's CSIRegistration.GetCSIDriverInfo whether the driver wants "
            "pod information, as the \"Pod in CSI NodePublish request\" design proposes. No "
            "kubelet release does: without it, pod information comes from the CSIDriver's "
            "podInfoOnMount alone, as on a real node.");

namespace ndr::kubelet::cli {

std::vector<std::string> WithHandshakeFlags(std::vector<std::string> flags) {
  for (const char* name : {"kubelet_version", "get_info_timeout", "notify_timeout",
                           "node_get_info_timeout", "ask_csi_registration"}) {
    flags.emplace_back(name);
  }
  return flags;
}

absl::StatusOr<Handshake> HandshakeFromFlags(absl::string_view command, Releases releases) {
  Handshake handshake;
  for (auto [flag, value, target] :
       {std::tuple{"get-info-timeout", &FLAGS_get_info_timeout, &handshake.timeouts.get_info},
        std::tuple{"notify-timeout", &FLAGS_notify_timeout, &handshake.timeouts.notify},
        std::tuple{"node-get-info-timeout", &FLAGS_node_get_info_timeout,
                   &handshake.csi.node_get_info_timeout}}) {
    absl::StatusOr<absl::Duration> d = ParseGoDuration(*value, flag);
    if (!d.ok()) return d.status();
    if (*d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": must be positive"));
    }
    *target = *d;
  }
  handshake.csi.csi_registration_timeout = handshake.timeouts.get_info;
  handshake.csi.ask_csi_registration = FLAGS_ask_csi_registration;
  for (absl::string_view item :
       absl::StrSplit(FLAGS_kubelet_version, ',', absl::SkipWhitespace())) {
    absl::StatusOr<int> minor = ParseKubeletRelease(item);
    if (!minor.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kubelet-version: ", minor.status().message()));
    }
    KubeletRelease release;
    release.minor = *minor;
    for (const KubeletRelease& seen : handshake.releases) {
      if (seen.minor == release.minor) {
        return absl::InvalidArgumentError(
            absl::StrCat("--kubelet-version: ", release.Name(), " is given twice"));
      }
    }
    handshake.releases.push_back(release);
  }
  if (handshake.releases.empty()) {
    return absl::InvalidArgumentError("--kubelet-version: name a release, 1.26 to 1.37");
  }
  if (handshake.releases.size() > 1 && releases == Releases::kOne) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kubelet-version: ", command,
        " acts as one kubelet release; only sanity takes a list (got ", FLAGS_kubelet_version,
        ")"));
  }
  handshake.csi.release = handshake.releases.front();
  return handshake;
}

absl::StatusOr<PublishCommand> PublishCommandFromFlags(const Handshake& handshake) {
  const std::vector<KubeletRelease>& releases = handshake.releases;
  PublishCommand publish;
  publish.pod_file = FLAGS_pod;
  publish.object_paths = absl::StrSplit(FLAGS_objects, ',', absl::SkipWhitespace());
  publish.plugin_registry_dir = FLAGS_plugin_registry_dir;
  publish.node.root_dir = FLAGS_root_dir;
  publish.node.node_name = NodeNameFromFlags();
  for (absl::string_view d :
       absl::StrSplit(FLAGS_allowed_inline_drivers, ',', absl::SkipWhitespace())) {
    publish.node.allowed_inline_drivers.emplace(d);
  }
  // Each release's gates are checked now, so that a refused gate stops sanity before it runs.
  for (const KubeletRelease& release : releases) {
    absl::StatusOr<FeatureGates> gates = ParseFeatureGatesAt(FLAGS_feature_gates, release.minor);
    if (!gates.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--feature-gates: ", gates.status().message(),
                       releases.size() > 1 ? " (at kubelet " + release.Name() + ")" : ""));
    }
    if (gates->recover_volume_expansion_failure && release.minor < 31) {
      // 1.26 to 1.30's alpha recovery path marks the claim otherwise (resizeStatus,
      // NodeResizeFailed); kubeletclient models 1.31's and later.
      return absl::InvalidArgumentError(absl::StrCat(
          "--feature-gates: RecoverVolumeExpansionFailure=true at kubelet ", release.Name(),
          ": kubeletclient models the expansion-recovery path of kubelet 1.31 and later only "
          "(1.", release.minor, "'s alpha one marks the claim differently); give "
          "--kubelet-version=1.31 or later, or leave the gate off"));
    }
    if (release.minor == releases.front().minor) publish.node.feature_gates = *gates;
  }
  publish.node.release = releases.front();
  absl::StatusOr<SeLinuxHost> selinux = ResolveHostSeLinux(FLAGS_host_selinux);
  if (!selinux.ok()) return selinux.status();
  publish.node.selinux = *selinux;
  if (FLAGS_block_host_ops == "auto") {
    publish.node.change_host = hostutil::CanChangeHost(&publish.node.host_skip_reason);
  } else if (FLAGS_block_host_ops == "skip") {
    publish.node.host_skip_reason = "--block-host-ops=skip";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--block-host-ops: \"", FLAGS_block_host_ops, "\" is not auto or skip"));
  }
  publish.handshake = handshake.timeouts;
  publish.csi = handshake.csi;
  publish.service_account_key_file = FLAGS_service_account_key_file;
  publish.service_account_issuer = FLAGS_service_account_issuer;
  if (publish.service_account_issuer.empty()) {
    return absl::InvalidArgumentError("--service-account-issuer: must not be empty");
  }
  return publish;
}

std::string NodeNameFromFlags() {
  if (!FLAGS_node_name.empty()) return FLAGS_node_name;
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

}  // namespace ndr::kubelet::cli

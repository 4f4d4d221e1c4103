// SELinux mount labels, as kubelet v1.26 derives them (pkg/volume/util/selinux.go, and the label
// library it calls, github.com/opencontainers/selinux/go-selinux/label InitLabels).
//
// A volume that is mounted with -o context="<label>" needs no relabelling by the container
// runtime. kubelet does that only on SELinux hosts, for ReadWriteOncePod volumes of drivers
// whose CSIDriver object says seLinuxMount: true; the label is the container's file label: the
// host policy's container file context with the user and the level of the container's
// seLinuxOptions (its role and type do not carry over to files). A container that gives no level
// gets a random MCS level ("s0:cA,cB"), as go-selinux allocates one.
//
// Whether this host has SELinux is `--host-selinux`: true or false, so that a driver author on any
// machine can see what an SELinux node sends, or auto: what the machine says (go-selinux
// GetEnabled: selinuxfs mounted and a process label other than "kernel"; the file context from
// the policy's lxc_contexts).
//
// Pure functions but for ResolveHostSeLinux (reads the host) and the random level; thread-safe.
#ifndef NDR_KUBELETCLIENT_VOLUMEUTIL_SELINUX_H_
#define NDR_KUBELETCLIENT_VOLUMEUTIL_SELINUX_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeletclient/features/kube_features.h"
#include "kubeletclient/objects/k8s_types.h"

namespace ndr::kubelet {

// What the node's SELinux is, as kubelet's volume manager sees it.
struct SeLinuxHost {
  bool enabled = false;
  std::string source;  // how that was decided, for the report: "--host-selinux=true", ...
  // The policy's container file context (lxc_contexts' file entry; Fedora's targeted policy's
  // when it cannot be read).
  std::string file_context = "system_u:object_r:container_file_t:s0";
};

// --host-selinux: "true", "false" or "auto"; anything else is an error naming the flag.
absl::StatusOr<SeLinuxHost> ResolveHostSeLinux(const std::string& mode);

// translator.SELinuxOptionsToFileLabel: "" for no options or options with no part set; else the
// host's file context with the options' user and level (a random level when none is given).
std::string SeLinuxOptionsToFileLabel(const std::optional<SeLinuxOptions>& options,
                                      const SeLinuxHost& host);

// VolumeSupportsSELinuxMount: SELinuxMountReadWriteOncePod on (and ReadWriteOncePod, before
// v1.29 made it GA), a PV, and either SELinuxMount on (v1.30+; on by default from v1.37) or the
// PV's only access mode ReadWriteOncePod (pkg/volume/util/selinux.go, v1.26.15 and v1.37.2).
bool VolumeSupportsSeLinuxMount(const FeatureGates& gates, bool persistent_volume,
                                const std::vector<std::string>& access_modes);

// AddSELinuxMountOption: `options` with context="<label>" (Go's %q) appended.
std::vector<std::string> AddSeLinuxMountOption(std::vector<std::string> options,
                                               const std::string& label);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_VOLUMEUTIL_SELINUX_H_

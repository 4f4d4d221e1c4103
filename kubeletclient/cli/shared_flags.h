// The flags several kubeletclient commands read, and what they make of them: the registration
// handshake's (--kubelet-version, the deadlines, --ask-csi-registration), which every command
// but jwks takes, and the node's and the pod's, which the volume commands (publish, unpublish,
// republish, expand, stats) and sanity take (--pod, --objects, --root-dir, --feature-gates, ...).
// Every error names its flag, as the user typed it.
//
// Reads gflags' globals: call after gflags::ParseCommandLineFlags, from main's thread.
#ifndef NDR_KUBELETCLIENT_CLI_SHARED_FLAGS_H_
#define NDR_KUBELETCLIENT_CLI_SHARED_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gflags/gflags.h"
#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/features/kubelet_releases.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/volume_command.h"

// Read by the commands themselves; the others only through the functions below.
DECLARE_string(pod);                       // the volume commands: required
DECLARE_string(plugin_registry_dir);       // watch
DECLARE_string(registration_socket);       // probe, sanity
DECLARE_string(feature_gates);             // sanity, once per release
DECLARE_string(service_account_key_file);  // jwks

namespace ndr::kubelet::cli {

// `flags` followed by the handshake flags, for Command::flags of a command that makes a
// registration handshake.
std::vector<std::string> WithHandshakeFlags(std::vector<std::string> flags);

// The registration handshake as the flags ask for it.
struct Handshake {
  HandshakeTimeouts timeouts;  // --get-info-timeout, --notify-timeout
  // --node-get-info-timeout, --ask-csi-registration (GetCSIDriverInfo's deadline is
  // --get-info-timeout); its release is the first of `releases`.
  CsiHandlerOptions csi;
  std::vector<KubeletRelease> releases;  // --kubelet-version, in the order given
};

// How many kubelet releases --kubelet-version may name.
enum class Releases {
  kOne,      // every command but sanity: it acts as one kubelet
  kSeveral,  // sanity: judges the driver against each in turn
};

// The deadlines (each positive), then --kubelet-version: releases kubeletclient knows, none
// twice, and more than one only with Releases::kSeveral (refused naming `command` otherwise).
absl::StatusOr<Handshake> HandshakeFromFlags(absl::string_view command,
                                             Releases releases = Releases::kOne);

// The volume commands' and sanity's node and inputs, with `handshake`: --pod (not required
// here: sanity makes up its pods), --objects, --plugin-registry-dir, --root-dir, --node-name,
// --allowed-inline-drivers, --feature-gates (checked at every release of `handshake`; the
// node gets the first's), --host-selinux, --block-host-ops and the service-account key and
// issuer.
absl::StatusOr<PublishCommand> PublishCommandFromFlags(const Handshake& handshake);

// --node-name, or this host's name.
std::string NodeNameFromFlags();

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_SHARED_FLAGS_H_

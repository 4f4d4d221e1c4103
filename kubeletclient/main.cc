// kubeletclient: the kubelet's side of plugin registration.
//
//   kubeletclient watch --plugin-registry-dir=D --node-status-file=F [--node-name=N]
//   kubeletclient probe --registration-socket=S
//   kubeletclient publish --pod=FILE [--objects=FILE_OR_DIR[,...]] --plugin-registry-dir=D
//       --root-dir=R [--node-name=N] [--allowed-inline-drivers=a,b]
//   kubeletclient unpublish --pod=FILE --root-dir=R --plugin-registry-dir=D
#include <limits.h>
#include <unistd.h>

#include <iostream>
#include <string>

#include "api/go_duration.h"
#include "gflags/gflags.h"
#include "logging/logging.h"
#include "absl/strings/str_split.h"
#include "hostutil/mount.h"
#include "kubeletclient/probe.h"
#include "kubeletclient/publish.h"
#include "kubeletclient/watch.h"

DEFINE_string(plugin_registry_dir, "/var/lib/kubelet/plugins_registry",
              "Directory where plugins put their registration sockets (watched recursively).");
DEFINE_string(node_status_file, "", "watch: JSON file with the node's CSI status. Required.");
DEFINE_string(node_name, "", "watch: the node's name (default: this host's name).");
DEFINE_string(registration_socket, "", "probe: the registration socket to probe. Required.");
DEFINE_string(pod, "", "publish, unpublish: the Pod (YAML or JSON). Required.");
DEFINE_string(objects, "",
              "publish: files or directories, comma-separated, with the PersistentVolumeClaims, "
              "PersistentVolumes, CSIDrivers and Secrets the pod's volumes need.");
DEFINE_string(root_dir, "/var/lib/kubelet", "publish, unpublish: kubelet's root directory.");
DEFINE_string(allowed_inline_drivers, "",
              "publish: drivers whose inline (ephemeral) volumes this node allows, "
              "comma-separated; empty allows none.");
DEFINE_string(feature_gates, "",
              "publish, unpublish: kubelet's feature gates that change what is sent, "
              "Name=bool,... (ReadWriteOncePod=true, SELinuxMountReadWriteOncePod=true, "
              "CSIVolumeHealth=false by default, as in a current kubelet).");
DEFINE_string(host_selinux, "auto",
              "publish: whether this node has SELinux, for SELinux mount labels: true, false, or "
              "auto (what this machine says).");
DEFINE_string(block_host_ops, "auto",
              "publish, unpublish: the bind mounts and loop devices kubelet makes for raw block "
              "volumes: auto (made when running as root on the host, as kubelet runs; skipped "
              "otherwise, and the report says so) or skip (never made).");
DEFINE_string(get_info_timeout, "1s",
              "Deadline of GetInfo (kubelet: 1s) and of GetCSIDriverInfo, the other call on the "
              "registration socket.");
DEFINE_string(notify_timeout, "5s", "Deadline of NotifyRegistrationStatus (kubelet: 5s).");
DEFINE_string(node_get_info_timeout, "2m", "Deadline of the driver's NodeGetInfo (kubelet: 2m).");

namespace {

constexpr char kUsage[] =
    "kubeletclient watch --plugin-registry-dir=DIR --node-status-file=FILE [--node-name=NAME]\n"
    "  kubeletclient probe --registration-socket=SOCKET\n"
    "  kubeletclient publish --pod=FILE [--objects=FILE_OR_DIR,...] --plugin-registry-dir=DIR "
    "--root-dir=DIR [--node-name=NAME] [--allowed-inline-drivers=a,b] [--feature-gates=A=true,...] "
    "[--host-selinux=auto|true|false] [--block-host-ops=auto|skip]\n"
    "  kubeletclient unpublish --pod=FILE --root-dir=DIR --plugin-registry-dir=DIR";

int Fail(const std::string& message) {
  std::cerr << "kubeletclient: " << message << std::endl;
  return 1;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(kUsage);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<ndr::logging::Options> logging = ndr::logging::OptionsFromFlags();
  if (!logging.ok()) return Fail(std::string(logging.status().message()));
  ndr::logging::Init(argv[0], *logging);
  if (argc != 2) {
    return Fail(std::string("expected one command: watch, probe, publish or unpublish; usage:\n  ") +
                kUsage);
  }
  const std::string command = argv[1];

  ndr::kubelet::HandshakeTimeouts handshake;
  ndr::kubelet::CsiHandlerOptions csi;
  for (auto [flag, value, target] :
       {std::tuple{"get-info-timeout", &FLAGS_get_info_timeout, &handshake.get_info},
        std::tuple{"notify-timeout", &FLAGS_notify_timeout, &handshake.notify},
        std::tuple{"node-get-info-timeout", &FLAGS_node_get_info_timeout,
                   &csi.node_get_info_timeout}}) {
    absl::StatusOr<absl::Duration> d = ndr::ParseGoDuration(*value, flag);
    if (!d.ok()) return Fail(std::string(d.status().message()));
    if (*d <= absl::ZeroDuration()) return Fail(std::string("--") + flag + ": must be positive");
    *target = *d;
  }
  csi.csi_registration_timeout = handshake.get_info;

  if (command == "probe") {
    if (FLAGS_registration_socket.empty()) {
      return Fail("probe: --registration-socket is required");
    }
    ndr::kubelet::ProbeOutcome outcome =
        ndr::kubelet::Probe(FLAGS_registration_socket, handshake, csi);
    std::cout << outcome.json;
    return outcome.registered ? 0 : 1;
  }
  if (command == "publish" || command == "unpublish") {
    if (FLAGS_pod.empty()) return Fail(command + ": --pod is required");
    ndr::kubelet::PublishCommand publish;
    publish.pod_file = FLAGS_pod;
    publish.object_paths = absl::StrSplit(FLAGS_objects, ',', absl::SkipWhitespace());
    publish.plugin_registry_dir = FLAGS_plugin_registry_dir;
    publish.node.root_dir = FLAGS_root_dir;
    publish.node.node_name = FLAGS_node_name.empty() ? HostName() : FLAGS_node_name;
    for (absl::string_view d : absl::StrSplit(FLAGS_allowed_inline_drivers, ',',
                                              absl::SkipWhitespace())) {
      publish.node.allowed_inline_drivers.emplace(d);
    }
    absl::StatusOr<ndr::kubelet::FeatureGates> gates =
        ndr::kubelet::ParseFeatureGates(FLAGS_feature_gates);
    if (!gates.ok()) return Fail("--feature-gates: " + std::string(gates.status().message()));
    publish.node.feature_gates = *gates;
    absl::StatusOr<ndr::kubelet::SeLinuxHost> selinux =
        ndr::kubelet::ResolveHostSeLinux(FLAGS_host_selinux);
    if (!selinux.ok()) return Fail(std::string(selinux.status().message()));
    publish.node.selinux = *selinux;
    if (FLAGS_block_host_ops == "auto") {
      publish.node.change_host = ndr::hostutil::CanChangeHost(&publish.node.host_skip_reason);
    } else if (FLAGS_block_host_ops == "skip") {
      publish.node.host_skip_reason = "--block-host-ops=skip";
    } else {
      return Fail("--block-host-ops: \"" + FLAGS_block_host_ops + "\" is not auto or skip");
    }
    publish.handshake = handshake;
    publish.csi = csi;
    ndr::kubelet::CommandOutcome outcome = command == "publish"
                                               ? ndr::kubelet::RunPublish(publish)
                                               : ndr::kubelet::RunUnpublish(publish);
    std::cout << outcome.json;
    if (!outcome.error.empty()) return Fail(outcome.error);
    for (const std::string& error : outcome.volume_errors) Fail(error);
    return outcome.ok ? 0 : 1;
  }
  if (command == "watch") {
    if (FLAGS_node_status_file.empty()) return Fail("watch: --node-status-file is required");
    ndr::kubelet::WatchOptions options;
    options.plugin_registry_dir = FLAGS_plugin_registry_dir;
    options.node_status_file = FLAGS_node_status_file;
    options.node_name = FLAGS_node_name.empty() ? HostName() : FLAGS_node_name;
    options.handshake = handshake;
    options.csi = csi;
    ndr::kubelet::BlockTerminationSignals();
    if (absl::Status s = ndr::kubelet::RunWatch(options); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    return 0;
  }
  return Fail("unknown command \"" + command + "\"; usage:\n  " + kUsage);
}

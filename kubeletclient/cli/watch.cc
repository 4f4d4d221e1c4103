#include "kubeletclient/cli/watch.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/watch.h"

DEFINE_string(node_status_file, "", "JSON file with the node's CSI status. Required.");

namespace ndr::kubelet::cli {
namespace {

int Run() {
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("watch");
  if (!handshake.ok()) return Fail(handshake.status().message());
  if (FLAGS_node_status_file.empty()) return Fail("watch: --node-status-file is required");
  WatchOptions options;
  options.plugin_registry_dir = FLAGS_plugin_registry_dir;
  options.node_status_file = FLAGS_node_status_file;
  options.node_name = NodeNameFromFlags();
  options.handshake = handshake->timeouts;
  options.csi = handshake->csi;
  BlockTerminationSignals();
  if (absl::Status s = RunWatch(options); !s.ok()) return Fail(s.message());
  return 0;
}

}  // namespace

Command Watch() {
  return {"watch",
          "kubeletclient watch --plugin-registry-dir=DIR --node-status-file=FILE "
          "[--node-name=NAME] [--kubelet-version=1.N]",
          WithHandshakeFlags({"plugin_registry_dir", "node_status_file", "node_name"}), &Run};
}

}  // namespace ndr::kubelet::cli

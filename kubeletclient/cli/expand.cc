#include "kubeletclient/cli/expand.h"

#include "absl/status/statusor.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/cli/volume_command.h"
#include "kubeletclient/expand.h"

DEFINE_string(volume, "", "The pod's volume to expand (its name in spec.volumes). Required.");

namespace ndr::kubelet::cli {
namespace {

int Run() {
  // Its own flag first: nothing is set up for a command line that is refused.
  if (FLAGS_volume.empty()) return Fail("expand: --volume is required");
  absl::StatusOr<PublishCommand> publish = SetUpVolumeCommand("expand");
  if (!publish.ok()) return Fail(publish.status().message());
  return PrintOutcome(RunExpand(*publish, FLAGS_volume));
}

}  // namespace

Command Expand() {
  return {"expand",
          "kubeletclient expand --pod=FILE --volume=NAME [--objects=FILE_OR_DIR,...] "
          "--plugin-registry-dir=DIR --root-dir=DIR [publish's flags]",
          WithHandshakeFlags({"pod", "volume", "objects", "plugin_registry_dir", "root_dir",
                              "node_name", "allowed_inline_drivers", "feature_gates",
                              "host_selinux", "block_host_ops", "service_account_key_file",
                              "service_account_issuer"}),
          &Run};
}

}  // namespace ndr::kubelet::cli

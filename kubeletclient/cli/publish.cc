#include "kubeletclient/cli/publish.h"

#include "absl/status/statusor.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/cli/volume_command.h"
#include "kubeletclient/publish.h"

namespace ndr::kubelet::cli {
namespace {

int RunPublishCommand() {
  absl::StatusOr<PublishCommand> publish = SetUpVolumeCommand("publish");
  if (!publish.ok()) return Fail(publish.status().message());
  return PrintOutcome(RunPublish(*publish));
}

int RunUnpublishCommand() {
  absl::StatusOr<PublishCommand> publish = SetUpVolumeCommand("unpublish");
  if (!publish.ok()) return Fail(publish.status().message());
  return PrintOutcome(RunUnpublish(*publish));
}

}  // namespace

Command Publish() {
  return {"publish",
          "kubeletclient publish --pod=FILE [--objects=FILE_OR_DIR,...] "
          "--plugin-registry-dir=DIR --root-dir=DIR [--node-name=NAME] "
          "[--allowed-inline-drivers=a,b] [--kubelet-version=1.N] [--feature-gates=Name=bool,...] "
          "[--host-selinux=auto|true|false] [--block-host-ops=auto|skip] "
          "[--service-account-key-file=PEM --service-account-issuer=URL]",
          WithHandshakeFlags({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                              "allowed_inline_drivers", "feature_gates", "host_selinux",
                              "block_host_ops", "service_account_key_file",
                              "service_account_issuer"}),
          &RunPublishCommand};
}

Command Unpublish() {
  return {"unpublish",
          "kubeletclient unpublish --pod=FILE --root-dir=DIR --plugin-registry-dir=DIR "
          "[--node-name=NAME] [--feature-gates=Name=bool,...] [--host-selinux=auto|true|false] "
          "[--block-host-ops=auto|skip]",
          WithHandshakeFlags({"pod", "plugin_registry_dir", "root_dir", "node_name",
                              "feature_gates", "host_selinux", "block_host_ops"}),
          &RunUnpublishCommand};
}

}  // namespace ndr::kubelet::cli

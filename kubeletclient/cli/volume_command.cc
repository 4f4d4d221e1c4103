#include "kubeletclient/cli/volume_command.h"

#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kubeletclient/cli/command.h"
#include "kubeletclient/cli/shared_flags.h"
#include "logging/logging.h"

namespace ndr::kubelet::cli {

absl::StatusOr<PublishCommand> SetUpVolumeCommand(absl::string_view command) {
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags(command);
  if (!handshake.ok()) return handshake.status();
  if (FLAGS_pod.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(command, ": --pod is required"));
  }
  absl::StatusOr<PublishCommand> publish = PublishCommandFromFlags(*handshake);
  if (!publish.ok()) return publish.status();
  // As kubelet at its start (the judge does it in its run, and undoes it).
  bool root_made_shared = false;
  if (absl::Status s = SetUpRootDir(publish->node, &root_made_shared); !s.ok()) return s;
  if (root_made_shared) {
    NDR_LOG(INFO) << "Bind-mounted the root directory " << publish->node.root_dir
                  << " on itself with shared propagation, as kubelet does at start; "
                  << "`umount " << publish->node.root_dir << "` removes it";
  }
  return publish;
}

int PrintOutcome(const CommandOutcome& outcome) {
  std::cout << outcome.json;
  if (!outcome.error.empty()) return Fail(outcome.error);
  for (const std::string& error : outcome.volume_errors) Fail(error);
  return outcome.ok ? 0 : 1;
}

}  // namespace ndr::kubelet::cli

// What the volume commands (publish, unpublish, republish, expand, stats) do around their own
// work: read the shared flags into a PublishCommand and set up kubelet's root directory before,
// print the outcome after.
#ifndef NDR_KUBELETCLIENT_CLI_VOLUME_COMMAND_H_
#define NDR_KUBELETCLIENT_CLI_VOLUME_COMMAND_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kubeletclient/volume_command.h"

namespace ndr::kubelet::cli {

// The handshake and node flags of the volume command `command` (shared_flags.h), --pod
// required; then, as kubelet at its start, its root directory (SetUpRootDir).
absl::StatusOr<PublishCommand> SetUpVolumeCommand(absl::string_view command);

// Prints the outcome's report on stdout and its errors on stderr; returns the exit code.
int PrintOutcome(const CommandOutcome& outcome);

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_VOLUME_COMMAND_H_

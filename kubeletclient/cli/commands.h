// Every kubeletclient command, and what main() needs of them all: the usage lines, --help, and
// the refusal of flags that belong to another command.
#ifndef NDR_KUBELETCLIENT_CLI_COMMANDS_H_
#define NDR_KUBELETCLIENT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kubeletclient/cli/command.h"

namespace ndr::kubelet::cli {

// watch, probe, publish, unpublish, republish, expand, stats, jwks, sanity: the order of --help.
const std::vector<Command>& Commands();

// The command called `name`; null if there is none.
const Command* FindCommand(absl::string_view name);

// "watch, probe, ... jwks or sanity".
std::string CommandNames();

// "  kubeletclient watch ...\n  kubeletclient probe ...\n": every command's usage line.
std::string UsageLines();

// --help: of the first command named on the command line, else of the program.
std::string Help(int argc, char** argv);

// An error when the command line gave `command` flags that only other commands read (it would
// accept them and do nothing); OK otherwise. Call after gflags::ParseCommandLineFlags.
absl::Status CheckOwnFlags(const Command& command);

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_COMMANDS_H_

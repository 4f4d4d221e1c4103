// A kubeletclient command as main() sees it: its name, its usage line and the flags it reads (for
// --help, and to refuse the flags of other commands), and the function that runs it. Each
// command's file (watch.h, probe.h, ...) defines the flags only it reads; shared_flags.h holds the
// ones several read; commands.h lists every command.
#ifndef NDR_KUBELETCLIENT_CLI_COMMAND_H_
#define NDR_KUBELETCLIENT_CLI_COMMAND_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ndr::kubelet::cli {

struct Command {
  const char* name;   // "watch"
  const char* usage;  // one line: "kubeletclient watch --plugin-registry-dir=DIR ..."
  // The gflags names (underscores) of the flags it reads, in the order its --help lists them.
  std::vector<std::string> flags;
  // Runs the command once the command line is parsed and holds none of another command's flags;
  // returns the exit code.
  int (*run)();
};

// Prints "kubeletclient: <message>" on stderr and returns 1, the exit code of a failed command.
int Fail(absl::string_view message);

}  // namespace ndr::kubelet::cli

#endif  // NDR_KUBELETCLIENT_CLI_COMMAND_H_

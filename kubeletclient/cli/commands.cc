#include "kubeletclient/cli/commands.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/go_flag_usage.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/expand.h"
#include "kubeletclient/cli/jwks.h"
#include "kubeletclient/cli/probe.h"
#include "kubeletclient/cli/publish.h"
#include "kubeletclient/cli/republish.h"
#include "kubeletclient/cli/sanity.h"
#include "kubeletclient/cli/stats.h"
#include "kubeletclient/cli/watch.h"

namespace ndr::kubelet::cli {
namespace {

std::string FlagSpelling(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      Watch(), Probe(), Publish(), Unpublish(), Republish(), Expand(), Stats(), Jwks(), Sanity(),
  };
  return *commands;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& command : Commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

std::string CommandNames() {
  std::vector<absl::string_view> names;
  for (const Command& command : Commands()) names.push_back(command.name);
  const absl::string_view last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " or ", last);
}

std::string UsageLines() {
  std::string lines;
  for (const Command& command : Commands()) absl::StrAppend(&lines, "  ", command.usage, "\n");
  return lines;
}

std::string Help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (const Command* command = FindCommand(argv[i]); command != nullptr) {
      return GoFlagUsage(absl::StrCat("Usage:\n  ", command->usage, "\n\nFlags:"),
                         {{"", command->flags},
                          {"Logging flags (component-base):", LoggingFlagNames()}});
    }
  }
  return GoFlagUsage(
      absl::StrCat("kubeletclient: the kubelet's side of plugin registration and of the CSI "
                   "volume plugin.\n\nUsage:\n",
                   UsageLines(), "\nRun 'kubeletclient COMMAND --help' for a command's flags."),
      {{"Logging flags (component-base), for every command:", LoggingFlagNames()}});
}

absl::Status CheckOwnFlags(const Command& command) {
  std::set<std::string> everyones;
  for (const Command& c : Commands()) everyones.insert(c.flags.begin(), c.flags.end());
  std::vector<std::string> foreign;
  for (const std::string& name : everyones) {
    if (std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end()) {
      continue;
    }
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(name.c_str(), &info) && !info.is_default) {
      foreign.push_back(FlagSpelling(name));
    }
  }
  if (foreign.empty()) return absl::OkStatus();
  std::vector<std::string> own;
  for (const std::string& name : command.flags) own.push_back(FlagSpelling(name));
  return absl::InvalidArgumentError(absl::StrCat(
      command.name, ": ", absl::StrJoin(foreign, ", "),
      foreign.size() == 1 ? " is not one of its flags" : " are not its flags", "; its flags are ",
      absl::StrJoin(own, ", "), " (kubeletclient ", command.name, " --help)"));
}

}  // namespace ndr::kubelet::cli

#include "kubeletclient/sanity/sanity.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kubeletclient/sanity/judge.h"

namespace ndr::kubelet::sanity {

SanityReport Judge::Run() {
  for (const std::string& path : options_.object_paths) {
    if (absl::Status s = ReadObjects(path, &given_); !s.ok()) {
      report_.error = std::string(s.message());
      return report_;
    }
  }
  if (!options_.service_account_key_file.empty()) {
    // A bad key is bad input: said before anything is sent.
    PublishCommand command;
    command.service_account_key_file = options_.service_account_key_file;
    command.service_account_issuer = options_.service_account_issuer;
    absl::StatusOr<TokenSource> source =
        StartTokenSource(command, given_, [] { return absl::Now(); });
    if (!source.ok()) {
      report_.error = std::string(source.status().message());
      return report_;
    }
  }
  std::vector<std::string> modes = options_.volume_modes;
  if (modes.empty()) modes = {"filesystem", "block"};
  // Inline and generic ephemeral volumes are filesystem volumes.
  const bool ephemeral = std::find(modes.begin(), modes.end(), "filesystem") != modes.end();
  if (!Register()) {
    for (const char* check : {"registration/node-info", "registration/capabilities"}) {
      Skip(check, "", "not registered");
    }
    for (const std::string& mode : modes) {
      if (options_.volume_handles.size() <= 1) {
        SkipChecks(mode + "/", CheckNames(CheckGroup::kVolume), "the driver is not registered");
        continue;
      }
      for (const std::string& handle : options_.volume_handles) {
        SkipChecks(absl::StrCat(mode, "/", handle, "/"), CheckNames(CheckGroup::kVolume),
                   "the driver is not registered");
      }
    }
    if (ephemeral) {
      for (const char* kind : {"inline", "generic-ephemeral"}) {
        SkipChecks(std::string(kind) + "/", CheckNames(CheckGroup::kEphemeral), "the driver is not registered");
      }
    }
  } else {
    // Kubelet publishes a driver's inline volumes where the node allows them: here, this one's.
    node_.allowed_inline_drivers.insert(driver_.name);
    ReadCapabilities();
    if (options_.volume_handles.empty()) {
      if (!ReadControllerCapabilities()) return report_;
      for (const std::string& mode : modes) RunScenario(mode, "", 1);
    }
    int index = 0;
    for (const std::string& handle : options_.volume_handles) {
      ++index;
      for (const std::string& mode : modes) RunScenario(mode, handle, index);
    }
    if (ephemeral) {
      for (const char* kind : {"inline", "generic-ephemeral"}) RunEphemeral(kind);
    }
  }
  node_.tokens = nullptr;
  out_ << report_.passed << " passed, " << report_.failed << " failed, " << report_.skipped
       << " skipped" << std::endl;
  return report_;
}

}  // namespace ndr::kubelet::sanity

namespace ndr::kubelet {

SanityReport RunSanity(const SanityOptions& options, std::ostream& out) {
  sanity::Judge judge(options, out);
  return judge.Run();
}

}  // namespace ndr::kubelet

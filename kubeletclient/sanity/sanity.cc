#include "kubeletclient/sanity/sanity.h"

#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hostutil/mount.h"
#include "kubeletclient/sanity/judge.h"

namespace ndr::kubelet::sanity {

const std::vector<std::string>& Judge::HandlesFor(const std::string& scenario) const {
  auto it = options_.scenario_handles.find(scenario);
  return it != options_.scenario_handles.end() ? it->second : options_.volume_handles;
}

bool Judge::PersistentVolumesServed() const {
  auto it = given_.csi_drivers.find(driver_.name);
  if (it == given_.csi_drivers.end()) return true;  // the API server's default: Persistent
  const std::vector<std::string>& modes = it->second.volume_lifecycle_modes;
  return std::find(modes.begin(), modes.end(), "Persistent") != modes.end();
}

void Judge::SkipPersistent(const std::string& mode, const std::string& why) {
  const std::vector<std::string>& handles = HandlesFor(mode);
  if (handles.size() <= 1) {
    SkipChecks(mode + "/", CheckNames(CheckGroup::kVolume), why);
    return;
  }
  for (const std::string& handle : handles) {
    SkipChecks(absl::StrCat(mode, "/", handle, "/"), CheckNames(CheckGroup::kVolume), why);
  }
}

bool Judge::RunVolumes(const std::vector<std::string>& modes, bool ephemeral) {
  if (!PersistentVolumesServed()) {
    // csi_mounter.go SetUpAt refuses them (supportsVolumeLifecycleMode), and no handle or
    // Controller service is needed to judge the inline volumes.
    const std::string why =
        "the CSIDriver lists only Ephemeral in volumeLifecycleModes: the driver serves no "
        "persistent volumes (kubelet's csi_mounter.go SetUpAt refuses them)";
    for (const std::string& mode : modes) SkipPersistent(mode, why);
    if (ephemeral) {
      RunEphemeral("inline");
      SkipChecks("generic-ephemeral/", CheckNames(CheckGroup::kEphemeral), why);
    }
    return true;
  }
  std::vector<std::string> without_handle;  // scenarios whose volume the controller creates
  for (const std::string& mode : modes) {
    if (HandlesFor(mode).empty()) without_handle.push_back(mode);
  }
  if (ephemeral && HandlesFor("generic-ephemeral").empty()) {
    without_handle.push_back("generic-ephemeral");
  }
  if (!without_handle.empty() &&
      (!ReadControllerCapabilities(without_handle) || !PrepareProvisioning(without_handle))) {
    return false;
  }
  if (without_handle.empty() && (!options_.storage_class.empty() || !given_.storage_classes.empty())) {
    // A class given and not used would otherwise pass without a word.
    out_ << "StorageClass not used: every scenario has a --volume-handle, and classes only make "
            "the volumes created without one"
         << std::endl;
  }
  // Handle by handle, each in every mode it is given for, as csi-sanity goes volume by volume;
  // a mode without handles: a volume its controller creates.
  for (size_t i = 0;; ++i) {
    bool more = false;
    for (const std::string& mode : modes) {
      const std::vector<std::string>& handles = HandlesFor(mode);
      if (i < std::max<size_t>(handles.size(), 1)) {
        RunScenario(mode, handles.empty() ? "" : handles[i], static_cast<int>(i) + 1);
      }
      more = more || i + 1 < handles.size();
    }
    if (!more) break;
  }
  if (ephemeral) {
    for (const char* kind : {"inline", "generic-ephemeral"}) RunEphemeral(kind);
  }
  return true;
}

SanityReport Judge::Run() {
  for (const std::string& path : options_.object_paths) {
    if (absl::Status s = ReadObjects(path, &given_); !s.ok()) {
      report_.error = std::string(s.message());
      return report_;
    }
  }
  if (!options_.secrets_file.empty()) {
    absl::StatusOr<SecretsFile> file = ReadSecretsFile(options_.secrets_file);
    if (!file.ok()) {
      report_.error = std::string(file.status().message());
      return report_;
    }
    secrets_ = *std::move(file);
    // Node secrets reach the driver as kubelet hands them over: from Secrets the PV names.
    for (const auto& [key, name] : {std::pair{"NodeStageVolumeSecret", kFileNodeStageSecret},
                                    std::pair{"NodePublishVolumeSecret", kFileNodePublishSecret}}) {
      const StringMap* data = secrets_.Find(key);
      if (data == nullptr) continue;
      Secret secret;
      secret.ns = kNamespace;
      secret.name = name;
      secret.data = *data;
      if (!given_.secrets.emplace(std::make_pair(secret.ns, secret.name), secret).second) {
        report_.error = absl::StrCat("--objects has a Secret ", kNamespace, "/", name,
                                     ", the name the judge gives --secrets-file's ", key,
                                     ": rename it");
        return report_;
      }
    }
    if (!secrets_.unused.empty()) {
      out_ << "--secrets-file: not used (the judge makes none of these calls): "
           << absl::StrJoin(secrets_.unused, ", ") << std::endl;
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
  // As kubelet at its start: the root directory on a shared mount. The judge leaves nothing, so
  // a bind mount it made for that goes again at the end.
  bool root_made_shared = false;
  if (absl::Status s = SetUpRootDir(node_, &root_made_shared); !s.ok()) {
    report_.error = std::string(s.message());
    return report_;
  }
  absl::Cleanup undo_root = [&] {
    if (!root_made_shared) return;
    if (absl::Status s = hostutil::Unmount(node_.root_dir); !s.ok()) {
      out_ << "Could not undo the shared bind mount of " << node_.root_dir << " (" << s.message()
           << "); something is still mounted below it" << std::endl;
    }
  };
  if (!node_.change_host) {
    out_ << "no host changes (" << node_.host_skip_reason
         << "): kubelet's bind mounts and loop devices for block volumes are not made, and the "
            "checks that need them are skipped, saying so; run as root on the host to judge them"
         << std::endl;
  }
  std::vector<std::string> modes = options_.volume_modes;
  if (modes.empty()) modes = {"filesystem", "block"};
  // Inline and generic ephemeral volumes are filesystem volumes.
  const bool ephemeral = std::find(modes.begin(), modes.end(), "filesystem") != modes.end();
  if (!Register()) {
    for (const char* check : {"registration/node-info", "registration/capabilities",
                              "registration/storage-health"}) {
      Skip(check, "", "not registered");
    }
    for (const std::string& mode : modes) {
      SkipPersistent(mode, "the driver is not registered");
    }
    if (ephemeral) {
      for (const char* kind : {"inline", "generic-ephemeral"}) {
        SkipChecks(std::string(kind) + "/", CheckNames(CheckGroup::kEphemeral),
                   "the driver is not registered");
      }
    }
  } else {
    // Kubelet publishes a driver's inline volumes where the node allows them: here, this one's.
    node_.allowed_inline_drivers.insert(driver_.name);
    ReadCapabilities();
    JudgeStorageHealth();
    if (!RunVolumes(modes, ephemeral)) return report_;
  }
  node_.tokens = nullptr;
  out_ << SummaryCounts(report_, report_.skipped_not_root == 0
                                     ? ""
                                     : absl::StrCat("(", report_.skipped_not_root,
                                                    " of them for want of host changes: ",
                                                    node_.host_skip_reason, ")"))
       << std::endl;
  return report_;
}

}  // namespace ndr::kubelet::sanity

namespace ndr::kubelet {

SanityReport RunSanity(const SanityOptions& options, std::ostream& out) {
  sanity::Judge judge(options, out);
  return judge.Run();
}

}  // namespace ndr::kubelet

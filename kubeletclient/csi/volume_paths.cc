#include "kubeletclient/csi/volume_paths.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/sha256.h"

namespace ndr::kubelet {
namespace {

// Whether `path` is below `root`, both clean.
bool StrictlyInside(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1 && path[0] == '/';
  return absl::StartsWith(path, root) && path.size() > root.size() && path[root.size()] == '/';
}

std::string Parent(const std::string& clean) {
  const size_t slash = clean.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : clean.substr(0, slash);
}

std::string Describe(const std::string& root, const std::vector<std::string>& parts) {
  std::vector<std::string> quoted;
  for (const std::string& part : parts) quoted.push_back(GoQuote(part));
  return absl::StrCat("the path from --root-dir ", GoQuote(root), " and [",
                      absl::StrJoin(quoted, ", "), "]");
}

}  // namespace

// Sets each field to the path of its leaf in `dir` under `root` (an empty leaf: `dir` itself).
static absl::Status FillPaths(const std::string& root, const std::vector<std::string>& dir,
                       std::initializer_list<std::pair<std::string*, const char*>> fields) {
  for (const auto& [field, leaf] : fields) {
    std::vector<std::string> parts = dir;
    if (*leaf != '\0') parts.push_back(leaf);
    absl::StatusOr<std::string> path = PathUnderRoot(root, parts);
    if (!path.ok()) return path.status();
    *field = *std::move(path);
  }
  return absl::OkStatus();
}

std::string CleanPath(const std::string& path) {
  const bool absolute = absl::StartsWith(path, "/");
  std::vector<std::string> kept;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!kept.empty() && kept.back() != "..") {
        kept.pop_back();
      } else if (!absolute) {
        kept.push_back("..");
      }
      continue;
    }
    kept.emplace_back(part);
  }
  const std::string joined = absl::StrJoin(kept, "/");
  if (absolute) return "/" + joined;
  return joined.empty() ? "." : joined;
}

absl::StatusOr<std::string> PathUnderRoot(const std::string& root,
                                          const std::vector<std::string>& parts,
                                          bool follow_leaf) {
  if (root.empty()) return absl::InvalidArgumentError("--root-dir is empty");
  std::string joined = root;
  for (const std::string& part : parts) {
    // The operating system would read such a path only up to the NUL.
    if (part.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(root, parts), " holds a NUL byte: refused"));
    }
    absl::StrAppend(&joined, "/", part);
  }
  const std::string clean_root = CleanPath(root);
  const std::string clean = CleanPath(joined);
  if (!StrictlyInside(clean, clean_root)) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(root, parts), " is ", GoQuote(clean),
                                                   ", which is not inside the root directory: "
                                                   "refused"));
  }
  // The deepest existing part of the path, if it is below the root, must resolve below the
  // root too: no symbolic link in the tree may lead out of it.
  std::string existing = follow_leaf ? clean : Parent(clean);
  struct stat st;
  while (StrictlyInside(existing, clean_root) && lstat(existing.c_str(), &st) != 0) {
    existing = Parent(existing);
  }
  if (StrictlyInside(existing, clean_root)) {
    char real_root[PATH_MAX], real[PATH_MAX];
    if (realpath(clean_root.c_str(), real_root) == nullptr ||
        realpath(existing.c_str(), real) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(root, parts), ": cannot resolve ",
                                                     GoQuote(existing), ": ", strerror(errno)));
    }
    if (!StrictlyInside(real, real_root)) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(root, parts), " goes through ", GoQuote(existing), ", which resolves to ",
          GoQuote(real), ", outside the root directory ", GoQuote(real_root), ": refused"));
    }
  }
  return clean;
}

absl::StatusOr<std::string> PodCsiVolumesDir(const std::string& root, const std::string& pod_uid) {
  // kubelet: getPodDir is <root>/pods/<uid>; the CSI plugin's volumes are under
  // volumes/kubernetes.io~csi (the escaped plugin name).
  return PathUnderRoot(root, {"pods", pod_uid, "volumes", "kubernetes.io~csi"});
}

absl::StatusOr<PodVolumePaths> PodVolumePathsFor(const std::string& root, const std::string& pod_uid,
                                                 const std::string& spec_name) {
  // csi_mounter.go: the target path is <pod volume dir>/<spec name>/mount, vol_data.json beside.
  PodVolumePaths paths;
  if (absl::Status s = FillPaths(root, {"pods", pod_uid, "volumes", "kubernetes.io~csi", spec_name},
                                 {{&paths.dir, ""},
                                  {&paths.mount, "mount"},
                                  {&paths.vol_data, "vol_data.json"}});
      !s.ok()) {
    return s;
  }
  paths.root = CleanPath(root);
  return paths;
}

absl::StatusOr<DevicePaths> DevicePathsFor(const std::string& root, const std::string& driver,
                                           const std::string& handle) {
  // GetPluginDir("kubernetes.io/csi") is <root>/plugins/kubernetes.io/csi; the driver's name is
  // not escaped (it cannot hold a '/': object_validation.h).
  DevicePaths paths;
  if (absl::Status s = FillPaths(root, {"plugins", "kubernetes.io", "csi", driver, Sha256Hex(handle)},
                                 {{&paths.dir, ""},
                                  {&paths.globalmount, "globalmount"},
                                  {&paths.vol_data, "vol_data.json"}});
      !s.ok()) {
    return s;
  }
  paths.root = CleanPath(root);
  return paths;
}

absl::StatusOr<std::string> PodCsiVolumeDevicesDir(const std::string& root,
                                                   const std::string& pod_uid) {
  // getPodVolumeDeviceDir(uid, EscapeQualifiedName("kubernetes.io/csi")).
  return PathUnderRoot(root, {"pods", pod_uid, "volumeDevices", "kubernetes.io~csi"});
}

absl::StatusOr<BlockPaths> BlockPathsFor(const std::string& root, const std::string& pod_uid,
                                         const std::string& spec_name) {
  // Whole directories are removed under these paths (cleanupOrphanDeviceFiles): each name must
  // be one path segment, so that none of them can stand for a parent, even inside the root.
  for (const auto& [what, name] : {std::pair{"pod UID", &pod_uid}, std::pair{"PV name", &spec_name}}) {
    std::vector<std::string> problems = IsValidPathSegmentName(*name);
    if (name->empty()) problems.push_back("may not be empty");
    if (!problems.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("the ", what, " ", GoQuote(*name),
                                                     " of a raw block volume ",
                                                     absl::StrJoin(problems, ", "),
                                                     ": it would not be one directory: refused"));
    }
  }
  if (spec_name == "staging" || spec_name == "publish") {
    return absl::InvalidArgumentError(absl::StrCat(
        "a raw block PersistentVolume named ", GoQuote(spec_name),
        " would share kubelet's directory plugins/kubernetes.io/csi/volumeDevices/", spec_name,
        " with the ", spec_name,
        " paths of every other block volume, and its clean-up would remove theirs: refused"));
  }
  // GetVolumeDevicePluginDir("kubernetes.io/csi") is <root>/plugins/kubernetes.io/csi/volumeDevices;
  // getVolumePluginDir escapes '/' in the spec name, which a PV name cannot hold.
  const std::vector<std::string> plugin = {"plugins", "kubernetes.io", "csi", "volumeDevices"};
  auto under = [&](std::vector<std::string> parts) {
    std::vector<std::string> all = plugin;
    all.insert(all.end(), parts.begin(), parts.end());
    return all;
  };
  BlockPaths paths;
  // The publish file, the bind mount and the pod's entry may be links or devices by design:
  // only the directories above them are resolved.
  struct Entry {
    std::string* field;
    std::vector<std::string> parts;
    bool follow_leaf;
  };
  for (const Entry& entry : std::initializer_list<Entry>{
           {&paths.staging, under({"staging", spec_name}), true},
           {&paths.publish_dir, under({"publish", spec_name}), true},
           {&paths.publish, under({"publish", spec_name, pod_uid}), false},
           {&paths.volume_dir, under({spec_name}), true},
           {&paths.global_map, under({spec_name, "dev"}), true},
           {&paths.global_map_pod, under({spec_name, "dev", pod_uid}), false},
           {&paths.data_dir, under({spec_name, "data"}), true},
           {&paths.vol_data, under({spec_name, "data", "vol_data.json"}), true},
           {&paths.pod_map_dir, {"pods", pod_uid, "volumeDevices", "kubernetes.io~csi"}, true},
           {&paths.pod_map, {"pods", pod_uid, "volumeDevices", "kubernetes.io~csi", spec_name},
            false},
       }) {
    const auto& [field, parts, follow_leaf] = entry;
    absl::StatusOr<std::string> path = PathUnderRoot(root, parts, follow_leaf);
    if (!path.ok()) return path.status();
    *field = *std::move(path);
  }
  paths.root = CleanPath(root);
  return paths;
}

}  // namespace ndr::kubelet

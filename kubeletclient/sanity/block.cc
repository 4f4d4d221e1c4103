// block/...: what only raw block volumes need (judge.h).
#include "kubeletclient/sanity/judge.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"

namespace ndr::kubelet::sanity {

// The block target: a device, or what kubelet cannot unmap.
void Judge::JudgeBlockTarget(const std::string& name, const std::string& target,
                             const std::string& request) {
  struct stat st;
  const bool exists = lstat(target.c_str(), &st) == 0;
  const std::string ref =
      "csi_block.go MapPodDevice: the driver creates the file target_path (a device, or a "
      "bind mount of one), which kubelet maps into the pod (MapBlockVolume)";
  if (!exists || S_ISDIR(st.st_mode)) {
    Fail(name, ref,
         absl::StrCat("target_path ", target, exists ? " is a directory" : " does not exist"),
         {request,
          "kubelet needs a file there: a block device, or a file with one bind-mounted on it"});
    return;
  }
  // What kubelet maps is what the target resolves to: its bind mount at volumeDevices/<pv>/dev/
  // <pod uid> follows a symbolic link.
  struct stat resolved;
  const bool resolves = stat(target.c_str(), &resolved) == 0;
  const bool link = S_ISLNK(st.st_mode);
  if (!resolves || !(S_ISBLK(resolved.st_mode) || S_ISCHR(resolved.st_mode))) {
    const std::string what =
        !resolves ? "a symbolic link to nothing"
        : link    ? "a symbolic link to a file that is not a device"
        : hostutil::IsMountPoint(target) ? "a regular file (with a file mounted on it), not a device"
                                         : "a regular file, not a device";
    if (!node_.change_host) {
      // Devices need root on the host, which this run lacks; drivers that publish devices
      // fall back to plain files without it, as the sample driver does.
      SkipNeedsRoot(name, ref,
                    absl::StrCat("cannot be judged without host changes: target_path ", target, " is ", what,
                                 ", and kubelet needs a device there; but this run cannot make "
                                 "host changes (", node_.host_skip_reason,
                                 "), so neither can a driver beside it. Run as root on the host "
                                 "to judge it"));
      return;
    }
    Fail(name, ref, absl::StrCat("target_path ", target, " is ", what),
         {request,
          "kubelet maps it (a bind mount at volumeDevices/<pv>/dev/<pod uid>, a loop device "
          "over that) but can unmap only a device there: volume_path_handler.go "
          "unmapBindMountDevice removes anything else without unmounting it "
          "(IsDeviceBindMountExist), which fails with \"device or resource busy\" on every "
          "retry, so NodeUnpublishVolume and NodeUnstageVolume are never sent (the same in "
          "kubelet v1.26.15 and v1.37.2)",
          "and the container runtime passes only device nodes into a container's "
          "volumeDevices (kubelet_pods.go makeBlockVolumes hands it the path)",
          "publish the volume's block device there: a device node, a bind mount of one on a "
          "file, or a symbolic link to one"});
    return;
  }
  Pass(name, ref,
       absl::StrCat(target, " is a ", link ? "symbolic link to a " : "",
                    S_ISBLK(resolved.st_mode) ? "block device" : "character device"));
}

// Kubelet's bind mounts of block targets that are not devices (block/target fails for them):
// kubelet cannot unmount them (volume_path_handler.go unmapBindMountDevice), so its teardown
// would fail for ever. The judge unmounts them itself, so that the teardown can go on and nothing
// is left on the host; returns the paths it unmounted.
std::vector<std::string> Judge::ReleaseNonDeviceMaps(const std::vector<PodRun*>& runs) {
  std::vector<std::string> released;
  for (PodRun* run : runs) {
    if (!run->published || !run->plan.has_value() || !run->plan->block.has_value()) continue;
    const std::string& path = run->plan->block->global_map_pod;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode) ||
        !hostutil::IsMountPoint(path)) {
      continue;
    }
    // Kubelet's loop device over it (its "file descriptor lock") keeps the mount busy: released
    // first, as kubelet's DetachFileDevice does.
    if (absl::StatusOr<std::optional<std::string>> loop = hostutil::FindLoopDevice(path);
        loop.ok() && loop->has_value()) {
      if (absl::Status s = hostutil::DetachLoopDevice(**loop); !s.ok()) {
        out_ << "Cleanup: loop device " << **loop << " over " << path
             << " could not be detached: " << s.message() << "\n";
      }
    }
    // Kubelet's MapDevice sees no device there, so each map mounted it again: one unmount each.
    for (int i = 0; i < 64 && hostutil::IsMountPoint(path); ++i) {
      if (absl::Status s = hostutil::Unmount(path); !s.ok()) {
        out_ << "Cleanup: " << path << " could not be unmounted: " << s.message() << "\n";
        break;
      }
    }
    released.push_back(path);
  }
  return released;
}

}  // namespace ndr::kubelet::sanity

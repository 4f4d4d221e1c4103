#include "kubeletclient/volumeutil/volume_path_handler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/go_errno.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
namespace {

absl::Status ErrnoError(absl::string_view message, int err) {
  return absl::InternalError(absl::StrCat(message, ": ", strerror(err)));
}

// A Go *PathError as it prints: "OP PATH: " and the errno's text, which Go spells in lower case
// ("device or resource busy", "no such file or directory").
std::string GoPathError(absl::string_view op, const std::string& path, int err) {
  return absl::StrCat(op, " ", path, ": ", GoErrnoText(err));
}

// os.Remove's error.
std::string GoRemoveError(const std::string& path, int err) {
  return GoPathError("remove", path, err);
}

bool IsDevice(const struct stat& st) { return S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode); }

}  // namespace

VolumePathHandler::VolumePathHandler(bool change_host, std::string skip_reason,
                                     std::vector<HostStep>* steps,
                                     std::function<size_t()> calls_so_far)
    : change_host_(change_host),
      skip_reason_(std::move(skip_reason)),
      steps_(steps),
      calls_so_far_(std::move(calls_so_far)) {}

void VolumePathHandler::Record(std::string operation, std::string path, std::string detail,
                               std::string result) {
  steps_->push_back({std::move(operation), std::move(path), std::move(detail), std::move(result),
                     calls_so_far_ ? calls_so_far_() : 0});
}

absl::Status VolumePathHandler::Step(std::string operation, std::string path, std::string detail,
                                     const absl::Status& status) {
  Record(std::move(operation), std::move(path), std::move(detail),
         status.ok() ? "done" : absl::StrCat("failed: ", status.message()));
  return status;
}

absl::Status VolumePathHandler::Skipped(std::string operation, std::string path,
                                        std::string detail) {
  Record(std::move(operation), std::move(path), std::move(detail),
         absl::StrCat("skipped: ", skip_reason_));
  return absl::OkStatus();
}

absl::Status VolumePathHandler::MapDevice(const std::string& device_path,
                                          const std::string& map_path,
                                          const std::string& link_name, bool bind_mount) {
  if (device_path.empty()) {
    return absl::InvalidArgumentError("failed to map device to map path. devicePath is empty");
  }
  if (map_path.empty()) {
    return absl::InvalidArgumentError("failed to map device to map path. mapPath is empty");
  }
  if (map_path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the map path should be absolute: map path: ", map_path));
  }
  if (absl::Status s = MakeDirs(map_path, 0750); !s.ok()) {
    return absl::InternalError(absl::StrCat("failed to mkdir ", map_path, ": ", s.message()));
  }
  const std::string link_path = absl::StrCat(map_path, "/", link_name);
  if (!bind_mount) {
    // mapSymlinkDevice: a stale link (after a reboot) is replaced.
    if (unlink(link_path.c_str()) != 0 && errno != ENOENT) {
      return Step("symlink", link_path, device_path,
                  ErrnoError(absl::StrCat("failed to remove file ", link_path), errno));
    }
    absl::Status status = absl::OkStatus();
    if (symlink(device_path.c_str(), link_path.c_str()) != 0) {
      status = ErrnoError(absl::StrCat("symlink ", device_path, " ", link_path), errno);
    }
    return Step("symlink", link_path, device_path, status);
  }
  // mapBindMountDevice.
  struct stat st;
  if (stat(link_path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return ErrnoError(absl::StrCat("failed to stat file ", link_path), errno);
    }
    const int fd = open(link_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0750);
    if (fd < 0) return ErrnoError(absl::StrCat("failed to open file ", link_path), errno);
    close(fd);
  } else if (IsDevice(st)) {
    // "Map skipped because bind mount already exist on the path".
    Record("bind mount", link_path, device_path, "done: it is mounted already");
    return absl::OkStatus();
  }
  if (!change_host_) return Skipped("bind mount", link_path, device_path);
  absl::Status mounted = hostutil::BindMount(device_path, link_path);
  if (!mounted.ok()) {
    mounted = absl::Status(mounted.code(),
                           absl::StrCat("failed to bind mount devicePath: ", device_path,
                                        " to linkPath ", link_path, ": ", mounted.message()));
  }
  return Step("bind mount", link_path, device_path, mounted);
}

absl::Status VolumePathHandler::UnmapDevice(const std::string& map_path,
                                            const std::string& link_name, bool bind_mount) {
  if (map_path.empty()) {
    return absl::InvalidArgumentError("failed to unmap device from map path. mapPath is empty");
  }
  const std::string link_path = absl::StrCat(map_path, "/", link_name);
  struct stat st;
  const bool exists = lstat(link_path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) {
    return ErrnoError(absl::StrCat("failed to Lstat file ", link_path), errno);
  }
  if (!bind_mount) {
    // unmapSymlinkDevice: only a symbolic link is removed.
    if (!exists || !S_ISLNK(st.st_mode)) {
      Record("remove symlink", link_path, "", "done: there is none");
      return absl::OkStatus();
    }
    absl::Status status = absl::OkStatus();
    if (unlink(link_path.c_str()) != 0) {
      status = ErrnoError(absl::StrCat("remove ", link_path), errno);
    }
    return Step("remove symlink", link_path, "", status);
  }
  // unmapBindMountDevice: IsDeviceBindMountExist looks for a device file; anything else is just
  // removed, which fails if it is a mount point after all (a driver that published a plain
  // file: kubelet would fail here too).
  if (!exists) {
    Record("unmount", link_path, "", "done: there is none");
    return absl::OkStatus();
  }
  if (IsDevice(st)) {
    if (!change_host_) {
      (void)Skipped("unmount", link_path, "");
    } else if (absl::Status s = hostutil::Unmount(link_path); !s.ok()) {
      return Step("unmount", link_path, "",
                  absl::Status(s.code(), absl::StrCat("failed to unmount linkPath ", link_path,
                                                      ": ", s.message())));
    } else {
      (void)Step("unmount", link_path, "", absl::OkStatus());
    }
  }
  // kubelet v1.26.15 and v1.37.2 alike: "failed to remove file PATH: remove PATH: device or
  // resource busy" for a file with a file bind-mounted on it (checked by running kubelet's
  // volumepathhandler on such a file).
  absl::Status status = absl::OkStatus();
  if (unlink(link_path.c_str()) != 0 && errno != ENOENT) {
    status = absl::InternalError(
        absl::StrCat("failed to remove file ", link_path, ": ", GoRemoveError(link_path, errno)));
  }
  return Step("remove", link_path, "", status);
}

absl::Status VolumePathHandler::RemoveMapPath(const std::string& map_path) {
  if (map_path.empty()) return absl::InvalidArgumentError("failed to remove map path. mapPath is empty");
  if (absl::Status s = RemoveAll(map_path); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("failed to remove directory ", map_path, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> VolumePathHandler::GetDeviceBindMountRefs(
    const std::string& map_path) {
  DIR* dir = opendir(map_path.c_str());
  if (dir == nullptr) {
    return absl::Status(errno == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInternal,
                        GoPathError("open", map_path, errno));
  }
  std::vector<std::string> refs;
  while (dirent* entry = readdir(dir)) {
    const std::string path = absl::StrCat(map_path, "/", entry->d_name);
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && IsDevice(st)) refs.push_back(path);
  }
  closedir(dir);
  return refs;
}

absl::Status VolumePathHandler::AttachFileDevice(const std::string& path) {
  absl::StatusOr<std::optional<std::string>> existing = hostutil::FindLoopDevice(path);
  if (!existing.ok()) {
    return Step("attach loop device", path, "",
                absl::InternalError(absl::StrCat("GetLoopDevice failed for path ", path, ": ",
                                                 existing.status().message())));
  }
  if (existing->has_value()) {
    Record("attach loop device", path, **existing, "done: it is attached already");
    return absl::OkStatus();
  }
  if (!change_host_) return Skipped("attach loop device", path, "");
  absl::StatusOr<std::string> device = hostutil::AttachLoopDevice(path);
  if (!device.ok()) {
    return Step("attach loop device", path, "",
                absl::Status(device.status().code(),
                             absl::StrCat("makeLoopDevice failed for path ", path, ": ",
                                          device.status().message())));
  }
  return Step("attach loop device", path, *device, absl::OkStatus());
}

absl::Status VolumePathHandler::DetachFileDevice(const std::string& path) {
  absl::StatusOr<std::optional<std::string>> device = hostutil::FindLoopDevice(path);
  if (!device.ok()) {
    return Step("detach loop device", path, "",
                absl::InternalError(absl::StrCat("GetLoopDevice failed for path ", path, ": ",
                                                 device.status().message())));
  }
  if (!device->has_value()) {
    // "couldn't find loopback device which takes file descriptor lock. Skip detaching device."
    Record("detach loop device", path, "", "done: there is none");
    return absl::OkStatus();
  }
  if (!change_host_) return Skipped("detach loop device", path, **device);
  absl::Status detached = hostutil::DetachLoopDevice(**device);
  if (!detached.ok()) {
    detached = absl::Status(detached.code(), absl::StrCat("removeLoopDevice failed for path ",
                                                          path, ": ", detached.message()));
  }
  return Step("detach loop device", path, **device, detached);
}

absl::Status MapBlockVolume(VolumePathHandler* handler, const std::string& device_path,
                            const std::string& global_map_path,
                            const std::string& pod_volume_map_path,
                            const std::string& volume_map_name, const std::string& pod_uid) {
  if (absl::Status s = handler->MapDevice(device_path, global_map_path, pod_uid, true); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("blkUtil.MapDevice failed. devicePath: ", device_path,
                                               ", globalMapPath:", global_map_path, ", podUID: ",
                                               pod_uid, ", bindMount: true: ", s.message()));
  }
  if (absl::Status s = handler->MapDevice(device_path, pod_volume_map_path, volume_map_name, false);
      !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("blkUtil.MapDevice failed. devicePath: ", device_path,
                                     ", podVolumeMapPath:", pod_volume_map_path,
                                     ", volumeMapName: ", volume_map_name,
                                     ", bindMount: false: ", s.message()));
  }
  const std::string locked = absl::StrCat(global_map_path, "/", pod_uid);
  if (absl::Status s = handler->AttachFileDevice(locked); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("blkUtil.AttachFileDevice failed. globalMapPath:",
                                               global_map_path, ", podUID: ", pod_uid, ": ",
                                               s.message()));
  }
  return absl::OkStatus();
}

absl::Status UnmapBlockVolume(VolumePathHandler* handler, const std::string& global_unmap_path,
                              const std::string& pod_device_unmap_path,
                              const std::string& volume_map_name, const std::string& pod_uid) {
  // kubelet's texts say DetachFileDevice for all three failures.
  if (absl::Status s = handler->DetachFileDevice(absl::StrCat(global_unmap_path, "/", pod_uid));
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("blkUtil.DetachFileDevice failed. globalUnmapPath:",
                                               global_unmap_path, ", podUID: ", pod_uid, ": ",
                                               s.message()));
  }
  if (absl::Status s = handler->UnmapDevice(pod_device_unmap_path, volume_map_name, false);
      !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("blkUtil.DetachFileDevice failed. podDeviceUnmapPath:",
                                     pod_device_unmap_path, ", volumeMapName: ", volume_map_name,
                                     ", bindMount: false: ", s.message()));
  }
  if (absl::Status s = handler->UnmapDevice(global_unmap_path, pod_uid, true); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("blkUtil.DetachFileDevice failed. globalUnmapPath:",
                                               global_unmap_path, ", podUID: ", pod_uid,
                                               ", bindMount: true: ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EvalHostSymlinks(const std::string& path) {
  // hostutil_linux.go EvalHostSymlinks is filepath.EvalSymlinks: its error, Go's words.
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::Status(errno == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInternal,
                        GoPathError("lstat", path, errno));
  }
  return std::string(resolved);
}

}  // namespace ndr::kubelet

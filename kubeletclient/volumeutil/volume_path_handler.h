// How kubelet maps a raw block volume into a pod once the driver has published it, and unmaps it
// (pkg/volume/util/util.go MapBlockVolume, UnmapBlockVolume; pkg/volume/util/volumepathhandler).
//
// Mapping, for the device the driver published at <publish path>:
//   1. a bind mount of it at the global map path, <root>/plugins/kubernetes.io/csi/volumeDevices/
//      <pv>/dev/<pod uid> (an empty file is created there first),
//   2. the pod's symbolic link to it, <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>,
//   3. a loop device over the bind mount, which holds the device open ("file descriptor lock").
// Unmapping undoes them in the other order: the loop device, the symbolic link, the bind mount
// (unmounted only if it is a device, then the file removed), as kubelet does.
//
// Bind mounts and loop devices need root on the host. A handler that may not change the host
// (NodeOptions.change_host) still makes and removes the files and links, but skips those two and
// says so; nothing fails silently. Every step is recorded, with what happened to it, for the
// command's report. Error texts are kubelet's. Thread-compatible.
#ifndef NDR_KUBELETCLIENT_VOLUMEUTIL_VOLUME_PATH_HANDLER_H_
#define NDR_KUBELETCLIENT_VOLUMEUTIL_VOLUME_PATH_HANDLER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

// One step kubelet takes on the host, and what became of it.
struct HostStep {
  std::string operation;  // "bind mount", "symlink", "attach loop device", ...
  std::string path;       // what it was done to
  std::string detail;     // the source of a bind mount, a link's target, a loop device
  std::string result;     // "done", "skipped: <why>", or "failed: <error>"
  size_t after_calls = 0;  // how many calls to the driver came before it (for the report)
};

class VolumePathHandler {
 public:
  // `change_host`: make bind mounts and loop devices; otherwise skip them, saying `skip_reason`.
  // Steps are appended to `steps`; `calls_so_far`, if given, says how many calls to the driver
  // came before each (HostStep::after_calls), so that a report can tell the whole order.
  VolumePathHandler(bool change_host, std::string skip_reason, std::vector<HostStep>* steps,
                    std::function<size_t()> calls_so_far = nullptr);

  // MapDevice: `map_path` (created 0750) / `link_name` becomes a bind mount of `device_path`, or a
  // symbolic link to it.
  absl::Status MapDevice(const std::string& device_path, const std::string& map_path,
                         const std::string& link_name, bool bind_mount);
  // UnmapDevice: the opposite.
  absl::Status UnmapDevice(const std::string& map_path, const std::string& link_name,
                           bool bind_mount);
  // RemoveMapPath: `map_path` and everything in it (os.RemoveAll).
  absl::Status RemoveMapPath(const std::string& map_path);
  // GetDeviceBindMountRefs: the device files in `map_path`, one for each pod still mapping it.
  absl::StatusOr<std::vector<std::string>> GetDeviceBindMountRefs(const std::string& map_path);
  // AttachFileDevice: a loop device over `path`, unless it has one.
  absl::Status AttachFileDevice(const std::string& path);
  // DetachFileDevice: `path`'s loop device, if any, detached.
  absl::Status DetachFileDevice(const std::string& path);

 private:
  // Records a step; returns `status`.
  absl::Status Step(std::string operation, std::string path, std::string detail,
                    const absl::Status& status);
  absl::Status Skipped(std::string operation, std::string path, std::string detail);
  void Record(std::string operation, std::string path, std::string detail, std::string result);

  const bool change_host_;
  const std::string skip_reason_;
  std::vector<HostStep>* const steps_;
  const std::function<size_t()> calls_so_far_;
};

// util.MapBlockVolume: steps 1 to 3 above, with kubelet's error texts.
absl::Status MapBlockVolume(VolumePathHandler* handler, const std::string& device_path,
                            const std::string& global_map_path,
                            const std::string& pod_volume_map_path,
                            const std::string& volume_map_name, const std::string& pod_uid);

// util.UnmapBlockVolume.
absl::Status UnmapBlockVolume(VolumePathHandler* handler, const std::string& global_unmap_path,
                              const std::string& pod_device_unmap_path,
                              const std::string& volume_map_name, const std::string& pod_uid);

// hostutil EvalHostSymlinks (Go's filepath.EvalSymlinks): `path` with every symbolic link
// resolved; an error ("lstat <path>: no such file or directory") if it does not exist.
absl::StatusOr<std::string> EvalHostSymlinks(const std::string& path);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_VOLUMEUTIL_VOLUME_PATH_HANDLER_H_

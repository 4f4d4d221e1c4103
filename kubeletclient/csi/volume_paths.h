// Every path kubeletclient uses under kubelet's root directory (--root-dir) is made here, in
// kubelet's layout (pkg/volume/csi/csi_mounter.go, csi_util.go; pkg/kubelet/kubelet_getters.go),
// and no path that would leave the root is ever returned.
//
// The objects the parts come from are validated first (object_validation.h), so a part can
// never be "..", hold a '/', or be empty; this is the second line of defence, for what slips past
// the first (a validation bug, a file read back from disk, a symbolic link planted in the tree).
// PathUnderRoot joins the parts, normalises the result lexically and refuses it unless it is
// strictly inside the root; then it resolves the deepest part of the result that exists and
// refuses it unless that, too, is inside the root as resolved (a symbolic link inside the tree
// pointing out of it). Errors are InvalidArgument and name the root, the parts and the rule.
//
// Pure functions of their arguments and of the filesystem; thread-safe.
#ifndef NDR_KUBELETCLIENT_CSI_VOLUME_PATHS_H_
#define NDR_KUBELETCLIENT_CSI_VOLUME_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

// `root` + "/" + the parts joined by "/", checked as above.
absl::StatusOr<std::string> PathUnderRoot(const std::string& root,
                                          const std::vector<std::string>& parts);

// `path` with "." parts, empty parts and ".." parts (with the part before each) removed, as Go's
// filepath.Clean; ".." at the top of an absolute path stays at "/".
std::string CleanPath(const std::string& path);

// <root>/pods/<uid>/volumes/kubernetes.io~csi: kubelet's directory of a pod's CSI volumes.
absl::StatusOr<std::string> PodCsiVolumesDir(const std::string& root, const std::string& pod_uid);

// The files of one CSI volume of a pod, named after the pod's volume (inline) or the PV.
struct PodVolumePaths {
  std::string dir;       // <root>/pods/<uid>/volumes/kubernetes.io~csi/<spec name>
  std::string mount;     // <dir>/mount: the NodePublishVolume target path
  std::string vol_data;  // <dir>/vol_data.json
};
absl::StatusOr<PodVolumePaths> PodVolumePathsFor(const std::string& root, const std::string& pod_uid,
                                                 const std::string& spec_name);

// The device directory of a persistent volume on this node (csi_attacher.go makeDeviceMountPath):
// <root>/plugins/kubernetes.io/csi/<driver>/<hex SHA-256 of the handle>, holding vol_data.json
// and globalmount/, the NodeStageVolume staging path. kubelet leaves the driver's directory when
// it removes a device directory.
struct DevicePaths {
  std::string dir;
  std::string globalmount;
  std::string vol_data;
};
absl::StatusOr<DevicePaths> DevicePathsFor(const std::string& root, const std::string& driver,
                                           const std::string& handle);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VOLUME_PATHS_H_

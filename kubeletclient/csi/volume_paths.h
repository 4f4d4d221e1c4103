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

// `root` + "/" + the parts joined by "/", checked as above. With `follow_leaf` false the last
// part itself is not resolved, only the directories above it: for a path that is a symbolic
// link by design (a block volume's pod entry, a driver's publish file that links to a device).
absl::StatusOr<std::string> PathUnderRoot(const std::string& root,
                                          const std::vector<std::string>& parts,
                                          bool follow_leaf = true);

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
  std::string root;      // the root directory, clean: what is made or written here goes beneath it
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
  std::string root;  // the root directory, clean: what is made or written here goes beneath it
};
absl::StatusOr<DevicePaths> DevicePathsFor(const std::string& root, const std::string& driver,
                                           const std::string& handle);

// The files of a raw block volume (csi_block.go, csi_util.go, kubelet_getters.go), all named after
// the PV:
//   <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv>       NodeStageVolume's path
//   <root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<uid> NodePublishVolume's: a file
//   <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data/vol_data.json
//   <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<uid>     the bind mount (global map)
//   <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>            the pod's symbolic link
// kubelet's own layout lets a PV named "staging" or "publish" share a directory with every block
// volume's staging or publish path; BlockPathsFor refuses those two names.
struct BlockPaths {
  std::string staging;         // NodeStageVolume's staging_target_path (a directory)
  std::string publish_dir;     // volumeDevices/publish/<pv>: kubelet creates it
  std::string publish;         // publish_dir/<uid>: NodePublishVolume's target, the driver's file
  std::string volume_dir;      // volumeDevices/<pv>
  std::string global_map;      // volumeDevices/<pv>/dev
  std::string global_map_pod;  // volumeDevices/<pv>/dev/<uid>
  std::string data_dir;        // volumeDevices/<pv>/data
  std::string vol_data;        // volumeDevices/<pv>/data/vol_data.json
  std::string pod_map_dir;     // pods/<uid>/volumeDevices/kubernetes.io~csi
  std::string pod_map;         // pod_map_dir/<pv>
  std::string root;            // the root directory, clean: what is made or written goes beneath
};
absl::StatusOr<BlockPaths> BlockPathsFor(const std::string& root, const std::string& pod_uid,
                                         const std::string& spec_name);

// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi: where a pod's block volumes are listed.
absl::StatusOr<std::string> PodCsiVolumeDevicesDir(const std::string& root,
                                                   const std::string& pod_uid);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VOLUME_PATHS_H_

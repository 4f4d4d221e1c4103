// kubelet's vol_data.json files (pkg/volume/csi/csi_util.go: saveVolumeData, loadVolumeData), in
// its exact bytes: Go's json.Encoder of a map[string]string, that is compact JSON with the keys
// in byte order, '<', '>' and '&' escaped as \u003c, \u003e and \u0026, control characters as \n,
// \r, \t or \u00XX, and a newline at the end.
//
// Loading treats the file as hostile: it was read back from disk. It must be at most 64 KiB of
// one JSON object of strings, and the fields a caller names must be there; LoadVolumeRef also
// checks the driver name and the handle by the rules their objects follow (object_validation.h).
// Errors name the file. Thread-safe.
#ifndef NDR_KUBELETCLIENT_CSI_VOL_DATA_H_
#define NDR_KUBELETCLIENT_CSI_VOL_DATA_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

// vol_data.json's keys.
inline constexpr char kVolDataSpecVolId[] = "specVolID";
inline constexpr char kVolDataVolumeHandle[] = "volumeHandle";
inline constexpr char kVolDataDriverName[] = "driverName";
inline constexpr char kVolDataNodeName[] = "nodeName";
inline constexpr char kVolDataAttachmentId[] = "attachmentID";
inline constexpr char kVolDataLifecycleMode[] = "volumeLifecycleMode";
inline constexpr char kVolDataSeLinuxMountContext[] = "seLinuxMountContext";

using VolData = std::map<std::string, std::string>;

// The bytes Go's json.Encoder writes for `data`.
std::string EncodeVolData(const VolData& data);

// Writes `data` to `path` (through a temporary file and a rename).
absl::Status SaveVolData(const std::string& path, const VolData& data);
// The same inside the root directory `root` (volume_paths.h): the directory it goes in is opened
// beneath `root` without following a symbolic link (beneath.h WriteFileAtomicallyUnder).
absl::Status SaveVolData(const std::string& root, const std::string& path, const VolData& data);

// Reads `path`: NotFound if it does not exist, InvalidArgument if it is not what kubelet writes.
absl::StatusOr<VolData> LoadVolData(const std::string& path);

// The driver and handle a vol_data.json records, each checked as in an object.
struct VolumeRef {
  std::string driver;
  std::string handle;
  VolData data;  // everything the file holds
};
absl::StatusOr<VolumeRef> LoadVolumeRef(const std::string& path);

// kubelet's removeMountDir (csi_util.go): removes the (empty) directory `mount_path`, then
// vol_data.json beside it, then their parent directory; none of them recursively, and a missing
// one is fine. (kubelet first checks that `mount_path` is not a mount point; kubeletclient
// mounts nothing, and a driver's leftover mount makes the removal fail as it would there.)
absl::Status RemoveMountDir(const std::string& mount_path);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_VOL_DATA_H_

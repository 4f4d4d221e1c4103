// kubelet's CSI block mapper (pkg/volume/csi/csi_block.go, and csi_plugin.go
// NewBlockVolumeMapper): raw block volumes, which a pod gets as a device rather than a mounted
// file system. Paths are volume_paths.h BlockPaths.
//
//   SetUpDevice:    NodeGetCapabilities (STAGE_UNSTAGE_VOLUME); for a driver that stages, the
//                   nodeStageSecretRef, the staging directory (0750) and NodeStageVolume with a
//                   block capability, no mount flags. On a final error, the volume's directories
//                   go (cleanupOrphanDeviceFiles).
//   MapPodDevice:   the publish directory (0750), then NodePublishVolume at publish/<pv>/<uid>,
//                   a file the driver creates, with the staging path even for a driver that does
//                   not stage; no mount flags, no fsGroup, no tokens.
//   UnmapPodDevice: NodeUnpublishVolume at the publish path (whether or not it still exists).
//   TearDownDevice: if the staging directory exists, NodeGetCapabilities and NodeUnstageVolume,
//                   then the staging directory goes; then cleanupOrphanDeviceFiles: the (empty)
//                   publish directory, the staging path and volumeDevices/<pv> with its data.
//
// Before SetUpDevice, NewBlockVolumeMapper writes volumeDevices/<pv>/data/vol_data.json
// (specVolID, volumeHandle, driverName, nodeName, attachmentID), which UnmapDevice reads back.
#ifndef NDR_KUBELETCLIENT_CSI_CSI_BLOCK_H_
#define NDR_KUBELETCLIENT_CSI_CSI_BLOCK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/volume_paths.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"

namespace ndr::kubelet {

// NewBlockVolumeMapper's data directory and vol_data.json.
absl::Status SaveBlockVolumeData(const VolumePlan& plan);

// SetUpDevice, as above. `objects` holds the nodeStageSecretRef's Secret. Errors are wrapped as
// the operation generator wraps them ("MapVolume.SetUpDevice failed for volume ...").
absl::Status SetUpDevice(const VolumePlan& plan, const ObjectSet& objects,
                         const std::string& pod_ns, CsiNodeClient* client);

// MapPodDevice, as above ("MapVolume.MapPodDevice failed for volume ...").
absl::Status MapPodDevice(const VolumePlan& plan, CsiNodeClient* client);

// UnmapPodDevice ("UnmapVolume.UnmapPodDevice failed for volume ...").
absl::Status UnmapPodDevice(const BlockPaths& paths, const std::string& handle,
                            const std::string& spec_name, CsiNodeClient* client);

// TearDownDevice ("UnmapDevice.TearDownDevice failed for volume ..."). What the clean-up could
// not remove (kubelet only logs it) is added to `notes`.
absl::Status TearDownDevice(const BlockPaths& paths, const std::string& handle,
                            const std::string& spec_name, CsiNodeClient* client,
                            std::vector<std::string>* notes);

// cleanupOrphanDeviceFiles; errors are returned, kubelet logs them.
absl::Status CleanupOrphanDeviceFiles(const BlockPaths& paths);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_BLOCK_H_

// kubelet's CSI mounter (pkg/volume/csi/csi_mounter.go): SetUp publishes a volume for a pod at
// <pod volume dir>/mount, TearDown unpublishes it.
//
// SetUp, as kubelet's SetUpAt: for a persistent volume asks NodeGetCapabilities for
// STAGE_UNSTAGE_VOLUME (the staging path is sent only if the driver stages); creates the pod's
// volume directory (0750; the mount directory is the driver's); asks for VOLUME_MOUNT_GROUP (the
// pod's fsGroup is delegated to the driver if so); writes vol_data.json; sends
// NodePublishVolume; on a final error removes what it created (removeMountDir). If the driver
// did not take the fsGroup and the volume allows it (supportsFSGroup: the CSIDriver's
// fsGroupPolicy, the fs type, ReadWriteOnce, not read-only), kubelet applies the fsGroup to the
// files itself (pkg/volume/volume_linux.go SetVolumeOwnership), and so does SetUp.
#ifndef NDR_KUBELETCLIENT_CSI_CSI_MOUNTER_H_
#define NDR_KUBELETCLIENT_CSI_CSI_MOUNTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/token/token_manager.h"

namespace ndr::kubelet {

// SetUp as above. With `tokens`, the service-account tokens of the driver's tokenRequests go into
// the volume context (podServiceAccountTokenAttrs), and `notes` says which were minted and which
// reused, never what they are.
absl::Status SetUp(const VolumePlan& plan, CsiNodeClient* client,
                   token::TokenManager* tokens = nullptr,
                   std::vector<std::string>* notes = nullptr);

// csi_mounter.go podServiceAccountTokenAttrs: for a driver with tokenRequests, the value of
// csi.storage.k8s.io/serviceAccount.tokens: JSON, audience -> {"token", "expirationTimestamp"},
// as Go's encoding/json writes map[string]TokenRequestStatus; nullopt for a driver without.
absl::StatusOr<std::optional<std::string>> ServiceAccountTokenAttr(
    const VolumePlan& plan, token::TokenManager* tokens, std::vector<std::string>* notes);

// TearDown of the pod volume at `paths`, as its vol_data.json (`ref`) describes it:
// NodeUnpublishVolume, then removeMountDir. A failed call removes nothing.
absl::Status TearDown(const PodVolumePaths& paths, const VolumeRef& ref,
                      const std::string& spec_name, CsiNodeClient* client);

// csi_mounter.go supportsFSGroup.
bool SupportsFsGroup(const VolumePlan& plan);

// pkg/volume/volume_linux.go SetVolumeOwnership with fsGroupChangePolicy Always: every file and
// directory under `dir` (symbolic links not followed) gets group `fs_group`; files get mode bits
// 0660 added (0440 if read-only), directories also setgid and 0110.
absl::Status SetVolumeOwnership(const std::string& dir, int64_t fs_group, bool read_only);
// The same for `dir` inside the root directory `root` (volume_paths.h): `dir` is opened beneath
// `root` without following a symbolic link, and every file below it is changed through a
// descriptor of its own, never by its path (beneath.h).
absl::Status SetVolumeOwnership(const std::string& root, const std::string& dir,
                                int64_t fs_group, bool read_only);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_MOUNTER_H_

// `kubeletclient republish`: what kubelet's periodic remount does to the volumes of drivers whose
// CSIDriver says requiresRepublish: true (csi_plugin.go RequiresRemount; the reconciler mounts
// them again on every pod sync, pkg/kubelet/volumemanager/reconciler): the whole mount operation
// once more (GenerateMountVolumeFunc: WaitForAttach, SetUp, the expansion check) without
// NodeStageVolume, since the device is mounted already; for block volumes, MapPodDevice again. So
// such drivers can refresh what they hand the pod, above all their service-account tokens, which
// kubelet's token manager hands out again until 80% of their lifetime has passed.
//
// Volumes of other drivers are untouched and reported as such. Each round is one pod sync;
// `rounds` rounds are `interval` apart on the clock tokens are minted and judged by. That clock
// is advanced, not waited for: kubeletclient shows in a moment what kubelet does over an hour.
#ifndef NDR_KUBELETCLIENT_REPUBLISH_H_
#define NDR_KUBELETCLIENT_REPUBLISH_H_

#include "absl/time/time.h"
#include "kubeletclient/volume_command.h"

namespace ndr::kubelet {

CommandOutcome RunRepublish(const PublishCommand& command, int rounds, absl::Duration interval);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_REPUBLISH_H_

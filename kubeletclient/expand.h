// `kubeletclient expand`: online expansion of a published volume, as kubelet's volume manager
// does it when a claim's PV has grown while a pod uses it (the populator's
// volumeRequiresFSResize, then operation_generator.go GenerateExpandInUseVolumeFunc and
// doOnlineExpansion; expander.h).
#ifndef NDR_KUBELETCLIENT_EXPAND_H_
#define NDR_KUBELETCLIENT_EXPAND_H_

#include <string>

#include "kubeletclient/volume_command.h"

namespace ndr::kubelet {

// Expands the pod's volume `volume` (its name in the pod). Refused before anything is sent: a
// volume that is not the CSI plugin's, not persistent, not published on this node, or whose
// claim asks for less than it has (volumes do not shrink). A volume whose claim is not below
// its PV needs nothing: reported, exit status 0.
CommandOutcome RunExpand(const PublishCommand& command, const std::string& volume);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_EXPAND_H_

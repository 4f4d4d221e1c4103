// The node half of kubelet's CSI attacher (pkg/volume/csi/csi_attacher.go): WaitForAttach, which
// reads the VolumeAttachment the external attacher wrote; MountDevice, which stages a persistent
// volume at its device directory; and UnmountDevice, which unstages it.
//
// MountDevice, as kubelet's: asks NodeGetCapabilities for STAGE_UNSTAGE_VOLUME; creates
// <device dir>/globalmount (0750) and writes the device's vol_data.json ({driverName,
// volumeHandle}) even when the driver does not stage; then, if it does, fetches the
// nodeStageSecretRef, asks for VOLUME_MOUNT_GROUP (the pod's fsGroup is delegated if so) and sends
// NodeStageVolume. On a final error it removes what it created (removeMountDir); on an error that
// leaves the driver's state uncertain (Canceled, DeadlineExceeded, Unavailable, ResourceExhausted,
// Aborted: operation_error.h IsFinalError) it leaves it, as kubelet does, and says so.
#ifndef NDR_KUBELETCLIENT_CSI_CSI_ATTACHER_H_
#define NDR_KUBELETCLIENT_CSI_CSI_ATTACHER_H_

#include <string>

#include "absl/status/status.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"

namespace ndr::kubelet {

// For a plan that needs attaching: the VolumeAttachment named AttachmentName(handle, driver,
// node) must be among `objects`, for this node, driver and PV, with status.attached; its
// status.attachmentMetadata becomes plan->publish_context. kubelet waits up to 10 minutes for
// status.attached; objects read from files do not change, so kubeletclient refuses at once with
// the text kubelet gives when that wait ends. Nothing is sent.
absl::Status WaitForAttach(const ObjectSet& objects, const std::string& node_name,
                           VolumePlan* plan);

// MountDevice as above. `objects` holds the nodeStageSecretRef's Secret.
absl::Status MountDevice(const VolumePlan& plan, const ObjectSet& objects, const std::string& pod_ns,
                         CsiNodeClient* client);

// UnmountDevice of the device directory `device`: its vol_data.json says what to unstage (none:
// nothing to do, as kubelet); NodeGetCapabilities, NodeUnstageVolume if the driver stages, then
// removeMountDir. A failed NodeUnstageVolume removes nothing.
absl::Status UnmountDevice(const DevicePaths& device, const std::string& spec_name,
                           CsiNodeClient* client);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_ATTACHER_H_

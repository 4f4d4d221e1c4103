// What kubelet would publish about the node's CSI drivers, as one JSON document:
//  - "csiNode": the storage.k8s.io/v1 CSINode object (drivers: name, nodeID, topologyKeys,
//    allocatable.count when the driver reported a limit);
//  - "annotations": the Node annotation csi.volume.kubernetes.io/nodeid (JSON map driver -> ID);
//  - "labels": the Node's topology labels, as kubelet's node-info manager sets them;
//  - "nodeStatus.csiDrivers": the Node.Status.CSIDrivers list of the "Node.Status usage for
//    CSI" design proposal for Kubernetes (name, nodeID, topologyKeys);
//  - "drivers": this client's own registry (endpoint, version, pod-info switch, socket), which
//    `kubeletclient publish` and tests read.
// Built with nlohmann-json; callers write it with WriteFileAtomically (files.h).
#ifndef NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_NODE_STATUS_H_
#define NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_NODE_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "kubeletclient/csi/driver_registry.h"

namespace ndr::kubelet {

inline constexpr char kNodeIdAnnotation[] = "csi.volume.kubernetes.io/nodeid";

// The JSON document for `drivers` on node `node_name`, pretty-printed.
std::string RenderNodeStatus(const std::string& node_name, const DriverRegistry::Snapshot& drivers);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_NODE_STATUS_H_

#include "registrar/kubelet_refusal.h"

#include "absl/strings/match.h"

namespace ndr::registrar {
namespace {

struct Marker {
  const char* text;  // found anywhere in the refusal
  const char* why;
};

// Causes no retry removes (kubelet v1.26.0 to v1.37.2).
constexpr Marker kPermanent[] = {
    // nodeinfomanager.go InstallCSIDriver: the driver's NodeGetInfo gave no node ID.
    {"driverNodeID must not be empty", "the driver's NodeGetInfo returned an empty node ID"},
    // nodeinfomanager.go updateTopologyLabels: a label of the Node holds another value.
    {"detected topology value collision",
     "a topology label of the Node already holds another value"},
    // nodeinfomanager.go updateNodeIDInNode: the Node's annotation is not valid JSON.
    {"csi.volume.kubernetes.io/nodeid\" annotation",
     "the Node's csi.volume.kubernetes.io/nodeid annotation cannot be parsed"},
    // The API server's 422 (a driver name, node ID or topology key it rejects) and 403.
    {" is invalid: ", "the API server rejects the driver's name, node ID or topology"},
    {" is forbidden: ", "the API server forbids kubelet the update"},
    // csi_plugin.go validateVersions; its version texts changed in v1.29 (apimachinery's
    // HighestSupportedVersion), both end in these words.
    {"Plugin returned an empty list for supported versions",
     "the registrar offered no supported version"},
    {"are supported. err=", "kubelet supports none of the versions offered"},
    {"Another driver with the same name is already registered",
     "kubelet already holds a registration of a driver with this name"},
    // csi_plugin.go newCsiDriverClient.
    {"driver name is empty", "the driver's name is empty"},
    // operation_generator.go: GetInfo's type is not one kubelet handles.
    {"no handler registered for plugin type", "kubelet has no handler for the plugin type"},
    // gRPC-Go's dial error inside NodeGetInfo's: nothing at --kubelet-registration-path, or
    // kubelet may not open it. Waiting does not move the socket (path_hints.h says which flag).
    {"connect: no such file or directory",
     "kubelet finds no driver socket at --kubelet-registration-path"},
    {"connect: permission denied",
     "kubelet may not open the driver socket at --kubelet-registration-path"},
    // The driver's own NodeGetInfo answers that will not change.
    {"rpc error: code = Unimplemented", "the driver does not implement NodeGetInfo"},
    {"rpc error: code = InvalidArgument", "the driver's NodeGetInfo refuses kubelet's request"},
};

// Causes that go away by themselves.
constexpr Marker kTransient[] = {
    // nodeinfomanager.go InstallCSIDriver: updateNode / updateCSINode gave up after their four
    // attempts (updateBackoff): the API server unreachable, slow, or conflicting.
    {"error updating Node object with CSI driver node info",
     "kubelet could not update the Node object (API server unreachable or busy)"},
    {"error updating CSINode object with CSI driver node info",
     "kubelet could not update the CSINode object (API server unreachable or busy)"},
    // v1.35 and later (ensureNodeOwnsCSINode): a CSINode of an earlier node of this name was
    // deleted; the next attempt makes it anew.
    {"was owned by different node", "kubelet replaced a CSINode left by an earlier node"},
    // csi_plugin.go: the CSI driver list changed under kubelet's feet.
    {"not found in the list of registered CSI drivers", "kubelet's driver list changed meanwhile"},
    // NodeGetInfo (csi_client.go nodeGetInfoV1) failed with any other code: the driver is
    // starting, overloaded or restarting.
    {"plugin registration failed with err: rpc error: code = ",
     "the driver's NodeGetInfo failed (driver starting or busy)"},
};

}  // namespace

KubeletRefusal ClassifyKubeletRefusal(absl::string_view error) {
  for (const Marker& marker : kPermanent) {
    if (absl::StrContains(error, marker.text)) return {RefusalKind::kPermanent, marker.why};
  }
  for (const Marker& marker : kTransient) {
    if (absl::StrContains(error, marker.text)) return {RefusalKind::kTransient, marker.why};
  }
  return {RefusalKind::kUnknown, "a reason kubelet v1.26 to v1.37 does not give"};
}

absl::string_view RefusalKindName(RefusalKind kind) {
  switch (kind) {
    case RefusalKind::kTransient: return "transient";
    case RefusalKind::kPermanent: return "permanent";
    case RefusalKind::kUnknown: break;
  }
  return "unknown";
}

}  // namespace ndr::registrar

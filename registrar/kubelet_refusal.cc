#include "registrar/kubelet_refusal.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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
    // An admission webhook's refusal (apiserver pkg/admission/plugin/webhook/errors): it denies
    // the same update next time.
    {"denied the request", "an admission webhook denies kubelet's update"},
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

// Causes that go away by themselves, and nothing else: a refusal is retried only when kubelet's
// text shows that the same registration succeeds once the API server or the driver answers. The
// rest ends the registrar, as the Go registrar ends on every refusal, so that a driver broken for
// good shows as a restarting pod rather than a healthy one that never registers.

// nodeinfomanager.go InstallCSIDriver: updateNode / updateCSINode gave up after their four
// attempts (updateBackoff), with every attempt's error after "caused by:". Retried only when one
// of them is the API server away, overloaded or conflicting:
constexpr Marker kApiUpdateFailed[] = {
    {"error updating Node object with CSI driver node info",
     "kubelet could not update the Node object (API server unreachable or busy)"},
    {"error updating CSINode object with CSI driver node info",
     "kubelet could not update the CSINode object (API server unreachable or busy)"},
};
constexpr const char* kApiServerAwayOrBusy[] = {
    // The connection (client-go over Go's net/http): nothing listens, the server went away
    // mid-request, or did not answer in time. kubelet's API client has no request timeout of its
    // own; its dialer gives up after 30 s (cmd/kubelet/app/server.go, v1.37.2).
    "connection refused", "connection reset by peer", "i/o timeout",
    "TLS handshake timeout", "no route to host", "network is unreachable",
    "http2: client connection lost", "Client.Timeout exceeded", "context deadline exceeded",
    "unexpected EOF", "use of closed network connection",
    // The API server's answers (apimachinery v0.37.2 pkg/api/errors NewGenericServerResponse:
    // 429, 503, 504, other 5xx, 409; apiserver pkg/server/filters: priority and fairness's 429,
    // the request timeout's 504), and etcd's own.
    "has asked us to try again later", "Too many requests, please try again later",
    "the server is currently unable to handle the request",
    "the server was unable to return a response in the time allotted",
    "Timeout: request did not complete within the allotted timeout", "an error on the server (",
    "the object has been modified", "the server reported a conflict", "etcdserver: request timed out",
    "etcdserver: leader changed",
};

// Other texts kubelet gives for what passes by itself.
constexpr Marker kTransient[] = {
    // v1.35 and later (ensureNodeOwnsCSINode): a CSINode of an earlier node of this name was
    // deleted; the next attempt makes it anew.
    {"was owned by different node", "kubelet replaced a CSINode left by an earlier node"},
    // csi_plugin.go: the CSI driver list changed under kubelet's feet.
    {"not found in the list of registered CSI drivers", "kubelet's driver list changed meanwhile"},
};

// The driver's NodeGetInfo (csi_client.go nodeGetInfoV1) failed with a gRPC code: retried only
// for the codes gRPC defines as "retry may help" (the driver starting, overloaded, restarting);
// any other is the driver's considered answer, and kubelet gives the same one next time.
constexpr char kNodeGetInfoFailed[] = "plugin registration failed with err: rpc error: code = ";
constexpr const char* kRetryableCodes[] = {"Unavailable", "DeadlineExceeded", "ResourceExhausted",
                                           "Aborted"};

}  // namespace

KubeletRefusal ClassifyKubeletRefusal(absl::string_view error) {
  for (const Marker& marker : kPermanent) {
    if (absl::StrContains(error, marker.text)) return {RefusalKind::kPermanent, marker.why};
  }
  for (const Marker& marker : kTransient) {
    if (absl::StrContains(error, marker.text)) return {RefusalKind::kTransient, marker.why};
  }
  for (const Marker& marker : kApiUpdateFailed) {
    if (!absl::StrContains(error, marker.text)) continue;
    for (const char* cause : kApiServerAwayOrBusy) {
      if (absl::StrContains(error, cause)) return {RefusalKind::kTransient, marker.why};
    }
    return {RefusalKind::kPermanent,
            absl::StrContains(marker.text, "CSINode")
                ? "kubelet could not update the CSINode object, for a reason that does not pass "
                  "by itself"
                : "kubelet could not update the Node object, for a reason that does not pass by "
                  "itself"};
  }
  if (const size_t at = error.find(kNodeGetInfoFailed); at != absl::string_view::npos) {
    absl::string_view code = error.substr(at + sizeof(kNodeGetInfoFailed) - 1);
    code = code.substr(0, code.find(' '));
    for (const char* retryable : kRetryableCodes) {
      if (code == retryable) {
        return {RefusalKind::kTransient,
                "the driver's NodeGetInfo failed (driver starting or busy)"};
      }
    }
    return {RefusalKind::kPermanent,
            absl::StrCat("the driver's NodeGetInfo failed with code ", code,
                         ", which does not say to retry")};
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

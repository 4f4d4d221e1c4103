// How a CSI request is shown: as JSON with the proto field names, its secrets' values replaced.
//
// Both sides of a comparison print requests this way: `kubeletclient publish` reports what it
// sent, and the sample driver's --record writes what it received (from kubeletclient, or from a
// real kubelet on a real node), so that the two can be compared line for line.
#ifndef NDR_API_CSI_JSON_H_
#define NDR_API_CSI_JSON_H_

#include <string>

#include "google/protobuf/message.h"

namespace ndr {

// The volume-context key under which kubelet hands a driver its service-account tokens
// (csi_mounter.go podServiceAccountTokenAttrs): a secret, never shown.
inline constexpr char kServiceAccountTokensKey[] = "csi.storage.k8s.io/serviceAccount.tokens";

// `message` as JSON with proto field names (fields at their default values left out, as
// protobuf's JSON printer does). The secrets of NodeStageVolume, NodePublishVolume and
// NodeExpandVolume requests keep their keys, their values read "(redacted)", and so does the
// service-account token attribute of a NodePublishVolume's volume context.
std::string RedactedCsiJson(const google::protobuf::Message& message);

}  // namespace ndr

#endif  // NDR_API_CSI_JSON_H_

// SHA-256 as lowercase hex, which kubelet uses for inline volume handles, attachment names and
// device directories (pkg/volume/csi: makeVolumeHandle, getAttachmentName, makeDeviceMountPath).
#ifndef NDR_KUBELETCLIENT_UTIL_SHA256_H_
#define NDR_KUBELETCLIENT_UTIL_SHA256_H_

#include <string>

namespace ndr::kubelet {

std::string Sha256Hex(const std::string& data);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_SHA256_H_

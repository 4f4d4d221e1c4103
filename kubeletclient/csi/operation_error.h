// How kubelet's operation generator words and judges a failed volume operation
// (pkg/volume/util/operationexecutor/operation_generator.go, pkg/volume/csi/csi_client.go).
#ifndef NDR_KUBELETCLIENT_CSI_OPERATION_ERROR_H_
#define NDR_KUBELETCLIENT_CSI_OPERATION_ERROR_H_

#include <string>

#include "absl/status/status.h"

namespace ndr::kubelet {

// `<operation> failed for volume "<spec name>" : <message>`, with the status's code.
absl::Status OperationFailed(const std::string& operation, const std::string& spec_name,
                             const absl::Status& status);

// kubelet's isFinalError: false for the codes after which the driver may still be working
// (Canceled, DeadlineExceeded, Unavailable, ResourceExhausted, Aborted), whose operations kubelet
// treats as uncertain and leaves in place.
bool IsFinalError(const absl::Status& status);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_OPERATION_ERROR_H_

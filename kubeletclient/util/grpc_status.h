// gRPC errors printed the way Go's gRPC prints them, so that texts kubelet would send match:
// "rpc error: code = Unavailable desc = connect: no such file or directory".
#ifndef NDR_KUBELETCLIENT_UTIL_GRPC_STATUS_H_
#define NDR_KUBELETCLIENT_UTIL_GRPC_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"

namespace ndr::kubelet {

// Go's codes.Code.String(): "OK", "Canceled", "Unknown", "InvalidArgument", ...
std::string GoCodeName(grpc::StatusCode code);

// "rpc error: code = <name> desc = <message>".
std::string GoRpcError(const grpc::Status& status);

// The same status as an absl::Status with `context: ` and the Go-style text.
absl::Status FromGrpc(const grpc::Status& status, const std::string& context);

// Why a unix socket at `path` cannot be dialled, as gRPC-Go says it in kubelet v1.26 (grpc-go
// v1.49: http2_client.go newHTTP2Client's "transport: Error while dialing %v", transport.go
// ConnectionError.Error's "connection error: desc = %q"):
//   connection error: desc = "transport: Error while dialing dial unix PATH: connect: ERRNO"
// with Go's lower-case errno text; nullopt when `path` can be connected to now.
std::optional<std::string> GoDialError(const std::string& path);

// A deadline `timeout` from now for a ClientContext.
std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_GRPC_STATUS_H_

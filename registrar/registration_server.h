// One gRPC server on one registration socket, serving RegistrationService and
// CSIRegistrationService.
//
// gRPC unlinks a unix socket by path both before it binds and when it shuts down, which would
// delete whatever socket another process has meanwhile put at the real path. So the server binds
// a private dot-file name in the same directory (kubelet ignores dot-files) and the socket is then
// renamed over the real path: replacing a stale socket is atomic, and gRPC's unlink at shutdown
// only ever hits the private name. The socket is created with the process umask, which the
// registrar sets to 077 before anything else, so it is never accessible to group or others.
//
// Stopping the server does not remove the real path; the owner calls RemoveIfOurs.
// Thread-compatible: Start and the destructor run on the registrar's main thread.
#ifndef NDR_REGISTRAR_REGISTRATION_SERVER_H_
#define NDR_REGISTRAR_REGISTRATION_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "registrar/reg_socket.h"
#include "registrar/services.h"

namespace ndr::registrar {

class RegistrationServer {
 public:
  // Serves on `path`. A missing path or a socket there (stale, or another process's) is fine; any
  // other file there is FailedPrecondition and stays untouched. gRPC keeps at most
  // `max_pollers` (at least 1) threads waiting for calls.
  static absl::StatusOr<std::unique_ptr<RegistrationServer>> Start(const std::string& path,
                                                                    const RegistrationInfo& info,
                                                                    NotifyCallback notify,
                                                                    int max_pollers = 2);
  ~RegistrationServer();  // Shuts the server down (waiting up to 1 s for calls in flight).

  const std::string& path() const { return path_; }
  const FileId& id() const { return id_; }
  const RegistrationInfo& info() const { return info_; }
  // Whether kubelet has called GetInfo on this socket (the health check's does not count).
  bool asked_for_info() const { return registration_.asked_for_info(); }

 private:
  RegistrationServer(std::string path, RegistrationInfo info, NotifyCallback notify);

  const std::string path_;
  const RegistrationInfo info_;
  RegistrationService registration_;
  CSIRegistrationService csi_registration_;
  std::unique_ptr<grpc::Server> server_;
  FileId id_;
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRATION_SERVER_H_

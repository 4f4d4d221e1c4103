#include "test/csidriver/serve.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/endpoint.h"
#include "logging/logging.h"
#include "grpcpp/grpcpp.h"
#include "test/csidriver/sample_controller.h"

namespace ndr::sample {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

absl::Status RemoveStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("stat ", path, ": ", strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; remove it or choose another --endpoint"));
  }
  if (unlink(path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("remove stale socket ", path, ": ", strerror(errno)));
  }
  NDR_LOG(INFO) << "Removed stale socket " << path;
  return absl::OkStatus();
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::Status Serve(const DriverOptions& options, const std::string& socket_path) {
  const std::string dir = socket_path.substr(0, socket_path.find_last_of('/'));
  struct stat st;
  if (!dir.empty() && (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    return absl::NotFoundError(
        absl::StrCat("directory ", dir, " of --endpoint does not exist; create it first"));
  }
  if (absl::Status s = RemoveStaleSocket(socket_path); !s.ok()) return s;

  IdentityService identity(options);
  NodeService node(options);
  ControllerService controller(/*refuse_block=*/options.filesystem_only, options.record);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(GrpcUnixTarget(socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(&identity);
  builder.RegisterService(&node);
  if (options.controller) builder.RegisterService(&controller);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::UnavailableError(absl::StrCat("listen ", socket_path, ": gRPC could not bind"));
  }
  NDR_LOG(INFO) << "Serving CSI driver " << options.name << " (node " << options.node_id << ") on "
            << socket_path;

  sigset_t set = TerminationSignals();
  int signal = 0;
  sigwait(&set, &signal);
  NDR_LOG(INFO) << "Received " << strsignal(signal) << ", shutting down";
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("remove ", socket_path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ndr::sample

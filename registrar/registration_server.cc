#include "registrar/registration_server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/endpoint.h"

namespace ndr::registrar {
namespace {

// A name in the same directory (rename needs one filesystem) that kubelet ignores.
std::string PrivateBindPath(const std::string& path) {
  static std::atomic<int> counter{0};
  const std::string dir = path.substr(0, path.find_last_of('/'));
  return absl::StrCat(dir, "/.ndr-", getpid(), "-", counter++, ".sock");
}

}  // namespace

RegistrationServer::RegistrationServer(std::string path, RegistrationInfo info,
                                       NotifyCallback notify)
    : path_(std::move(path)),
      info_(info),
      registration_(info, std::move(notify)),
      csi_registration_(info) {}

absl::StatusOr<std::unique_ptr<RegistrationServer>> RegistrationServer::Start(
    const std::string& path, const RegistrationInfo& info, NotifyCallback notify,
    int max_pollers) {
  if (Inspect(path, std::nullopt) == PathState::kNotASocket) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " exists and is not a socket; it was left untouched: remove it so that the "
              "registration socket can be created"));
  }
  const std::string bind_path = PrivateBindPath(path);
  if (absl::Status s = CheckSocketPathLength(bind_path, "temporary registration socket"); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (shorten --plugin-registration-path)"));
  }

  std::unique_ptr<RegistrationServer> server(new RegistrationServer(path, info, std::move(notify)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(GrpcUnixTarget(bind_path), grpc::InsecureServerCredentials());
  builder.RegisterService(&server->registration_);
  builder.RegisterService(&server->csi_registration_);
  // Kubelet makes a handful of calls per registration: one polling thread is plenty.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(1, max_pollers));
  // The sync server's pollers otherwise wake every 10 s to look for work; an hour is plenty.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 3600 * 1000);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) {
    unlink(bind_path.c_str());
    return absl::UnavailableError(absl::StrCat(
        "listen ", bind_path, ": gRPC could not bind a unix socket there (is the directory "
        "writable?)"));
  }
  struct stat st;
  if (lstat(bind_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return absl::InternalError(absl::StrCat("listen ", bind_path, ": no socket was created"));
  }
  if ((st.st_mode & 077) != 0) {
    // Cannot happen with umask 077; refuse rather than expose the socket.
    unlink(bind_path.c_str());
    return absl::InternalError(absl::StrCat("socket ", bind_path, " was created with mode ",
                                            absl::StrFormat("%04o", st.st_mode & 07777),
                                            "; refusing to expose it to group or others"));
  }
  // Re-check right before the rename: a regular file that appeared meanwhile stays untouched.
  if (Inspect(path, std::nullopt) == PathState::kNotASocket) {
    unlink(bind_path.c_str());
    return absl::FailedPreconditionError(absl::StrCat(
        path, " exists and is not a socket; it was left untouched: remove it so that the "
              "registration socket can be created"));
  }
  if (rename(bind_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(bind_path.c_str());
    return absl::InternalError(absl::StrCat("rename ", bind_path, " to ", path, ": ",
                                            strerror(err)));
  }
  server->id_ = FileId{st.st_dev, st.st_ino};
  return server;
}

RegistrationServer::~RegistrationServer() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
  }
}

}  // namespace ndr::registrar

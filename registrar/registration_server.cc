#include "registrar/registration_server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "api/endpoint.h"
#include "grpcpp/server_posix.h"
#include "logging/logging.h"

namespace ndr::registrar {
namespace {

using ::ndr::logging::Kv;

// A name in the same directory (rename needs one filesystem) that kubelet ignores.
std::string PrivateBindPath(const std::string& path) {
  static std::atomic<int> counter{0};
  const std::string dir = path.substr(0, path.find_last_of('/'));
  return absl::StrCat(dir, "/.ndr-", getpid(), "-", counter++, ".sock");
}

absl::Status NotASocketError(const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, " exists and is not a socket; it was left untouched: remove it so that the "
            "registration socket can be created"));
}

// A listening unix socket at `bind_path` (non-blocking, close-on-exec), or why not.
absl::StatusOr<int> Listen(const std::string& bind_path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  bind_path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    close(fd);
    unlink(bind_path.c_str());
    return absl::UnavailableError(absl::StrCat("listen ", bind_path, ": ", strerror(err),
                                               " (is the directory writable?)"));
  }
  return fd;
}

}  // namespace

RegistrationServer::RegistrationServer(std::string path, RegistrationInfo info,
                                       NotifyCallback notify, int max_pollers,
                                       absl::Duration idle_stop)
    : path_(std::move(path)),
      info_(info),
      max_pollers_(std::max(1, max_pollers)),
      idle_stop_(idle_stop),
      registration_(info, std::move(notify)),
      csi_registration_(info) {}

absl::StatusOr<std::unique_ptr<RegistrationServer>> RegistrationServer::Start(
    const std::string& path, const RegistrationInfo& info, NotifyCallback notify,
    int max_pollers, absl::Duration idle_stop) {
  if (Inspect(path, std::nullopt) == PathState::kNotASocket) return NotASocketError(path);
  const std::string bind_path = PrivateBindPath(path);
  if (absl::Status s = CheckSocketPathLength(bind_path, "temporary registration socket"); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (shorten --plugin-registration-path)"));
  }
  std::unique_ptr<RegistrationServer> server(
      new RegistrationServer(path, info, std::move(notify), max_pollers, idle_stop));
  absl::StatusOr<int> listening = Listen(bind_path);
  if (!listening.ok()) return listening.status();
  server->listen_fd_ = *listening;  // closed by the destructor from here on
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
    return NotASocketError(path);
  }
  if (rename(bind_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(bind_path.c_str());
    return absl::InternalError(absl::StrCat("rename ", bind_path, " to ", path, ": ",
                                            strerror(err)));
  }
  server->id_ = FileId{st.st_dev, st.st_ino};
  server->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->stop_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  // Kubelet connects as soon as the socket appears: gRPC is ready for it, as it was before gRPC
  // started on demand (the accepting thread stops it if nobody comes).
  server->StartGrpc();
  RegistrationServer* raw = server.get();
  server->acceptor_ = std::thread([raw] { raw->AcceptLoop(); });
  return server;
}

RegistrationServer::~RegistrationServer() {
  if (acceptor_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    acceptor_.join();
  }
  StopGrpc();
  for (int fd : {listen_fd_, stop_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void RegistrationServer::AcceptLoop() {
  absl::Time last_open = absl::Now();  // when a connection was last seen open
  bool accept_paused = false;          // out of descriptors: wait a moment before accepting
  while (true) {
    std::vector<pollfd> fds = {{listen_fd_, static_cast<short>(accept_paused ? 0 : POLLIN), 0},
                               {stop_fd_, POLLIN, 0}};
    // Only the peer's hang-up: gRPC reads the data, and POLLIN would spin until it has.
    for (int connection : open_) fds.push_back({connection, POLLRDHUP, 0});
    int timeout_ms = -1;  // nothing running, nothing to time: sleep until a connection comes
    if (accept_paused) {
      timeout_ms = 100;
    } else if (server_ != nullptr && open_.empty()) {
      const absl::Duration left = last_open + idle_stop_ - absl::Now();
      timeout_ms = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)))));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      NDR_LOG(ERROR) << "Registration socket: poll failed; no longer accepting connections"
                     << Kv("path", path_) << Kv("err", strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    // Connections whose peer has gone.
    std::vector<int> still_open;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents != 0) {
        close(fds[i].fd);
      } else {
        still_open.push_back(fds[i].fd);
      }
    }
    open_ = std::move(still_open);
    accept_paused = false;
    if ((fds[0].revents & POLLIN) != 0) {
      while (true) {
        const int connection =
            accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (connection >= 0) {
          Serve(connection);
          continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          NDR_LOG(WARNING) << "Registration socket: cannot accept a connection now"
                           << Kv("path", path_) << Kv("err", strerror(errno));
          accept_paused = true;
        }
        break;  // EAGAIN: all accepted; ECONNABORTED and the like: that one is gone
      }
    }
    if (!open_.empty()) last_open = absl::Now();
    if (server_ != nullptr && open_.empty() && absl::Now() >= last_open + idle_stop_) {
      NDR_VLOG(4) << "No connection on the registration socket for "
                  << absl::FormatDuration(idle_stop_) << "; stopping gRPC until the next one"
                  << Kv("path", path_);
      StopGrpc();
    }
  }
}

bool RegistrationServer::StartGrpc() {
  if (server_ == nullptr) {
    grpc::ServerBuilder builder;
    builder.RegisterService(&registration_);
    builder.RegisterService(&csi_registration_);
    // Kubelet makes a handful of calls per registration: one polling thread is plenty.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                max_pollers_);
    // The sync server's pollers otherwise wake every 10 s to look for work; an hour is plenty.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC,
                                3600 * 1000);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) {
      NDR_LOG(ERROR) << "Registration socket: gRPC's server did not start; the next connection "
                        "tries again"
                     << Kv("path", path_);
      return false;
    }
    grpc_running_ = true;
    NDR_VLOG(4) << "gRPC started for the registration socket" << Kv("path", path_);
  }
  return true;
}

void RegistrationServer::Serve(int connection) {
  if (!StartGrpc()) {
    close(connection);
    return;
  }
  // A duplicate tells when the peer hangs up; gRPC owns the original from here on. It is made by
  // dup3 onto a fresh descriptor of this thread's own (an eventfd), not by dup(2) or fcntl's
  // F_DUPFD: ThreadSanitizer takes the number dup(2) picks to be written without a new life
  // beginning, so that number's earlier life in another thread (libevent's, say) looks like a
  // race, and it does not see F_DUPFD's descriptor at all. dup3 over a descriptor created here
  // only reads what this thread just created.
  int watch = eventfd(0, EFD_CLOEXEC);
  if (watch >= 0 && dup3(connection, watch, O_CLOEXEC) < 0) {
    close(watch);
    watch = -1;
  }
  grpc::AddInsecureChannelFromFd(server_.get(), connection);
  if (watch >= 0) open_.push_back(watch);
}

void RegistrationServer::StopGrpc() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
    // gRPC's server and its threads are gone: the heap pages they freed go back to the kernel
    // (glibc keeps them otherwise), so that a registrar between kubelet's calls holds only its
    // own.
    malloc_trim(0);
  }
  grpc_running_ = false;
  for (int connection : open_) close(connection);
  open_.clear();
}

}  // namespace ndr::registrar

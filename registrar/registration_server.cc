#include "registrar/registration_server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
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
namespace registration_server_internal {

absl::StatusOr<uint64_t> KernelRandom() {
  uint64_t value = 0;
  // GRND_NONBLOCK: early in a node's boot the kernel's pool may not be initialised yet, and
  // getrandom would wait for it; these names need to differ, not to be secret.
  ssize_t n = getrandom(&value, sizeof(value), GRND_NONBLOCK);
  if (n == static_cast<ssize_t>(sizeof(value))) return value;
  const int err = n < 0 ? errno : EIO;
  // Not initialised yet (EAGAIN), or no getrandom (ENOSYS: an old kernel, a seccomp profile):
  // /dev/urandom never blocks.
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, &value, sizeof(value));
    close(fd);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
  }
  return absl::InternalError(absl::StrCat(
      "getrandom: ", strerror(err),
      "; /dev/urandom could not be read either: no name for the temporary registration socket"));
}

std::string TemporarySocketPath(const std::string& dir, uint64_t random) {
  return absl::StrFormat("%s/.ndr-%08x.sock", dir, static_cast<uint32_t>(random));
}

absl::StatusOr<TemporarySocket> BindTemporarySocket(
    const std::string& dir, const std::function<absl::StatusOr<uint64_t>()>& random) {
  // A taken name is another process's (bind never replaces a file); with 32 random bits a second
  // one taken means something other than chance is at work, and a few draws are plenty.
  constexpr int kDraws = 4;
  for (int draw = 0; draw < kDraws; ++draw) {
    absl::StatusOr<uint64_t> number = random();
    if (!number.ok()) return number.status();
    TemporarySocket bound;
    bound.path = TemporarySocketPath(dir, *number);
    bound.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (bound.fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    bound.path.copy(address.sun_path, sizeof(address.sun_path) - 1);
    if (bind(bound.fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      const int err = errno;
      close(bound.fd);
      if (err == EADDRINUSE) {
        NDR_LOG(WARNING) << "Temporary registration socket name taken; left as it is, drawing "
                            "another"
                         << ::ndr::logging::Kv("path", bound.path);
        continue;
      }
      return absl::UnavailableError(absl::StrCat("bind ", bound.path, ": ", strerror(err),
                                                 " (is the directory writable?)"));
    }
    struct stat st;
    if (lstat(bound.path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      close(bound.fd);
      return absl::InternalError(absl::StrCat("bind ", bound.path, ": no socket was created"));
    }
    bound.id = FileId{st.st_dev, st.st_ino};
    bound.mode = st.st_mode;
    return bound;
  }
  return absl::UnavailableError(absl::StrCat(
      "bind: ", kDraws, " random temporary registration socket names in ", dir,
      " (.ndr-<8 hex digits>.sock) were all taken by other files; none of them was touched"));
}

}  // namespace registration_server_internal

namespace {

using ::ndr::logging::Kv;
using registration_server_internal::BindTemporarySocket;
using registration_server_internal::KernelRandom;
using registration_server_internal::TemporarySocket;
using registration_server_internal::TemporarySocketPath;

absl::Status NotASocketError(const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, " exists and is not a socket; it was left untouched: remove it so that the "
            "registration socket can be created"));
}

// Removes this process's temporary socket after a failure, unless something else is at its name
// by now.
void RemoveTemporary(const TemporarySocket& bound) {
  if (Inspect(bound.path, bound.id) == PathState::kOurs) unlink(bound.path.c_str());
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
  // A name in the same directory: rename needs one filesystem.
  const std::string dir = path.substr(0, path.find_last_of('/'));
  // Every temporary name is as long as this one.
  if (absl::Status s = CheckSocketPathLength(TemporarySocketPath(dir, 0),
                                             "temporary registration socket");
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (shorten --plugin-registration-path)"));
  }
  std::unique_ptr<RegistrationServer> server(
      new RegistrationServer(path, info, std::move(notify), max_pollers, idle_stop));
  absl::StatusOr<TemporarySocket> bound = BindTemporarySocket(dir, KernelRandom);
  if (!bound.ok()) return bound.status();
  server->listen_fd_ = bound->fd;  // closed by the destructor from here on
  // Every failure from here on removes the temporary socket: this process bound it.
  const auto fail = [&bound](absl::Status status) {
    RemoveTemporary(*bound);
    return status;
  };
  if ((bound->mode & 077) != 0) {
    // Cannot happen with umask 077; refuse rather than expose the socket.
    return fail(absl::InternalError(absl::StrCat(
        "socket ", bound->path, " was created with mode ",
        absl::StrFormat("%04o", bound->mode & 07777),
        "; refusing to expose it to group or others")));
  }
  if (listen(bound->fd, SOMAXCONN) != 0) {
    return fail(absl::UnavailableError(
        absl::StrCat("listen ", bound->path, ": ", strerror(errno))));
  }
  // Re-check right before the rename: a regular file that appeared meanwhile stays untouched.
  if (Inspect(path, std::nullopt) == PathState::kNotASocket) return fail(NotASocketError(path));
  if (rename(bound->path.c_str(), path.c_str()) != 0) {
    return fail(absl::InternalError(
        absl::StrCat("rename ", bound->path, " to ", path, ": ", strerror(errno))));
  }
  server->id_ = bound->id;
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

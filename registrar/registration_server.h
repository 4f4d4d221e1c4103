// One registration socket, serving RegistrationService and CSIRegistrationService with gRPC, and
// gRPC only while someone is connected.
//
// The registrar listens on the socket itself and hands each accepted connection to a gRPC server
// (grpc::AddInsecureChannelFromFd), which runs from the socket's creation (kubelet connects at
// once) and whenever a connection comes, and stops once no connection has been open for
// `idle_stop`. With the server gone and nothing else of gRPC alive, gRPC shuts down and its
// threads end: gRPC 1.51's two timer threads otherwise wake every second for as long as the
// process lives (docs/figures.md, "Idle"), while a registered registrar has nothing to do until
// kubelet calls again. On the wire nothing changes: the same HTTP/2 gRPC on the same socket, to a
// client that connects at any time.
//
// The socket is bound under a temporary dot-file name in the same directory (kubelet ignores
// dot-files) and then renamed over the real path, so replacing a stale socket is atomic. It is
// created with the process umask, which the registrar sets to 077 before anything else, so it is
// never accessible to group or others.
//
// The temporary name is .ndr-<8 hex digits>.sock, 32 bits from the kernel's random numbers:
// a name no other process draws, where the process ID would not do, as every registrar in a
// container is PID 1 and several start together in one directory (a node's boot, several CSI
// drivers). bind never replaces a file, so a name found taken is another process's: it is never
// removed, another name is drawn. The name is no longer than the process-ID one of a PID in the
// millions, so a registration directory whose path fitted before still fits.
// The temporary socket is removed only by the process that bound it, when it fails after the bind
// (listen, mode, rename). The Go registrar (v2.17.0, nodeRegister) has no temporary name: it
// removes whatever is at the real path and listens there.
//
// A temporary socket left by a registrar killed between its bind and its rename stays where it
// is: a dot-file kubelet ignores, at a name nobody draws again. Nothing tells it apart for sure
// from the socket of a registrar that bound a moment ago and does not listen yet (both refuse
// connections; an age is a guess), and removing that one would bring back the very failure this
// naming prevents; a file left by a rare kill costs nothing.
//
// Stopping the server does not remove the real path; the owner calls RemoveIfOurs.
// Thread-compatible: Start and the destructor run on the registrar's main thread; connections are
// accepted on a thread of the server's own.
#ifndef NDR_REGISTRAR_REGISTRATION_SERVER_H_
#define NDR_REGISTRAR_REGISTRATION_SERVER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "registrar/reg_socket.h"
#include "registrar/services.h"

namespace ndr::registrar {

// How long gRPC keeps running after the last connection closed: a moment, so that the calls of one
// exchange (kubelet's GetInfo and NotifyRegistrationStatus, a client that re-dials at once) find it
// up, and short beside the seconds between liveness probes, so that a registrar probed every
// second holds gRPC's nine threads a quarter of the time rather than all of it. A connection that
// comes later starts gRPC again (a few hundred microseconds); nothing on the wire changes.
inline constexpr absl::Duration kGrpcIdleStop = absl::Milliseconds(250);

class RegistrationServer {
 public:
  // Serves on `path`. A missing path or a socket there (stale, or another process's) is fine; any
  // other file there is FailedPrecondition and stays untouched. gRPC keeps at most
  // `max_pollers` (at least 1) threads waiting for calls while it runs.
  static absl::StatusOr<std::unique_ptr<RegistrationServer>> Start(
      const std::string& path, const RegistrationInfo& info, NotifyCallback notify,
      int max_pollers = 2, absl::Duration idle_stop = kGrpcIdleStop);
  // Stops accepting, and shuts gRPC's server down (waiting up to 1 s for calls in flight).
  ~RegistrationServer();

  const std::string& path() const { return path_; }
  const FileId& id() const { return id_; }
  const RegistrationInfo& info() const { return info_; }
  // Whether kubelet has called GetInfo on this socket (the health check's does not count).
  bool asked_for_info() const { return registration_.asked_for_info(); }
  // Whether a gRPC server runs for this socket now (a connection is open, or closed less than
  // `idle_stop` ago).
  bool grpc_running() const { return grpc_running_.load(); }

 private:
  RegistrationServer(std::string path, RegistrationInfo info, NotifyCallback notify,
                     int max_pollers, absl::Duration idle_stop);
  // The accepting thread: connections in, gRPC started and stopped.
  void AcceptLoop();
  // Starts gRPC's server unless it runs; false if it could not be started.
  bool StartGrpc();
  // Hands an accepted connection to gRPC, starting its server first if it is not running.
  void Serve(int connection);
  void StopGrpc();

  const std::string path_;
  const RegistrationInfo info_;
  const int max_pollers_;
  const absl::Duration idle_stop_;
  RegistrationService registration_;
  CSIRegistrationService csi_registration_;
  FileId id_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd: the destructor's signal to the accepting thread
  std::thread acceptor_;
  std::atomic<bool> grpc_running_{false};
  // Accepting thread only: the server, and a duplicate of each connection handed to it, watched
  // for the peer's hang-up (gRPC owns the original).
  std::unique_ptr<grpc::Server> server_;
  std::vector<int> open_;
};

// For RegistrationServer::Start and its tests.
namespace registration_server_internal {

// 64 random bits from the kernel: getrandom(2), which never blocks here, or /dev/urandom.
absl::StatusOr<uint64_t> KernelRandom();

// <dir>/.ndr-<the low 32 bits of random, as 8 hex digits>.sock
std::string TemporarySocketPath(const std::string& dir, uint64_t random);

// A unix socket bound (not listening yet) at a temporary name in `dir` of this process's own.
struct TemporarySocket {
  int fd = -1;  // non-blocking, close-on-exec; the caller's to close
  std::string path;
  FileId id;
  mode_t mode = 0;  // as created
};

// Binds a socket at TemporarySocketPath(dir, random()), drawing a new name, a few times at most,
// while the name is taken; what is at a taken name is left untouched.
absl::StatusOr<TemporarySocket> BindTemporarySocket(
    const std::string& dir, const std::function<absl::StatusOr<uint64_t>()>& random);

}  // namespace registration_server_internal
}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRATION_SERVER_H_

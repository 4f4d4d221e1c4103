// Kubelet's reconciler and operation executor for plugin sockets, driven by events instead of a
// one-second loop.
//
// For every socket the watcher reports, the manager runs the registration handshake; for every
// socket that goes away, the handler's DeRegisterPlugin; a socket created again is deregistered
// and registered again. At most one operation per socket runs at a time, each on a thread of its
// own, so a plugin that hangs costs only its own timeouts and never delays the others. A failed
// registration is retried with kubelet's exponential backoff (500 ms, doubling, at most 2 min 2 s),
// kept per socket path as kubelet keeps it: a socket created again at the path waits out what is
// left of it (except where kubelet deregisters the old plugin first, before 1.36), a socket at a
// new path is tried at once. A registered
// plugin whose process dies without removing its socket is deregistered too (LivenessWatch),
// which kubelet does not do.
//
// Thread-safe. Shutdown() cancels the calls in flight and waits for the workers.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_REGISTRATION_MANAGER_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_REGISTRATION_MANAGER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "kubeletclient/util/call_set.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/pluginmanager/liveness_watch.h"

namespace ndr::kubelet {

struct Backoff {
  absl::Duration initial = absl::Milliseconds(500);
  absl::Duration max = absl::Minutes(2) + absl::Seconds(2);
  // Whether a registration that failed after the plugin was validated (NodeGetInfo or the
  // CSINode update failed, or the success could not be told) is retried. kubelet 1.26 to 1.35
  // never retries it: GenerateRegisterPluginFunc has added the plugin to its actual state of
  // world, and the reconciler registers only sockets not there, until the socket is created
  // again (which is what the registrar's watchdog does). From 1.36.0 the plugin is removed again
  // and the failure returned, so it is retried with the backoff above
  // (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go, v1.26.15, v1.35.4;
  // v1.36.0, the same file in v1.36.1 and v1.36.3).
  bool retry_after_validation = true;
};

class RegistrationManager {
 public:
  RegistrationManager(HandlerMap handlers, HandshakeTimeouts timeouts, Backoff backoff = {});
  ~RegistrationManager();  // Shutdown()

  void SocketAdded(const std::string& path);
  void SocketRemoved(const std::string& path);
  void Shutdown();

 private:
  struct Socket {
    bool present = false;
    uint64_t generation = 0;  // bumped each time the socket is (re)created
    // The registration currently held, if any.
    bool registered = false;
    uint64_t registered_generation = 0;
    bool confirmed = false;  // the last handshake fully succeeded
    std::string name;
    PluginHandler* handler = nullptr;
    // Retry state after a failure.
    absl::Duration backoff = absl::ZeroDuration();
    absl::Time retry_at = absl::InfinitePast();
    bool worker = false;
    // Not retried until the socket is created again (Backoff::retry_after_validation false).
    bool settled = false;
  };

  void Kick(const std::string& path, Socket& socket);  // with mu_ held
  void Work(const std::string& path);

  const HandlerMap handlers_;
  const HandshakeTimeouts timeouts_;
  const Backoff backoff_;
  CallSet calls_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Socket> sockets_;  // guarded by mu_
  bool stopping_ = false;                  // guarded by mu_
  int workers_ = 0;                        // guarded by mu_

  // Last: destroyed first, since its thread calls SocketRemoved(), which uses the members above.
  LivenessWatch liveness_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_REGISTRATION_MANAGER_H_

// Kubelet's reconciler and operation executor for plugin sockets, driven by events instead of a
// one-second loop.
//
// For every socket the watcher reports, the manager runs the registration handshake; for every
// socket that goes away, the handler's DeRegisterPlugin; a socket created again is deregistered
// and registered again. At most one operation per socket runs at a time, each on a thread of its
// own, so a plugin that hangs costs only its own timeouts and never delays the others. A failed
// registration is retried with kubelet's exponential backoff (500 ms, doubling, at most 2 min 2 s);
// a change of the socket meanwhile (removed, created again) is acted on at once. A registered
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

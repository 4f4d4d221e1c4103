#include "kubeletclient/pluginmanager/registration_manager.h"

#include <algorithm>
#include <thread>

#include "absl/time/clock.h"
#include "logging/logging.h"

namespace ndr::kubelet {

RegistrationManager::RegistrationManager(HandlerMap handlers, HandshakeTimeouts timeouts,
                                         Backoff backoff)
    : handlers_(std::move(handlers)),
      timeouts_(timeouts),
      backoff_(backoff),
      liveness_([this](const std::string& path) { SocketRemoved(path); }) {}

RegistrationManager::~RegistrationManager() { Shutdown(); }

void RegistrationManager::SocketAdded(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Socket& socket = sockets_[path];
  socket.present = true;
  ++socket.generation;
  // Kubelet's operations on one socket path share one back-off, which a socket created again
  // does not reset: only an operation's success does (pkg/util/goroutinemap keyed by the socket
  // path: operationComplete deletes the entry on success only; v1.26.0 to v1.37.2). Before 1.36
  // a plugin whose registration failed is still in kubelet's actual state, so kubelet first
  // deregisters it, which waits out what is left of the back-off and succeeds, resetting it.
  if (socket.settled) socket.backoff = absl::ZeroDuration();
  socket.settled = false;
  Kick(path, socket);
}

void RegistrationManager::SocketRemoved(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sockets_.find(path);
  if (it == sockets_.end()) return;
  it->second.present = false;
  Kick(path, it->second);
}

void RegistrationManager::Kick(const std::string& path, Socket& socket) {
  changed_.notify_all();  // A worker waiting out a backoff re-evaluates.
  if (socket.worker || stopping_) return;
  socket.worker = true;
  ++workers_;
  std::thread([this, path] { Work(path); }).detach();
}

void RegistrationManager::Shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  calls_.CancelAll();
  changed_.notify_all();
  changed_.wait(lock, [this] { return workers_ == 0; });
}

void RegistrationManager::Work(const std::string& path) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    Socket& socket = sockets_[path];
    if (socket.registered && (!socket.present || socket.registered_generation != socket.generation)) {
      // Gone, or created again: drop the old registration first.
      PluginHandler* handler = socket.handler;
      const std::string name = socket.name;
      const bool recreated = socket.present;
      socket.registered = socket.confirmed = false;
      lock.unlock();
      liveness_.Forget(path);
      NDR_LOG(INFO) << "Socket " << path << " of plugin " << name
                << (recreated ? " was created again: deregistering the old one"
                              : " was removed: deregistering");
      handler->DeRegisterPlugin(name, path);
      lock.lock();
      continue;
    }
    if (socket.present && !(socket.registered && socket.confirmed) && !socket.settled) {
      if (absl::Now() < socket.retry_at) {
        changed_.wait_until(lock, absl::ToChronoTime(socket.retry_at));
        continue;
      }
      const uint64_t generation = socket.generation;
      lock.unlock();
      HandshakeResult result = RegisterSocket(path, handlers_, timeouts_, &calls_);
      lock.lock();
      Socket& after = sockets_[path];
      if (result.handler != nullptr) {
        after.registered = true;
        after.registered_generation = generation;
        after.name = result.info->name();
        after.handler = result.handler;
        // Watched from the moment the handler holds it, confirmed or not: a plugin that dies
        // while it is told it is registered (the reply never comes) must not stay registered.
        liveness_.Watch(path);
      }
      after.confirmed = result.status.ok();
      if (result.status.ok()) {
        after.backoff = absl::ZeroDuration();
        NDR_LOG(INFO) << "Registered plugin " << after.name << " at " << path;
      } else if (!stopping_ && result.validated && result.notified.has_value() &&
                 !backoff_.retry_after_validation && after.generation == generation) {
        // `notified` is set once a verdict was sent or attempted (handshake.cc), so a failed
        // success notification counts too. An attempt abandoned without a verdict (kubeletclient's
        // own CSIRegistration call failed) is tried again, and so is a socket created anew while
        // the attempt ran (kubelet sees a new plugin there).
        after.settled = true;
        NDR_LOG(WARNING) << "Registration of " << path
                         << " failed after validation: " << result.status.message()
                         << "; kubelet before 1.36 keeps the plugin in its actual state and "
                            "does not retry until the socket is created again";
      } else if (!stopping_) {
        after.backoff = after.backoff == absl::ZeroDuration()
                            ? backoff_.initial
                            : std::min(after.backoff * 2, backoff_.max);
        after.retry_at = absl::Now() + after.backoff;
        NDR_LOG(WARNING) << "Registration of " << path << " failed, retrying in "
                     << absl::FormatDuration(after.backoff) << ": " << result.status.message();
      }
      continue;
    }
    // A path whose back-off runs is remembered, as kubelet's goroutinemap remembers it.
    if (!socket.present && socket.backoff == absl::ZeroDuration()) sockets_.erase(path);
    break;
  }
  auto it = sockets_.find(path);
  if (it != sockets_.end()) it->second.worker = false;
  --workers_;
  changed_.notify_all();
}

}  // namespace ndr::kubelet

// Notices a registered plugin's process dying while its socket stays behind (SIGKILL, a crash),
// which no filesystem event reports and kubelet never notices.
//
// For each watched socket it holds one idle HTTP/2 connection of its own (the client preface and
// empty SETTINGS, then only acknowledgements of the server's SETTINGS and PINGs), and waits in
// epoll for it to drop: while connected, no timer and no traffic. When it drops, the socket is
// looked at again: if it is still the socket that was registered (the same inode) and now refuses
// connections, `dead` is called with its path; if it accepts them (its server was restarted, or
// closed an idle connection), the watch reconnects; a socket that is missing or new is the plugin
// watcher's business, which reports those itself. A connection that cannot be made for another
// reason is tried again every second.
//
// gRPC channels are not used here on purpose: gRPC 1.51 leaks the descriptor of a channel
// destroyed while it connects, which sockets removed just after registering make common.
// Thread-safe; `dead` runs on the watch's own thread.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_LIVENESS_WATCH_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_LIVENESS_WATCH_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace ndr::kubelet {

class LivenessWatch {
 public:
  explicit LivenessWatch(std::function<void(const std::string& path)> dead);
  ~LivenessWatch();

  void Watch(const std::string& path);  // starts (or restarts) watching `path`
  void Forget(const std::string& path);
  // Whether `path` is still watched: false once Forget() was called, `dead` was reported, or the
  // socket was found removed or replaced.
  bool Watching(const std::string& path);

 private:
  struct Entry {
    uint64_t id = 0;
    ino_t inode = 0;                           // of the socket that was registered
    int fd = -1;                               // the connection, when there is one
    absl::Time connected_at;
    std::string input;                         // received bytes not yet a whole frame
    absl::Time check_at = absl::InfiniteFuture();  // when to look at the socket again
  };

  // All need mu_. Connect() leaves `entry` connected, or with a time to try again, or neither
  // when the socket refused the connection.
  void Connect(const std::string& path, Entry* entry);
  void Disconnect(Entry* entry);
  bool Receive(Entry* entry);  // false once the connection is gone
  void Wake();

  void Loop();

  const std::function<void(const std::string&)> dead_;
  const int epoll_fd_;
  const int wake_fd_;  // an eventfd: Watch() and the destructor wake Loop() through it
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // guarded by mu_
  uint64_t next_id_ = 1;                  // guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  std::thread thread_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_LIVENESS_WATCH_H_

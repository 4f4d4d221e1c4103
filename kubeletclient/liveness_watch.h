// Notices a registered plugin's process dying while its socket stays behind (SIGKILL, a crash),
// which no filesystem event reports and kubelet never notices.
//
// For each watched socket it keeps one idle gRPC connection and waits for the channel's state to
// change (NotifyOnStateChange): while connected, no timer and no traffic. When the connection
// drops and the socket no longer accepts connections, `dead` is called with the socket's path; if
// the socket still accepts connections (its server was merely restarted), the watch reconnects.
// While a connection cannot be made (TRANSIENT_FAILURE), it looks again every second. Only the
// socket that was registered (the same inode) refusing connections is a death: a socket that is
// missing or new is the plugin watcher's business, and it reports those itself. Thread-safe;
// `dead` runs on the watch's own thread.
#ifndef NDR_KUBELETCLIENT_LIVENESS_WATCH_H_
#define NDR_KUBELETCLIENT_LIVENESS_WATCH_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "grpcpp/grpcpp.h"

namespace ndr::kubelet {

class LivenessWatch {
 public:
  explicit LivenessWatch(std::function<void(const std::string& path)> dead);
  ~LivenessWatch();

  void Watch(const std::string& path);  // starts (or restarts) watching `path`
  void Forget(const std::string& path);

 private:
  struct Entry {
    std::shared_ptr<grpc::Channel> channel;
    uint64_t id = 0;
    ino_t inode = 0;  // of the socket that was registered
  };
  struct Tag {
    std::string path;
    uint64_t id;
  };

  void Arm(const std::string& path, const Entry& entry, grpc_connectivity_state last);
  void Loop();

  const std::function<void(const std::string&)> dead_;
  grpc::CompletionQueue queue_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // guarded by mu_
  uint64_t next_id_ = 1;                  // guarded by mu_
  std::thread thread_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_LIVENESS_WATCH_H_

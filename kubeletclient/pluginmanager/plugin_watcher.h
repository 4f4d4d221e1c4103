// Watches kubelet's plugin-registry directory recursively with inotify and reports registration
// sockets appearing and disappearing, as kubelet's plugin watcher does: what is there at start
// is reported first; names starting with "." and anything that is not a socket are ignored; a
// socket created again at the same path (a new inode) is reported as added again.
//
// The watcher only records what it saw; registering is the RegistrationManager's job. It runs on
// the caller's thread: poll fd() and call HandleEvents() when it is readable. No timers.
#ifndef NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_WATCHER_H_
#define NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_WATCHER_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

class PluginWatcher {
 public:
  using Callback = std::function<void(const std::string& socket_path)>;

  // Watches `dir` (which must exist) and reports every socket already below it.
  static absl::StatusOr<std::unique_ptr<PluginWatcher>> Start(const std::string& dir,
                                                              Callback added, Callback removed);
  ~PluginWatcher();

  int fd() const { return fd_; }
  // Reads and handles the pending events. An error means the watched directory itself is gone.
  absl::Status HandleEvents();

 private:
  PluginWatcher(std::string dir, Callback added, Callback removed);
  void AddTree(const std::string& dir);  // watch `dir` and below; report sockets found
  void Created(const std::string& path);
  void Removed(const std::string& path);
  void Rescan();  // after the kernel's event queue overflowed

  const std::string root_;
  const Callback added_, removed_;
  int fd_ = -1;
  std::map<int, std::string> dirs_;       // watch descriptor -> directory
  std::map<std::string, ino_t> sockets_;  // known sockets -> inode
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_PLUGINMANAGER_PLUGIN_WATCHER_H_

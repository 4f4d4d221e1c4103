#include "kubeletclient/pluginmanager/plugin_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "logging/logging.h"

namespace ndr::kubelet {
namespace {

constexpr uint32_t kDirEvents = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM |
                                IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool Hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

}  // namespace

PluginWatcher::PluginWatcher(std::string dir, Callback added, Callback removed)
    : root_(std::move(dir)), added_(std::move(added)), removed_(std::move(removed)) {}

PluginWatcher::~PluginWatcher() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::unique_ptr<PluginWatcher>> PluginWatcher::Start(const std::string& dir,
                                                                    Callback added,
                                                                    Callback removed) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("plugin registry directory ", dir,
                                            " (--plugin-registry-dir) does not exist or is not "
                                            "a directory"));
  }
  std::unique_ptr<PluginWatcher> watcher(
      new PluginWatcher(dir, std::move(added), std::move(removed)));
  watcher->fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watcher->fd_ < 0) {
    return absl::InternalError(absl::StrCat("inotify_init1: ", strerror(errno)));
  }
  watcher->AddTree(dir);
  if (watcher->dirs_.empty()) {
    return absl::InternalError(absl::StrCat("watch ", dir, ": ", strerror(errno)));
  }
  return watcher;
}

void PluginWatcher::AddTree(const std::string& dir) {
  // Watch first, then list: a socket created in between is seen by one or the other (or both,
  // which Created() tells apart by inode).
  int wd = inotify_add_watch(fd_, dir.c_str(), kDirEvents);
  if (wd < 0) {
    NDR_LOG(WARNING) << "Cannot watch " << dir << ": " << strerror(errno);
    return;
  }
  dirs_[wd] = dir;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  for (const std::string& name : names) {
    if (Hidden(name)) {
      NDR_VLOG(5) << "Ignoring " << dir << "/" << name << ": a hidden name";
      continue;
    }
    Created(absl::StrCat(dir, "/", name));
  }
}

void PluginWatcher::Created(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    AddTree(path);
    return;
  }
  if (!S_ISSOCK(st.st_mode)) {
    // A known socket replaced by something else (a rename over it sends no IN_DELETE).
    if (sockets_.count(path) > 0) Removed(path);
    NDR_VLOG(5) << "Ignoring " << path << ": not a socket";
    return;
  }
  auto it = sockets_.find(path);
  if (it != sockets_.end() && it->second == st.st_ino) return;  // Seen already.
  sockets_[path] = st.st_ino;
  added_(path);
}

void PluginWatcher::Removed(const std::string& path) {
  // The path itself, or everything below a removed directory.
  const std::string prefix = path + "/";
  for (auto it = sockets_.begin(); it != sockets_.end();) {
    if (it->first == path || absl::StartsWith(it->first, prefix)) {
      const std::string socket = it->first;
      it = sockets_.erase(it);
      removed_(socket);
    } else {
      ++it;
    }
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (absl::StartsWith(it->second, prefix) || (it->second == path && path != root_)) {
      inotify_rm_watch(fd_, it->first);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
}

void PluginWatcher::Rescan() {
  NDR_LOG(WARNING) << "inotify queue overflowed; rescanning " << root_;
  for (const auto& [wd, dir] : dirs_) inotify_rm_watch(fd_, wd);
  dirs_.clear();
  AddTree(root_);  // Reports sockets that are new or were created again (a new inode).
  for (auto it = sockets_.begin(); it != sockets_.end();) {
    struct stat st;
    if (lstat(it->first.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      const std::string socket = it->first;
      it = sockets_.erase(it);
      removed_(socket);
    } else {
      ++it;
    }
  }
}

absl::Status PluginWatcher::HandleEvents() {
  alignas(inotify_event) char buffer[64 * 1024];
  while (true) {
    ssize_t n = read(fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::OkStatus();
    for (char* p = buffer; p < buffer + n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      if (event->mask & IN_Q_OVERFLOW) {
        Rescan();
        continue;
      }
      auto dir = dirs_.find(event->wd);
      if (dir == dirs_.end()) continue;  // A watch removed meanwhile.
      if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (dir->second == root_) {
          return absl::FailedPreconditionError(
              absl::StrCat("plugin registry directory ", root_, " was removed or moved away"));
        }
        continue;  // A subdirectory: its parent's IN_DELETE/IN_MOVED_FROM handles it.
      }
      const std::string name = event->len > 0 ? event->name : "";
      if (name.empty()) continue;
      const std::string path = absl::StrCat(dir->second, "/", name);
      if (Hidden(name)) {
        NDR_VLOG(5) << "Ignoring " << path << ": a hidden name";
        continue;
      }
      if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
        Created(path);
      } else if (event->mask & (IN_DELETE | IN_MOVED_FROM)) {
        Removed(path);
      }
    }
  }
}

}  // namespace ndr::kubelet

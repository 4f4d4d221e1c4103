#include "kubeletclient/pluginmanager/liveness_watch.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/time/clock.h"
#include "logging/logging.h"

namespace ndr::kubelet {
namespace {

// HTTP/2 (RFC 9113): the client connection preface, then an empty SETTINGS frame.
constexpr char kPreface[] =
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
constexpr size_t kPrefaceSize = sizeof(kPreface) - 1;
constexpr size_t kFrameHeader = 9;
constexpr uint8_t kSettings = 0x4, kPing = 0x6, kAck = 0x1;
constexpr size_t kMaxFrame = 16384;  // SETTINGS_MAX_FRAME_SIZE, which we never raise

// A connection that drops sooner than this after it was made is not retried at once, so that a
// server closing every connection straight away cannot make us spin.
constexpr absl::Duration kRetry = absl::Seconds(1);

bool SendAll(int fd, const char* data, size_t size) {
  // The server reads what we send; a full buffer only means an absurdly slow server.
  return send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(size);
}

}  // namespace

LivenessWatch::LivenessWatch(std::function<void(const std::string&)> dead)
    : dead_(std::move(dead)),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  // Only a process out of file descriptors or kernel memory fails these; nothing can be
  // watched then.
  if (epoll_fd_ < 0) {
    NDR_LOG(FATAL) << "Cannot create an epoll instance" << logging::Err(strerror(errno));
  }
  if (wake_fd_ < 0) NDR_LOG(FATAL) << "Cannot create an eventfd" << logging::Err(strerror(errno));
  epoll_event event = {};
  event.events = EPOLLIN;
  event.data.u64 = 0;  // entry ids start at 1
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    NDR_LOG(FATAL) << "Cannot watch the eventfd" << logging::Err(strerror(errno));
  }
  thread_ = std::thread([this] { Loop(); });
}

LivenessWatch::~LivenessWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    Wake();
  }
  thread_.join();
  for (auto& [path, entry] : entries_) Disconnect(&entry);
  close(wake_fd_);
  close(epoll_fd_);
}

void LivenessWatch::Watch(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = entries_[path];
  Disconnect(&entry);
  entry = Entry();
  entry.id = next_id_++;
  struct stat st;
  entry.inode = lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  entry.check_at = absl::InfinitePast();  // Loop() connects
  Wake();
}

void LivenessWatch::Forget(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(path);
  if (it == entries_.end()) return;
  Disconnect(&it->second);
  entries_.erase(it);
}

bool LivenessWatch::Watching(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(path) > 0;
}

void LivenessWatch::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void LivenessWatch::Disconnect(Entry* entry) {
  if (entry->fd < 0) return;
  close(entry->fd);  // also leaves the epoll set
  entry->fd = -1;
  entry->input.clear();
}

void LivenessWatch::Connect(const std::string& path, Entry* entry) {
  Disconnect(entry);
  entry->check_at = absl::InfiniteFuture();
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return;  // cannot be: it was registered
  memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    entry->check_at = absl::Now() + kRetry;
    return;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    close(fd);
    // Refused: nobody listens behind the socket any more. Anything else (a full backlog, say)
    // proves nothing: look again later.
    if (error != ECONNREFUSED) entry->check_at = absl::Now() + kRetry;
    return;
  }
  epoll_event event = {};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = entry->id;
  if (!SendAll(fd, kPreface, kPrefaceSize) ||
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    close(fd);
    entry->check_at = absl::Now() + kRetry;
    return;
  }
  entry->fd = fd;
  entry->connected_at = absl::Now();
}

bool LivenessWatch::Receive(Entry* entry) {
  char buffer[4096];
  while (true) {
    const ssize_t n = recv(entry->fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    entry->input.append(buffer, n);
  }
  // Acknowledge SETTINGS and PINGs, so that the server keeps the connection; ignore the rest.
  std::string& in = entry->input;
  while (in.size() >= kFrameHeader) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(in[i]); };
    const size_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
    const uint8_t type = byte(3), flags = byte(4);
    if (length > kMaxFrame) return false;  // not HTTP/2 as we asked for it
    if (in.size() < kFrameHeader + length) break;
    if (type == kSettings && !(flags & kAck)) {
      static constexpr char kSettingsAck[] = "\x00\x00\x00\x04\x01\x00\x00\x00\x00";
      if (!SendAll(entry->fd, kSettingsAck, kFrameHeader)) return false;
    } else if (type == kPing && !(flags & kAck) && length == 8) {
      std::string ack = in.substr(0, kFrameHeader + 8);
      ack[4] = kAck;
      if (!SendAll(entry->fd, ack.data(), ack.size())) return false;
    }
    in.erase(0, kFrameHeader + length);
  }
  return true;
}

void LivenessWatch::Loop() {
  std::vector<epoll_event> events(16);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [path, entry] : entries_) next = std::min(next, entry.check_at);
    int timeout_ms = -1;
    if (next != absl::InfiniteFuture()) {
      // Rounded up, so that the check is due when epoll_wait returns.
      const absl::Duration wait = next - absl::Now() + absl::Milliseconds(1);
      timeout_ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wait)));
    }
    lock.unlock();
    const int n = epoll_wait(epoll_fd_, events.data(), events.size(), timeout_ms);
    lock.lock();
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      for (auto& [path, entry] : entries_) {
        if (entry.id != events[i].data.u64 || entry.fd < 0) continue;
        if (!Receive(&entry)) {
          NDR_VLOG(3) << "Liveness connection to " << path << " dropped";
          Disconnect(&entry);
          entry.check_at = std::max(absl::Now(), entry.connected_at + kRetry);
        }
        break;
      }
    }
    std::vector<std::string> dead;
    const absl::Time now = absl::Now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.check_at > now) {
        ++it;
        continue;
      }
      struct stat st;
      if (lstat(it->first.c_str(), &st) != 0 || st.st_ino != it->second.inode) {
        it = entries_.erase(it);  // removed or replaced: the plugin watcher reports it
        continue;
      }
      Connect(it->first, &it->second);
      if (it->second.fd < 0 && it->second.check_at == absl::InfiniteFuture()) {
        dead.push_back(it->first);  // the registered socket refuses connections
        it = entries_.erase(it);
        continue;
      }
      ++it;
    }
    if (dead.empty()) continue;
    lock.unlock();
    for (const std::string& path : dead) {
      NDR_LOG(INFO) << "The plugin behind " << path
                << " went away without removing its socket; deregistering it";
      dead_(path);
    }
    lock.lock();
  }
}

}  // namespace ndr::kubelet

#include "kubeletclient/liveness_watch.h"

#include <limits.h>
#include <sys/stat.h>

#include "absl/time/clock.h"
#include "api/endpoint.h"
#include "glog/logging.h"

namespace ndr::kubelet {
namespace {

std::shared_ptr<grpc::Channel> IdleChannel(const std::string& path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Never drop the connection for being idle: its dropping is the signal.
  args.SetInt(GRPC_ARG_CLIENT_IDLE_TIMEOUT_MS, INT_MAX);
  auto channel =
      grpc::CreateCustomChannel(GrpcUnixTarget(path), grpc::InsecureChannelCredentials(), args);
  channel->GetState(/*try_to_connect=*/true);
  return channel;
}

}  // namespace

LivenessWatch::LivenessWatch(std::function<void(const std::string&)> dead)
    : dead_(std::move(dead)), thread_([this] { Loop(); }) {}

LivenessWatch::~LivenessWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();  // pending notifications complete as their channels go away
  }
  queue_.Shutdown();
  thread_.join();
}

void LivenessWatch::Watch(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = entries_[path];
  struct stat st;
  entry.inode = lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  entry.channel = IdleChannel(path);
  entry.id = next_id_++;
  Arm(path, entry, entry.channel->GetState(false));
}

void LivenessWatch::Forget(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(path);
}

void LivenessWatch::Arm(const std::string& path, const Entry& entry,
                        grpc_connectivity_state last) {
  // Connected (or connecting), the wait is only bounded by a day. In TRANSIENT_FAILURE, gRPC keeps
  // the channel there while it retries in the background, so no change would tell us that the
  // plugin died meanwhile: there, and only there, look again every second.
  const absl::Duration wait =
      last == GRPC_CHANNEL_TRANSIENT_FAILURE ? absl::Seconds(1) : absl::Hours(24);
  entry.channel->NotifyOnStateChange(last, absl::ToChronoTime(absl::Now() + wait), &queue_,
                                     new Tag{path, entry.id});
}

void LivenessWatch::Loop() {
  void* raw = nullptr;
  bool ok = false;
  while (queue_.Next(&raw, &ok)) {
    std::unique_ptr<Tag> tag(static_cast<Tag*>(raw));
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(tag->path);
    if (it == entries_.end() || it->second.id != tag->id) continue;  // forgotten or replaced
    const grpc_connectivity_state state = it->second.channel->GetState(false);
    VLOG(3) << "Liveness of " << tag->path << ": changed=" << ok << " state=" << state;
    if (state == GRPC_CHANNEL_READY || state == GRPC_CHANNEL_CONNECTING) {
      Arm(tag->path, it->second, state);  // connected, or connecting: keep waiting
      continue;
    }
    // The connection dropped (IDLE), connecting failed (TRANSIENT_FAILURE; the plugin may have
    // died before the connection was up), or the channel is gone.
    struct stat st;
    if (lstat(tag->path.c_str(), &st) != 0 || st.st_ino != it->second.inode) {
      // Removed, or replaced by a new socket: the plugin watcher reports both.
      entries_.erase(it);
      continue;
    }
    if (UnixSocketAnswers(tag->path)) {
      // A restarted server or a transient failure: try a fresh connection and keep waiting.
      if (state != GRPC_CHANNEL_IDLE) it->second.channel = IdleChannel(tag->path);
      it->second.channel->GetState(/*try_to_connect=*/true);
      Arm(tag->path, it->second, it->second.channel->GetState(false));
      continue;
    }
    entries_.erase(it);
    lock.unlock();
    LOG(INFO) << "The plugin behind " << tag->path
              << " went away without removing its socket; deregistering it";
    dead_(tag->path);
  }
}

}  // namespace ndr::kubelet

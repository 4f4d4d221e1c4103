#include "kubeletclient/csi/nodeinfomanager/status_writer.h"

#include "logging/logging.h"
#include "kubeletclient/util/files.h"
#include "kubeletclient/csi/nodeinfomanager/node_status.h"

namespace ndr::kubelet {

StatusWriter::StatusWriter(std::string path, std::string node_name)
    : path_(std::move(path)), node_name_(std::move(node_name)), thread_([this] { Loop(); }) {}

StatusWriter::~StatusWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void StatusWriter::Update(DriverRegistry::Snapshot snapshot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(snapshot);
  }
  changed_.notify_all();
}

void StatusWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
    if (!pending_.has_value()) return;  // stopping, nothing left to write
    DriverRegistry::Snapshot snapshot = std::move(*pending_);
    pending_.reset();
    lock.unlock();
    absl::Status status = WriteFileAtomically(path_, RenderNodeStatus(node_name_, snapshot));
    if (!status.ok()) NDR_LOG(ERROR) << "Cannot write the node status: " << status.message();
    lock.lock();
  }
}

}  // namespace ndr::kubelet

// Publishes the node status file from a thread of its own, always writing the newest state.
//
// Registrations hand over their snapshot and go on; while a write is in progress, newer snapshots
// replace each other, so a burst of 200 registrations costs a few writes rather than 200, and no
// registration waits for the disk. Every change is published: the last snapshot handed over is
// always written. Thread-safe.
#ifndef NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_STATUS_WRITER_H_
#define NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_STATUS_WRITER_H_

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kubeletclient/csi/driver_registry.h"

namespace ndr::kubelet {

class StatusWriter {
 public:
  StatusWriter(std::string path, std::string node_name);
  ~StatusWriter();  // Writes what is pending, then stops.

  void Update(DriverRegistry::Snapshot snapshot);

 private:
  void Loop();

  const std::string path_;
  const std::string node_name_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::optional<DriverRegistry::Snapshot> pending_;  // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  std::thread thread_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_NODEINFOMANAGER_STATUS_WRITER_H_

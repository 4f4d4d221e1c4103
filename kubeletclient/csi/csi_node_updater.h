// kubelet's CSINode updater (pkg/volume/csi/csi_node_updater.go, v1.33.13 to v1.37.2, run when
// the MutableCSINodeAllocatableCount gate is on: by default from v1.35): for each registered
// driver whose CSIDriver object sets spec.nodeAllocatableUpdatePeriodSeconds, a ticker started at
// its registration (syncDriverUpdater, from RegisterPlugin) asks the driver's NodeGetInfo again
// every period and writes the answer into the driver's CSINode entry (runPeriodicUpdate →
// csi_plugin.go updateCSIDriver → nodeinfomanager UpdateCSIDriver → updateCSINode, the function
// registration uses). A failed call is logged and the next tick tries again; a driver that goes
// away stops its ticker.
//
// kubeletclient's node status renders one DriverInfo into both the CSINode entry and the Node's
// annotation and labels; kubelet's update touches the CSINode only. So only the allocatable count
// is taken from a later answer, and a later answer with another node ID or topology is logged:
// kubelet would rewrite the CSINode's nodeID and topologyKeys (not the Node's), which is not
// modelled.
//
// Thread-safe. Feed it every registry change (OnRegistryChange, from the registry's observer;
// its own updates come back that way, on its thread).
#ifndef NDR_KUBELETCLIENT_CSI_CSI_NODE_UPDATER_H_
#define NDR_KUBELETCLIENT_CSI_CSI_NODE_UPDATER_H_

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/util/call_set.h"

namespace ndr::kubelet {

class CsiNodeUpdater {
 public:
  // `periods`: driver name → its CSIDriver's nodeAllocatableUpdatePeriodSeconds (drivers without
  // one are not listed). Starts a thread when `periods` is not empty.
  CsiNodeUpdater(DriverRegistry* registry, std::map<std::string, absl::Duration> periods,
                 absl::Duration node_get_info_timeout, CallSet* calls);
  ~CsiNodeUpdater();  // stops and joins the thread

  CsiNodeUpdater(const CsiNodeUpdater&) = delete;
  CsiNodeUpdater& operator=(const CsiNodeUpdater&) = delete;

  // A driver that appeared (or registered again from another socket) gets its first tick a
  // period from now; one that went away, none.
  void OnRegistryChange(const DriverRegistry::Snapshot& drivers);

 private:
  struct Ticker {
    std::string registration_socket;
    absl::Time next;
  };

  void Run();
  void Tick(const std::string& name, const std::string& registration_socket);

  DriverRegistry* const registry_;
  const std::map<std::string, absl::Duration> periods_;
  const absl::Duration node_get_info_timeout_;
  CallSet* const calls_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Ticker> tickers_;  // guarded by mu_
  bool stopping_ = false;                  // guarded by mu_
  std::thread thread_;
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_NODE_UPDATER_H_

// The CSI drivers registered on this node: kubelet's csiDrivers store plus what its node-info
// manager learns from NodeGetInfo, and the pod-info switch learnt from CSIRegistration.
//
// Thread-safe. Every change is reported to an observer (the node status writer), called with
// a consistent snapshot, one change at a time, in the order the changes happened.
#ifndef NDR_KUBELETCLIENT_CSI_DRIVER_REGISTRY_H_
#define NDR_KUBELETCLIENT_CSI_DRIVER_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace ndr::kubelet {

struct DriverInfo {
  std::string name;
  // The driver's CSI socket (PluginInfo.endpoint, or the registration socket when empty).
  std::string endpoint;
  // The registration socket it came from.
  std::string registration_socket;
  // Highest supported CSI version, as kubelet computed it.
  std::string version;
  // CSIRegistration.GetCSIDriverInfo's answer; nullopt when the registrar does not implement it.
  std::optional<bool> requires_publish_pod;
  // From NodeGetInfo.
  std::string node_id;
  int64_t max_volumes_per_node = 0;
  std::map<std::string, std::string> topology;
};

class DriverRegistry {
 public:
  using Snapshot = std::map<std::string, DriverInfo>;
  using Observer = std::function<void(const Snapshot&)>;

  explicit DriverRegistry(Observer observer = nullptr) : observer_(std::move(observer)) {}

  std::optional<DriverInfo> Get(const std::string& name) const;
  Snapshot All() const;
  // Adds or replaces the driver `info.name`.
  void Set(const DriverInfo& info);
  // Applies `change` to `name` if it is registered from `registration_socket` (the name and the
  // sockets unchanged); returns whether it was.
  bool Update(const std::string& name, const std::string& registration_socket,
              const std::function<void(DriverInfo*)>& change);
  // Removes `name` if it was registered from `registration_socket`; returns whether it was.
  bool Erase(const std::string& name, const std::string& registration_socket);

 private:
  void Notify();  // with mu_ held

  const Observer observer_;
  mutable std::mutex mu_;
  Snapshot drivers_;  // guarded by mu_
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_DRIVER_REGISTRY_H_

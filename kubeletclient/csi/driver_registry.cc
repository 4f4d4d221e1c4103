#include "kubeletclient/csi/driver_registry.h"

namespace ndr::kubelet {

std::optional<DriverInfo> DriverRegistry::Get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = drivers_.find(name);
  if (it == drivers_.end()) return std::nullopt;
  return it->second;
}

DriverRegistry::Snapshot DriverRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return drivers_;
}

void DriverRegistry::Set(const DriverInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  drivers_[info.name] = info;
  Notify();
}

bool DriverRegistry::Update(const std::string& name, const std::string& registration_socket,
                            const std::function<void(DriverInfo*)>& change) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = drivers_.find(name);
  if (it == drivers_.end() || it->second.registration_socket != registration_socket) return false;
  DriverInfo updated = it->second;
  change(&updated);
  updated.name = it->second.name;
  updated.endpoint = it->second.endpoint;
  updated.registration_socket = it->second.registration_socket;
  it->second = std::move(updated);
  Notify();
  return true;
}

bool DriverRegistry::Erase(const std::string& name, const std::string& registration_socket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = drivers_.find(name);
  if (it == drivers_.end() || it->second.registration_socket != registration_socket) return false;
  drivers_.erase(it);
  Notify();
  return true;
}

void DriverRegistry::Notify() {
  // Called under mu_ so that observers see the changes one at a time and in order.
  if (observer_) observer_(drivers_);
}

}  // namespace ndr::kubelet

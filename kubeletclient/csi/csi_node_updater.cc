#include "kubeletclient/csi/csi_node_updater.h"

#include <chrono>
#include <vector>

#include "kubeletclient/csi/csi_handler.h"
#include "logging/logging.h"

namespace ndr::kubelet {

CsiNodeUpdater::CsiNodeUpdater(DriverRegistry* registry,
                               std::map<std::string, absl::Duration> periods,
                               absl::Duration node_get_info_timeout, CallSet* calls)
    : registry_(registry),
      periods_(std::move(periods)),
      node_get_info_timeout_(node_get_info_timeout),
      calls_(calls) {
  if (!periods_.empty()) thread_ = std::thread([this] { Run(); });
}

CsiNodeUpdater::~CsiNodeUpdater() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CsiNodeUpdater::OnRegistryChange(const DriverRegistry::Snapshot& drivers) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, period] : periods_) {
    auto registered = drivers.find(name);
    auto ticker = tickers_.find(name);
    if (registered == drivers.end()) {
      if (ticker != tickers_.end()) {
        NDR_VLOG(4) << "Stopping periodic updates for driver " << name << " (period " << period
                    << "): it is no longer registered";
        tickers_.erase(ticker);
      }
      continue;
    }
    if (ticker != tickers_.end() &&
        ticker->second.registration_socket == registered->second.registration_socket) {
      continue;  // still the same registration (or this updater's own change)
    }
    NDR_VLOG(4) << "Starting periodic updates for driver " << name << ", period " << period;
    tickers_[name] = {registered->second.registration_socket, absl::Now() + period};
  }
  changed_.notify_all();
}

void CsiNodeUpdater::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [name, ticker] : tickers_) next = std::min(next, ticker.next);
    if (next == absl::InfiniteFuture()) {
      changed_.wait(lock);
      continue;
    }
    if (absl::Now() < next) {
      changed_.wait_for(lock, absl::ToChronoNanoseconds(next - absl::Now()));
      continue;
    }
    std::vector<std::pair<std::string, std::string>> due;
    const absl::Time now = absl::Now();
    for (auto& [name, ticker] : tickers_) {
      if (ticker.next > now) continue;
      due.emplace_back(name, ticker.registration_socket);
      // A Go time.Ticker's rhythm: the next multiple of the period; ticks missed while a call
      // was slow are dropped, not made up.
      while (ticker.next <= now) ticker.next += periods_.at(name);
    }
    lock.unlock();  // the registry calls back into OnRegistryChange
    for (const auto& [name, socket] : due) Tick(name, socket);
    lock.lock();
  }
}

void CsiNodeUpdater::Tick(const std::string& name, const std::string& registration_socket) {
  std::optional<DriverInfo> driver = registry_->Get(name);
  if (!driver.has_value() || driver->registration_socket != registration_socket) return;
  absl::StatusOr<csi::v1::NodeGetInfoResponse> info =
      NodeGetInfo(driver->endpoint, node_get_info_timeout_, calls_);
  if (!info.ok()) {
    NDR_LOG(ERROR) << "Failed to update CSIDriver " << name << ": failed to get NodeGetInfo from "
                   << "driver: " << info.status().message();
    return;
  }
  std::map<std::string, std::string> topology(info->accessible_topology().segments().begin(),
                                               info->accessible_topology().segments().end());
  if (info->node_id() != driver->node_id || topology != driver->topology) {
    NDR_LOG(WARNING) << "Driver " << name << "'s NodeGetInfo now answers another node ID or "
                     << "topology; kubelet would write them into the CSINode only, which "
                     << "kubeletclient does not model: it keeps the registration's";
  }
  const int64_t count = info->max_volumes_per_node();
  const bool updated = registry_->Update(name, registration_socket, [count](DriverInfo* d) {
    d->max_volumes_per_node = count;
  });
  if (updated) {
    NDR_LOG(INFO) << "Updated CSINode allocatable count of driver " << name << " to " << count
                  << " (periodic NodeGetInfo)";
  }
}

}  // namespace ndr::kubelet

// `kubeletclient watch`: kubelet's plugin manager as a program. Watches the plugin-registry
// directory, registers and deregisters plugins, and rewrites the node status file on every
// change, until SIGTERM or SIGINT.
#ifndef NDR_KUBELETCLIENT_WATCH_H_
#define NDR_KUBELETCLIENT_WATCH_H_

#include <map>
#include <string>

#include "absl/time/time.h"

#include "absl/status/status.h"
#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/pluginmanager/handshake.h"

namespace ndr::kubelet {

struct WatchOptions {
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string node_status_file;  // required
  std::string node_name;
  HandshakeTimeouts handshake;
  CsiHandlerOptions csi;
  // Drivers whose NodeGetInfo is asked again on a period, and the period: the CSIDrivers'
  // nodeAllocatableUpdatePeriodSeconds, when the release's MutableCSINodeAllocatableCount gate
  // is on (csi/csi_node_updater.h).
  std::map<std::string, absl::Duration> allocatable_update_periods;
};

// Blocks SIGTERM and SIGINT in this thread and all threads started later; call it first.
void BlockTerminationSignals();

// Runs until SIGTERM or SIGINT (OK) or a fatal error.
absl::Status RunWatch(const WatchOptions& options);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_WATCH_H_

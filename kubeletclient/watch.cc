#include "kubeletclient/watch.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "logging/logging.h"
#include <atomic>

#include "kubeletclient/csi/csi_node_updater.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/util/files.h"
#include "kubeletclient/csi/nodeinfomanager/node_status.h"
#include "kubeletclient/pluginmanager/plugin_watcher.h"
#include "kubeletclient/pluginmanager/registration_manager.h"
#include "kubeletclient/csi/nodeinfomanager/status_writer.h"

namespace ndr::kubelet {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::Status RunWatch(const WatchOptions& options) {
  sigset_t signals = TerminationSignals();
  int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
  if (signal_fd < 0) return absl::InternalError(absl::StrCat("signalfd: ", strerror(errno)));

  // A restarted client starts from nothing and rediscovers every socket.
  if (absl::Status s = WriteFileAtomically(options.node_status_file,
                                           RenderNodeStatus(options.node_name, {}));
      !s.ok()) {
    close(signal_fd);
    return absl::Status(s.code(), absl::StrCat("--node-status-file: ", s.message()));
  }
  // Every registry change is published at once, not every 10 s as kubelet once did.
  StatusWriter writer(options.node_status_file, options.node_name);
  // The updater hears every change too (its own updates come back on its thread): it is made
  // after the registry it updates and gone, its thread joined, before it.
  std::atomic<CsiNodeUpdater*> updater_ptr{nullptr};
  DriverRegistry registry([&writer, &updater_ptr](const DriverRegistry::Snapshot& drivers) {
    writer.Update(drivers);
    if (CsiNodeUpdater* updater = updater_ptr.load()) updater->OnRegistryChange(drivers);
  });
  CallSet csi_calls;
  CsiNodeUpdater updater(&registry, options.allocatable_update_periods,
                         options.csi.node_get_info_timeout, &csi_calls);
  updater_ptr = &updater;
  CsiHandler csi(&registry, options.csi, &csi_calls);
  Backoff backoff;
  backoff.retry_after_validation =
      options.csi.release.Has(ReleaseBehaviour::kRegistrationRetriedAfterValidation);
  RegistrationManager manager({{kCsiPluginType, &csi}}, options.handshake, backoff);
  absl::StatusOr<std::unique_ptr<PluginWatcher>> watcher = PluginWatcher::Start(
      options.plugin_registry_dir, [&manager](const std::string& p) { manager.SocketAdded(p); },
      [&manager](const std::string& p) { manager.SocketRemoved(p); });
  if (!watcher.ok()) {
    close(signal_fd);
    return watcher.status();
  }
  NDR_LOG(INFO) << "Watching " << options.plugin_registry_dir << " for plugin sockets; node status in "
            << options.node_status_file;

  absl::Status result;
  while (true) {
    pollfd fds[] = {{signal_fd, POLLIN, 0}, {(*watcher)->fd(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      result = absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
      break;
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      (void)!read(signal_fd, &info, sizeof(info));
      NDR_LOG(INFO) << "Received " << (info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM")
                << ", stopping";
      break;
    }
    if (fds[1].revents & POLLIN) {
      result = (*watcher)->HandleEvents();
      if (!result.ok()) break;
    }
  }
  csi_calls.CancelAll();
  manager.Shutdown();
  close(signal_fd);
  return result;
}

}  // namespace ndr::kubelet

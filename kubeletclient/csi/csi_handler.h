// Kubelet's CSI plugin handler (pkg/volume/csi RegistrationHandler), and as an explicit opt-in
// (CsiHandlerOptions::ask_csi_registration) the CSIRegistration call of the "Pod in CSI
// NodePublish request" design proposal, which no kubelet release makes.
//
// RegisterPlugin: validate versions as kubelet does; when opted in, ask the registrar's
// CSIRegistration service whether the driver wants pod information (UNIMPLEMENTED, which every
// registrar but ours answers, means no, and is logged, not an error; UNAVAILABLE,
// DEADLINE_EXCEEDED or CANCELLED abandon the attempt without a verdict, to be tried again: the
// call dials the socket by path a second time, and a socket deleted and created again since
// GetInfo is no reason to refuse the plugin, which the registrar would take as final); call the
// driver's NodeGetInfo (an empty node ID is a refusal); then record the driver in the registry.
// DeRegisterPlugin forgets it, but only if it was registered from that socket: kubelet forgets a
// driver whose newer, higher-versioned socket is still there when an older socket of the same
// name goes away, which is a bug.
//
// Thread-safe: calls for different sockets run concurrently.
#ifndef NDR_KUBELETCLIENT_CSI_CSI_HANDLER_H_
#define NDR_KUBELETCLIENT_CSI_CSI_HANDLER_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "kubeletclient/util/call_set.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/features/kubelet_releases.h"
#include "kubeletclient/pluginmanager/plugin_handler.h"
#include "kubeletclient/csi/versions.h"

namespace ndr::kubelet {

inline constexpr char kCsiPluginType[] = "CSIPlugin";

struct CsiHandlerOptions {
  // kubelet's csiTimeout for NodeGetInfo.
  absl::Duration node_get_info_timeout = absl::Minutes(2);
  // Ask the registrar's CSIRegistration.GetCSIDriverInfo whether the driver wants pod
  // information (--ask-csi-registration). Off, as in every kubelet release (csi_plugin.go
  // RegistrationHandler.RegisterPlugin, v1.26.15 to v1.37.2, reads pod information only from the
  // CSIDriver object): the driver then gets pod information only through podInfoOnMount.
  bool ask_csi_registration = false;
  // GetCSIDriverInfo on the registration socket (the program uses --get-info-timeout).
  absl::Duration csi_registration_timeout = absl::Seconds(1);
  KubeletRelease release;  // --kubelet-version: the texts of version refusals
};

// What the registrar's CSIRegistration service answered: the answer, or why there is none.
struct CsiDriverInfoResult {
  std::optional<csiregistration::CSIDriverInfo> info;
  grpc::Status status;
};

// Whether a failed GetCSIDriverInfo says nothing about the plugin (see above).
bool IsTransientCsiRegistrationFailure(grpc::StatusCode code);

// Calls CSIRegistration.GetCSIDriverInfo on `registration_socket`.
CsiDriverInfoResult GetCsiDriverInfo(const std::string& registration_socket,
                                     absl::Duration timeout, CallSet* calls);

// Calls Node.NodeGetInfo on the driver's `endpoint`.
absl::StatusOr<csi::v1::NodeGetInfoResponse> NodeGetInfo(const std::string& endpoint,
                                                         absl::Duration timeout, CallSet* calls);

// What the handler learnt from the registrar and the driver on its last attempt to register a
// socket, whether or not the registration succeeded. For diagnostics (`kubeletclient probe`).
struct CsiAttempt {
  std::optional<CsiDriverInfoResult> csi_driver_info;
  std::optional<absl::StatusOr<csi::v1::NodeGetInfoResponse>> node_get_info;
};

class CsiHandler final : public PluginHandler {
 public:
  CsiHandler(DriverRegistry* registry, CsiHandlerOptions options, CallSet* calls = nullptr)
      : registry_(registry), options_(options), calls_(calls) {}

  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions,
                              const std::string& registration_socket) override;
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions,
                              const std::string& registration_socket) override;
  void DeRegisterPlugin(const std::string& name, const std::string& registration_socket) override;

  // The last attempt for `registration_socket`, if RegisterPlugin got that far.
  CsiAttempt LastAttempt(const std::string& registration_socket) const;

 private:
  // kubelet's validateVersions against an already registered driver with this name from
  // another socket.
  absl::StatusOr<Version> Validate(const std::string& caller, const std::string& name,
                                   const std::vector<std::string>& versions,
                                   const std::string& registration_socket) const;

  DriverRegistry* const registry_;
  const CsiHandlerOptions options_;
  CallSet* const calls_;
  mutable std::mutex mu_;
  std::map<std::string, CsiAttempt> attempts_;  // by registration socket; guarded by mu_
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_CSI_CSI_HANDLER_H_

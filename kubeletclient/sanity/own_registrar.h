// The judge's own registration socket, for a driver judged directly (`sanity --csi-address`):
// what our registrar would offer kubelet for that driver (registrar/services.h: type CSIPlugin,
// the name the driver gives in GetPluginInfo, its socket as the endpoint, version 1.0.0), served
// in this process from a private directory under /tmp that goes with it. Kubelet's handshake
// (pluginmanager/handshake.h) then runs against it unchanged, and its verdict, which goes to a
// registrar the judge started itself, is kept for the judge to read.
//
// Thread-safe.
#ifndef NDR_KUBELETCLIENT_SANITY_OWN_REGISTRAR_H_
#define NDR_KUBELETCLIENT_SANITY_OWN_REGISTRAR_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "registrar/services.h"

namespace ndr::kubelet::sanity {

class OwnRegistrar {
 public:
  // Asks the driver at `csi_address` (a path or a unix:// URL) its name with GetPluginInfo
  // (deadline `timeout`), then serves the registration socket. Errors say which step failed:
  // a bad address, a driver that does not answer or gives no name, a socket that cannot be made.
  static absl::StatusOr<std::unique_ptr<OwnRegistrar>> Start(const std::string& csi_address,
                                                             absl::Duration timeout);
  ~OwnRegistrar();  // stops serving; removes the socket and its directory
  OwnRegistrar(const OwnRegistrar&) = delete;
  OwnRegistrar& operator=(const OwnRegistrar&) = delete;

  const std::string& socket() const { return socket_; }
  // The verdict kubelet's handshake sent, if one came.
  std::optional<registrar::Verdict> verdict() const;

 private:
  OwnRegistrar() = default;

  std::string dir_, socket_;
  std::unique_ptr<registrar::RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::optional<registrar::Verdict> verdict_;  // guarded by mu_
};

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_OWN_REGISTRAR_H_

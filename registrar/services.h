// The gRPC services the registrar serves to kubelet on the registration socket.
//
// pluginregistration.Registration is kubelet's plugin-registration API; CSIRegistration is the
// service of the "Pod in CSI NodePublish request" design proposal, which would let kubelet learn
// whether the driver wants pod information in NodePublishVolume (no kubelet release calls it). Both answer from immutable data,
// so they are thread-safe; NotifyRegistrationStatus hands kubelet's verdict to a callback.
#ifndef NDR_REGISTRAR_SERVICES_H_
#define NDR_REGISTRAR_SERVICES_H_

#include <atomic>
#include <functional>
#include <string>


#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"

namespace ndr::registrar {

// The CSI spec version the registrar announces; kubelet accepts 1.x.
inline constexpr char kSupportedVersion[] = "1.0.0";

struct RegistrationInfo {
  std::string driver_name;
  // --kubelet-registration-path: the driver's socket as kubelet sees it.
  std::string endpoint;
  bool requires_publish_pod = false;
};

// The metadata key (with any value) by which the registrar's own health check marks its GetInfo,
// so that it does not count as kubelet's (Verdict::after_get_info).
inline constexpr char kHealthCheckMetadata[] = "x-ndr-registrar-health-check";

// Kubelet's verdict from NotifyRegistrationStatus.
struct Verdict {
  bool registered = false;
  std::string error;
  // Whether this server had answered a GetInfo (not the health check's) before the verdict came.
  // Kubelet's handshake starts with GetInfo on the socket it judges, and then sends its verdict
  // over the same gRPC connection, which gRPC re-dials by path if the socket was replaced
  // meanwhile. So a verdict on a server that never answered GetInfo is about an earlier socket
  // at the same path (registration_watchdog.h).
  bool after_get_info = false;
  // How many GetInfo calls (not the health check's) this server answered since its previous
  // verdict, or since it started: the handshakes begun on this socket that this verdict ends, for
  // the log. Anyone may call GetInfo (kubeletclient probe, another registrar's health check), so
  // it says nothing about which kubelet asked.
  int handshakes = 0;
};

// Called with kubelet's verdict, on a gRPC thread, before the reply is sent.
using NotifyCallback = std::function<void(const Verdict&)>;

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(RegistrationInfo info, NotifyCallback notify)
      : info_(std::move(info)), notify_(std::move(notify)) {}

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override;

  // Whether kubelet (not the health check) has called GetInfo on this server.
  bool asked_for_info() const { return asked_for_info_.load(); }

 private:
  const RegistrationInfo info_;
  const NotifyCallback notify_;
  std::atomic<bool> asked_for_info_{false};
  // Handshakes since the last verdict. Atomic: GetInfo and NotifyRegistrationStatus run on any of
  // gRPC's threads.
  std::atomic<int> handshakes_{0};
};

class CSIRegistrationService final : public csiregistration::CSIRegistration::Service {
 public:
  explicit CSIRegistrationService(RegistrationInfo info) : info_(std::move(info)) {}

  grpc::Status GetCSIDriverInfo(grpc::ServerContext* context,
                                const csiregistration::CSIDriverInfoRequest* request,
                                csiregistration::CSIDriverInfo* response) override;

 private:
  const RegistrationInfo info_;
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_SERVICES_H_

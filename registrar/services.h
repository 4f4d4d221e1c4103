// The gRPC services the registrar serves to kubelet on the registration socket.
//
// pluginregistration.Registration is kubelet's plugin-registration API; CSIRegistration is the
// pod-info design's service (../shared/seeds/000_141718e99ab9153d.txt), which lets kubelet learn
// whether the driver wants pod information in NodePublishVolume. Both answer from immutable data,
// so they are thread-safe; NotifyRegistrationStatus hands kubelet's verdict to a callback.
#ifndef NDR_REGISTRAR_SERVICES_H_
#define NDR_REGISTRAR_SERVICES_H_

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

// Called with kubelet's verdict from NotifyRegistrationStatus, on a gRPC thread, before the
// reply is sent.
using NotifyCallback = std::function<void(bool registered, const std::string& error)>;

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(RegistrationInfo info, NotifyCallback notify)
      : info_(std::move(info)), notify_(std::move(notify)) {}

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override;

 private:
  const RegistrationInfo info_;
  const NotifyCallback notify_;
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

// The sample driver's Controller service (sample-csi-driver --controller), as a driver with a
// controller plugin has one: CREATE_DELETE_VOLUME and PUBLISH_UNPUBLISH_VOLUME, so that a CO (or
// `kubeletclient sanity`, which creates its volumes as csi-sanity does) can make a volume and
// attach it to a node.
//
// Volumes live in memory, by name: CreateVolume of a name returns the same volume again
// (capacity as first asked), and another capacity for the same name is ALREADY_EXISTS, as the
// spec says. The volume ID is "sample-" followed by the name. ControllerPublishVolume of a known
// volume to a node answers the publish context kAttachedToKey = the node ID, which the node side
// then requires (NodeService with DriverOptions::controller): a volume is staged and published
// only on the node it was attached to, as a real attachable volume is. Unpublish and delete are
// idempotent. Thread-safe.
#ifndef NDR_TEST_CSIDRIVER_SAMPLE_CONTROLLER_H_
#define NDR_TEST_CSIDRIVER_SAMPLE_CONTROLLER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/csi/csi.grpc.pb.h"
#include "test/csidriver/call_record.h"
#include "test/csidriver/sample_driver.h"  // kAttachedToKey

namespace ndr::sample {

// The capacity of a volume created without a capacity range: 1 MiB.
inline constexpr int64_t kDefaultCapacity = int64_t{1} << 20;

class ControllerService final : public csi::v1::Controller::Service {
 public:
  // `refuse_block`: CreateVolume answers INVALID_ARGUMENT for a block access type, as a driver
  // with filesystem volumes only (a hostpath-style one) does. `record`, if given, gets every
  // request (--record).
  explicit ControllerService(bool refuse_block = false,
                             std::shared_ptr<CallRecord> record = nullptr)
      : refuse_block_(refuse_block), record_(std::move(record)) {}

  grpc::Status CreateVolume(grpc::ServerContext* context,
                            const csi::v1::CreateVolumeRequest* request,
                            csi::v1::CreateVolumeResponse* response) override;
  grpc::Status DeleteVolume(grpc::ServerContext* context,
                            const csi::v1::DeleteVolumeRequest* request,
                            csi::v1::DeleteVolumeResponse* response) override;
  grpc::Status ControllerPublishVolume(grpc::ServerContext* context,
                                       const csi::v1::ControllerPublishVolumeRequest* request,
                                       csi::v1::ControllerPublishVolumeResponse* response) override;
  grpc::Status ControllerUnpublishVolume(
      grpc::ServerContext* context, const csi::v1::ControllerUnpublishVolumeRequest* request,
      csi::v1::ControllerUnpublishVolumeResponse* response) override;
  grpc::Status ControllerGetCapabilities(
      grpc::ServerContext* context, const csi::v1::ControllerGetCapabilitiesRequest* request,
      csi::v1::ControllerGetCapabilitiesResponse* response) override;

 private:
  const bool refuse_block_;
  const std::shared_ptr<CallRecord> record_;
  std::mutex mu_;
  std::map<std::string, int64_t> capacity_by_id_;  // guarded by mu_
};

}  // namespace ndr::sample

#endif  // NDR_TEST_CSIDRIVER_SAMPLE_CONTROLLER_H_

// The fixture of the golden tests of the kubelet side's volume sequence
// (kubelet_sequence_test.cc, kubelet_block_test.cc, kubelet_claims_test.cc): `kubeletclient
// publish` and `unpublish` run as real processes against a CSI driver faked in the test process
// that records every call, and the exact files left under --root-dir after each step.
//
// Each kubeletclient command starts with the registration handshake, whose only call on the
// driver is NodeGetInfo; the fake registrar answers GetInfo for the recording driver.
#ifndef NDR_TEST_UTIL_KUBELET_SEQUENCE_FIXTURE_H_
#define NDR_TEST_UTIL_KUBELET_SEQUENCE_FIXTURE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/csi/csi.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/temp_dir.h"

namespace ndr::testing {

inline constexpr char kDriver[] = "rec.csi.example.com";
// sha256("vol-1") and sha256("vol-1" + kDriver + "node-1"), computed with sha256sum.
inline constexpr char kVol1Sha[] =
    "d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49";
inline constexpr char kVol1Attachment[] =
    "csi-3b7ff80b77217c168bf7b1048bc16077bbca2f3995b537170cd1240c42ecd08e";

// A CSI driver that records every Node call, as "Method <request in protobuf text>", with the
// root directory shown as <root>. Its capabilities and failures are the test's to choose. Its
// NodePublishVolume makes the target (a directory, or for a block volume an empty file) and
// NodeUnpublishVolume removes it, as a real driver's mount and unmount would.
class RecordingDriver final : public csi::v1::Identity::Service, public csi::v1::Node::Service {
 public:
  struct Config {
    bool stage = false;         // STAGE_UNSTAGE_VOLUME
    bool mount_group = false;   // VOLUME_MOUNT_GROUP
    bool multi_writer = false;  // SINGLE_NODE_MULTI_WRITER
    bool expand = false;        // EXPAND_VOLUME
    bool stats = false;         // GET_VOLUME_STATS
    bool condition = false;     // VOLUME_CONDITION
    // NodeGetVolumeStats's answer.
    csi::v1::NodeGetVolumeStatsResponse stats_response;
    bool volume_health = false;   // GET_VOLUME_HEALTH, answering volume_health_response
    bool storage_health = false;  // GET_STORAGE_HEALTH, answering storage_health_response
    csi::v1::NodeGetVolumeHealthResponse volume_health_response;
    csi::v1::NodeGetStorageHealthResponse storage_health_response;
    std::map<std::string, grpc::Status> fail;  // by method
    bool make_targets = true;   // NodePublishVolume makes its target, NodeUnpublishVolume removes it
  };

  RecordingDriver(const std::string& socket, std::string root);
  ~RecordingDriver() override;

  void Configure(Config config);
  // The calls recorded since the last Take().
  std::vector<std::string> Take();
  // The method names of Take().
  std::vector<std::string> TakeMethods();
  // The csi.storage.k8s.io/serviceAccount.tokens values NodePublishVolume received, in order
  // (the recorded calls show "<tokens>" in their place).
  std::vector<std::string> TakeTokens();

  grpc::Status GetPluginInfo(grpc::ServerContext*, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* response) override;
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest* request,
                           csi::v1::NodeGetInfoResponse* response) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext*,
                                   const csi::v1::NodeGetCapabilitiesRequest* request,
                                   csi::v1::NodeGetCapabilitiesResponse* response) override;
  grpc::Status NodeStageVolume(grpc::ServerContext*, const csi::v1::NodeStageVolumeRequest* request,
                               csi::v1::NodeStageVolumeResponse*) override;
  grpc::Status NodeUnstageVolume(grpc::ServerContext*,
                                 const csi::v1::NodeUnstageVolumeRequest* request,
                                 csi::v1::NodeUnstageVolumeResponse*) override;
  grpc::Status NodePublishVolume(grpc::ServerContext*,
                                 const csi::v1::NodePublishVolumeRequest* request,
                                 csi::v1::NodePublishVolumeResponse*) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*,
                                   const csi::v1::NodeUnpublishVolumeRequest* request,
                                   csi::v1::NodeUnpublishVolumeResponse*) override;
  // Answers with the capacity asked for.
  grpc::Status NodeExpandVolume(grpc::ServerContext*,
                                const csi::v1::NodeExpandVolumeRequest* request,
                                csi::v1::NodeExpandVolumeResponse* response) override;
  grpc::Status NodeGetVolumeStats(grpc::ServerContext*,
                                  const csi::v1::NodeGetVolumeStatsRequest* request,
                                  csi::v1::NodeGetVolumeStatsResponse* response) override;
  grpc::Status NodeGetVolumeHealth(grpc::ServerContext*,
                                   const csi::v1::NodeGetVolumeHealthRequest* request,
                                   csi::v1::NodeGetVolumeHealthResponse* response) override;
  grpc::Status NodeGetStorageHealth(grpc::ServerContext*,
                                    const csi::v1::NodeGetStorageHealthRequest* request,
                                    csi::v1::NodeGetStorageHealthResponse* response) override;

 private:
  grpc::Status Record(const std::string& method, const google::protobuf::Message& request);
  grpc::Status RecordLocked(const std::string& method, const google::protobuf::Message& request);

  const std::string root_;
  std::mutex mu_;
  Config config_;
  std::vector<std::string> calls_;
  std::vector<std::string> tokens_;
  std::unique_ptr<grpc::Server> server_;
};

// The driver's registrar, as kubelet sees it: GetInfo names the driver and its socket.
class FakeRegistrar final : public pluginregistration::Registration::Service {
 public:
  FakeRegistrar(const std::string& socket, std::string endpoint, std::string name = kDriver);
  ~FakeRegistrar() override;
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override;
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override;

 private:
  const std::string endpoint_;
  const std::string name_;
  std::unique_ptr<grpc::Server> server_;
};

// A pod in namespace shop with one volume, `volume` (YAML of one item of spec.volumes), which its
// container mounts (or, with `block`, maps as a device). `extra_spec` goes into the spec as it is.
std::string PodYaml(const std::string& name, const std::string& uid, const std::string& volume,
                    const std::string& extra_spec = "", bool block = false);

inline constexpr char kClaimVolume[] = "{name: data, persistentVolumeClaim: {claimName: data}}";

// The claim `claim` (UID claim-uid-1) bound to PV pv-1 (handle vol-1, ext4, mount option noatime,
// attribute tier: gold), with `csi_extra` added to the PV's spec.csi and `spec_extra` to its
// spec. Bound both ways, as the PV controller leaves them.
std::string ClaimAndVolume(const std::string& access_modes = "[ReadWriteOnce]",
                           const std::string& csi_extra = "", const std::string& spec_extra = "",
                           const std::string& claim = "data");

// The same PV in volumeMode Block.
std::string BlockClaimAndVolume(const std::string& access_modes = "[ReadWriteOnce]",
                                const std::string& csi_extra = "");

// The driver's CSIDriver object with `spec` (YAML flow mapping).
std::string CsiDriverYaml(const std::string& spec);

// The VolumeAttachment of vol-1 on node-1 for pv-1, with `status` (YAML flow mapping).
std::string AttachmentYaml(const std::string& status);

// The files of a persistent volume pv-1 published for pod uid-a, staged or not.
const std::vector<std::string>& PublishedPvFiles();
// What stays after the last pod's unpublish: kubelet removes the device directory but not the
// driver's directory, and the pod's directories are the pod cleanup's, not the plugin's.
const std::vector<std::string>& TornDownFiles();
// pv-1's target for pod uid-a, and its staging path (the globalmount), as recorded.
extern const char kPvTarget[];
extern const char kStagingPath[];

class KubeletSequenceTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // Writes the objects; the objects directory is emptied first.
  void Objects(const std::map<std::string, std::string>& files);

  // Runs `command` for `pod` (YAML), with `flags` added; returns the exit code, fills `output`.
  // Block volumes' bind mounts and loop devices are skipped (--block-host-ops=skip), so that the
  // files on disk are the same whoever runs the test.
  int Run(const std::string& command, const std::string& pod, std::string* output,
          const std::vector<std::string>& flags = {});
  // The same, with standard output (the report) apart from the log: `report` is its JSON, null
  // if it is not JSON (then `stdout_text` says what it was).
  int RunReport(const std::string& command, const std::string& pod, std::string* log,
                nlohmann::json* report, const std::vector<std::string>& flags = {},
                std::string* stdout_text = nullptr);

  // Every path under the root, relative, sorted: directories with a trailing '/', symbolic links
  // with " -> " and their target, files with " = " and their contents.
  std::vector<std::string> Files();

  int RunCommand(const std::string& command, const std::string& pod, std::string* output,
                 std::string* stdout_text, const std::vector<std::string>& flags);

  TempDir dir_{"seq"};
  const std::string reg_ = dir_.Join("reg"), root_ = dir_.Join("root");
  const std::string objects_ = dir_.Join("objects");
  RecordingDriver driver_{dir_.Join("csi.sock"), root_};
  std::unique_ptr<FakeRegistrar> registrar_;
  int runs_ = 0;
};

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_KUBELET_SEQUENCE_FIXTURE_H_

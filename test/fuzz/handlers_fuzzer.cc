// Fuzzes the gRPC request handlers with arbitrary protobuf bytes: the registrar's Registration
// and CSIRegistration services and the sample driver's Node service, called directly as gRPC
// would after parsing, the Node service both without and with --stage-unstage. The first byte
// picks the handler. Target and staging paths are always redirected into a directory of this
// fuzzer's own.
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "registrar/services.h"
#include "test/csidriver/sample_driver.h"

namespace {

// A directory of this fuzzer's own, removed when the process exits: runs are many and short
// (every test run replays the corpus), so they must leave nothing in /tmp.
class Sandbox {
 public:
  Sandbox() {
    char templ[] = "/tmp/ndr-fuzz-XXXXXX";
    if (mkdtemp(templ) == nullptr) {
      perror("handlers_fuzzer: mkdtemp /tmp/ndr-fuzz-XXXXXX");
      abort();
    }
    dir_ = templ;
    mkdir((dir_ + "/pod").c_str(), 0755);
    mkdir((dir_ + "/staging").c_str(), 0755);
  }
  ~Sandbox() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

const std::string& SandboxDir() {
  static const Sandbox sandbox;
  return sandbox.dir();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  static ndr::registrar::RegistrationService registration(
      {"fuzz.example.com", "/tmp/fuzz.sock", true}, [](const ndr::registrar::Verdict&) {});
  static ndr::registrar::CSIRegistrationService csi_registration(
      {"fuzz.example.com", "/tmp/fuzz.sock", true});
  static ndr::sample::NodeService node([] {
    ndr::sample::DriverOptions options;
    options.node_id = "node";
    return options;
  }());
  static ndr::sample::NodeService staging_node([] {
    ndr::sample::DriverOptions options;
    options.node_id = "node";
    options.stage_unstage = true;
    return options;
  }());
  grpc::ServerContext context;
  switch (data[0] % 8) {
    case 0: {
      pluginregistration::InfoRequest request;
      pluginregistration::PluginInfo response;
      if (request.ParseFromString(bytes)) registration.GetInfo(&context, &request, &response);
      break;
    }
    case 1: {
      pluginregistration::RegistrationStatus request;
      pluginregistration::RegistrationStatusResponse response;
      if (request.ParseFromString(bytes)) {
        registration.NotifyRegistrationStatus(&context, &request, &response);
      }
      break;
    }
    case 2: {
      csiregistration::CSIDriverInfoRequest request;
      csiregistration::CSIDriverInfo response;
      if (request.ParseFromString(bytes)) {
        csi_registration.GetCSIDriverInfo(&context, &request, &response);
      }
      break;
    }
    case 3: {
      csi::v1::NodePublishVolumeRequest request;
      csi::v1::NodePublishVolumeResponse response;
      if (!request.ParseFromString(bytes)) break;
      request.set_target_path(SandboxDir() + "/pod/mount");
      node.NodePublishVolume(&context, &request, &response);
      break;
    }
    case 4: {
      csi::v1::NodeUnpublishVolumeRequest request;
      csi::v1::NodeUnpublishVolumeResponse response;
      if (!request.ParseFromString(bytes)) break;
      request.set_target_path(SandboxDir() + "/pod/mount");
      node.NodeUnpublishVolume(&context, &request, &response);
      break;
    }
    case 5: {
      csi::v1::NodeStageVolumeRequest request;
      csi::v1::NodeStageVolumeResponse response;
      if (!request.ParseFromString(bytes)) break;
      request.set_staging_target_path(SandboxDir() + "/staging");
      staging_node.NodeStageVolume(&context, &request, &response);
      break;
    }
    case 6: {
      csi::v1::NodeUnstageVolumeRequest request;
      csi::v1::NodeUnstageVolumeResponse response;
      if (!request.ParseFromString(bytes)) break;
      request.set_staging_target_path(SandboxDir() + "/staging");
      staging_node.NodeUnstageVolume(&context, &request, &response);
      break;
    }
    case 7: {
      csi::v1::NodePublishVolumeRequest request;
      csi::v1::NodePublishVolumeResponse response;
      if (!request.ParseFromString(bytes)) break;
      request.set_target_path(SandboxDir() + "/pod/mount");
      if (!request.staging_target_path().empty()) {
        request.set_staging_target_path(SandboxDir() + "/staging");
      }
      staging_node.NodePublishVolume(&context, &request, &response);
      break;
    }
  }
  return 0;
}

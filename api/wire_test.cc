// Wire compatibility of the three proto packages with the real ones.
//
// Each expected byte string below was derived by hand from the field numbers of the real protos
// (kubelet's pluginregistration api.proto, the CSI spec's csi.proto) (tag byte = field_number << 3 | wire_type; wire type 0 is a varint,
// 2 a length-delimited field), not produced by this code. Method paths are checked by calling the
// generated services through a generic (untyped) gRPC client with the literal paths the real
// kubelet and CSI drivers use.
#include <stdlib.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <string>

#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"

namespace ndr {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

template <typename Message>
void ExpectWire(const Message& message, const std::string& expected) {
  std::string actual;
  ASSERT_TRUE(message.SerializeToString(&actual));
  EXPECT_EQ(actual, expected) << Message::descriptor()->full_name();
  Message parsed;
  ASSERT_TRUE(parsed.ParseFromString(expected)) << Message::descriptor()->full_name();
  EXPECT_EQ(parsed.SerializeAsString(), expected) << Message::descriptor()->full_name();
}

TEST(WireTest, PluginInfo) {
  pluginregistration::PluginInfo info;
  info.set_type("CSIPlugin");
  info.set_name("d");
  info.set_endpoint("/e");
  info.add_supported_versions("1.0.0");
  ExpectWire(info, Bytes({0x0a, 9, 'C', 'S', 'I', 'P', 'l', 'u', 'g', 'i', 'n',  // type = 1
                          0x12, 1, 'd',                                          // name = 2
                          0x1a, 2, '/', 'e',                                     // endpoint = 3
                          0x22, 5, '1', '.', '0', '.', '0'}));  // supported_versions = 4
}

TEST(WireTest, RegistrationStatus) {
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  status.set_error("x");
  ExpectWire(status, Bytes({0x08, 1,          // plugin_registered = 1 (varint)
                            0x12, 1, 'x'}));  // error = 2
}

TEST(WireTest, CSIDriverInfo) {
  csiregistration::CSIDriverInfo info;
  info.set_csi_endpoint("/c");
  info.mutable_options()->set_requires_publish_pod(true);
  ExpectWire(info, Bytes({0x0a, 2, '/', 'c',        // csi_endpoint = 1
                          0x12, 2, 0x08, 1}));      // options = 2 { requires_publish_pod = 1 }
}

TEST(WireTest, GetPluginInfoResponse) {
  csi::v1::GetPluginInfoResponse response;
  response.set_name("n");
  response.set_vendor_version("v");
  (*response.mutable_manifest())["k"] = "w";
  ExpectWire(response, Bytes({0x0a, 1, 'n',      // name = 1
                              0x12, 1, 'v',      // vendor_version = 2
                              0x1a, 6,           // manifest = 3, one map entry:
                              0x0a, 1, 'k',      //   key = 1
                              0x12, 1, 'w'}));   //   value = 2
}

TEST(WireTest, ProbeResponse) {
  csi::v1::ProbeResponse response;
  response.mutable_ready()->set_value(true);
  ExpectWire(response, Bytes({0x0a, 2, 0x08, 1}));  // ready = 1 { BoolValue.value = 1 }
}

TEST(WireTest, NodeGetInfoResponse) {
  csi::v1::NodeGetInfoResponse response;
  response.set_node_id("n");
  response.set_max_volumes_per_node(300);
  (*response.mutable_accessible_topology()->mutable_segments())["z"] = "a";
  ExpectWire(response, Bytes({0x0a, 1, 'n',                 // node_id = 1
                              0x10, 0xac, 0x02,             // max_volumes_per_node = 2: 300
                              0x1a, 8,                      // accessible_topology = 3
                              0x0a, 6,                      //   segments = 1, one entry
                              0x0a, 1, 'z', 0x12, 1, 'a'}));
}

TEST(WireTest, NodePublishVolumeRequest) {
  csi::v1::NodePublishVolumeRequest request;
  request.set_volume_id("v");
  (*request.mutable_publish_context())["p"] = "q";
  request.set_staging_target_path("s");
  request.set_target_path("/t");
  request.mutable_volume_capability()->mutable_mount()->set_fs_type("ext4");
  request.mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  request.set_readonly(true);
  (*request.mutable_secrets())["a"] = "b";
  (*request.mutable_volume_context())["c"] = "d";
  ExpectWire(request, Bytes({0x0a, 1, 'v',                            // volume_id = 1
                             0x12, 6, 0x0a, 1, 'p', 0x12, 1, 'q',     // publish_context = 2
                             0x1a, 1, 's',                            // staging_target_path = 3
                             0x22, 2, '/', 't',                       // target_path = 4
                             0x2a, 12,                                // volume_capability = 5
                             0x12, 6, 0x0a, 4, 'e', 'x', 't', '4',    //   mount = 2 {fs_type = 1}
                             0x1a, 2, 0x08, 1,                        //   access_mode = 3 {mode = 1}
                             0x30, 1,                                 // readonly = 6
                             0x3a, 6, 0x0a, 1, 'a', 0x12, 1, 'b',     // secrets = 7
                             0x42, 6, 0x0a, 1, 'c', 0x12, 1, 'd'}));  // volume_context = 8
}

TEST(WireTest, NodeStageVolumeRequest) {
  csi::v1::NodeStageVolumeRequest request;
  request.set_volume_id("v");
  (*request.mutable_publish_context())["p"] = "q";
  request.set_staging_target_path("/s");
  request.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("5");
  (*request.mutable_secrets())["a"] = "b";
  (*request.mutable_volume_context())["c"] = "d";
  ExpectWire(request, Bytes({0x0a, 1, 'v',                            // volume_id = 1
                             0x12, 6, 0x0a, 1, 'p', 0x12, 1, 'q',     // publish_context = 2
                             0x1a, 2, '/', 's',                       // staging_target_path = 3
                             0x22, 5,                                 // volume_capability = 4
                             0x12, 3, 0x1a, 1, '5',                   //   mount {mount_group = 3}
                             0x2a, 6, 0x0a, 1, 'a', 0x12, 1, 'b',     // secrets = 5
                             0x32, 6, 0x0a, 1, 'c', 0x12, 1, 'd'}));  // volume_context = 6
}

TEST(WireTest, NodeUnstageVolumeRequest) {
  csi::v1::NodeUnstageVolumeRequest request;
  request.set_volume_id("v");
  request.set_staging_target_path("/s");
  ExpectWire(request, Bytes({0x0a, 1, 'v', 0x12, 2, '/', 's'}));
}

TEST(WireTest, BlockAccessTypeIsFieldOne) {
  csi::v1::VolumeCapability capability;
  capability.mutable_block();
  ExpectWire(capability, Bytes({0x0a, 0}));  // block = 1, empty message
}

TEST(WireTest, NodeUnpublishVolumeRequest) {
  csi::v1::NodeUnpublishVolumeRequest request;
  request.set_volume_id("v");
  request.set_target_path("/t");
  ExpectWire(request, Bytes({0x0a, 1, 'v', 0x12, 2, '/', 't'}));
}

TEST(WireTest, NodeExpandVolume) {
  csi::v1::NodeExpandVolumeRequest request;
  request.set_volume_id("v");
  request.set_volume_path("/p");
  request.mutable_capacity_range()->set_required_bytes(300);
  request.set_staging_target_path("/s");
  request.mutable_volume_capability()->mutable_block();
  (*request.mutable_secrets())["k"] = "x";
  ExpectWire(request, Bytes({0x0a, 1, 'v',                   // volume_id = 1
                             0x12, 2, '/', 'p',              // volume_path = 2
                             0x1a, 3, 0x08, 0xac, 0x02,      // capacity_range = 3 { 1: 300 }
                             0x22, 2, '/', 's',              // staging_target_path = 4
                             0x2a, 2, 0x0a, 0,               // volume_capability = 5 { block }
                             0x32, 6, 0x0a, 1, 'k', 0x12, 1, 'x'}));  // secrets = 6 {k: x}
  csi::v1::NodeExpandVolumeResponse response;
  response.set_capacity_bytes(1);
  ExpectWire(response, Bytes({0x08, 1}));  // capacity_bytes = 1
}

TEST(WireTest, NodeGetVolumeStats) {
  csi::v1::NodeGetVolumeStatsRequest request;
  request.set_volume_id("v");
  request.set_volume_path("/p");
  request.set_staging_target_path("/s");
  ExpectWire(request, Bytes({0x0a, 1, 'v', 0x12, 2, '/', 'p', 0x1a, 2, '/', 's'}));
  csi::v1::NodeGetVolumeStatsResponse response;
  csi::v1::VolumeUsage* usage = response.add_usage();
  usage->set_available(1);
  usage->set_total(2);
  usage->set_used(3);
  usage->set_unit(csi::v1::VolumeUsage::INODES);
  response.mutable_volume_condition()->set_abnormal(true);
  response.mutable_volume_condition()->set_message("m");
  ExpectWire(response,
             Bytes({0x0a, 8, 0x08, 1, 0x10, 2, 0x18, 3, 0x20, 2,  // usage = 1 {1, 2, 3, unit 4: 2}
                    0x12, 5, 0x08, 1, 0x12, 1, 'm'}));  // volume_condition = 2 {abnormal, "m"}
}

// The health RPCs of the spec after v1.12 (kubelet v1.37 is built with
// v1.12.1-0.20260720052920-cd9e7ad1ae09): field numbers and enum values as csi.proto has them.
TEST(WireTest, NodeHealth) {
  csi::v1::NodeGetVolumeHealthRequest request;
  request.set_volume_id("v");
  request.set_volume_publish_path("/p");
  request.set_staging_target_path("/s");
  ExpectWire(request, Bytes({0x0a, 1, 'v', 0x12, 2, '/', 'p', 0x1a, 2, '/', 's'}));
  csi::v1::NodeGetVolumeHealthResponse response;
  response.mutable_volume_health()->set_volume_id("v");
  auto* entry = response.mutable_volume_health()->add_health_statuses();
  entry->set_status(csi::v1::INACCESSIBLE);
  entry->set_reason("R");
  // volume_health = 1 {volume_id = 1 "v", health_statuses = 2 {status = 1: 2, reason = 2 "R"}}
  ExpectWire(response, Bytes({0x0a, 10, 0x0a, 1, 'v', 0x12, 5, 0x08, 2, 0x12, 1, 'R'}));
  csi::v1::NodeGetStorageHealthResponse storage;
  auto* backend = storage.add_backend_health();
  backend->set_status(csi::v1::STORAGE_UNREACHABLE);
  backend->mutable_volume_capability()->mutable_block();
  // backend_health = 1 {status = 1: 2, volume_capability = 4 {block = 1 {}}}
  ExpectWire(storage, Bytes({0x0a, 6, 0x08, 2, 0x22, 2, 0x0a, 0}));
  csi::v1::NodeServiceCapability capability;
  capability.mutable_rpc()->set_type(csi::v1::NodeServiceCapability::RPC::GET_STORAGE_HEALTH);
  ExpectWire(capability, Bytes({0x0a, 2, 0x08, 8}));
}

// The Controller calls `kubeletclient sanity` makes to create and attach a volume.
TEST(WireTest, ControllerCalls) {
  csi::v1::CreateVolumeRequest create;
  create.set_name("n");
  create.mutable_capacity_range()->set_required_bytes(1);
  create.add_volume_capabilities()->mutable_block();
  (*create.mutable_parameters())["p"] = "q";
  (*create.mutable_secrets())["k"] = "x";
  ExpectWire(create, Bytes({0x0a, 1, 'n',                            // name = 1
                            0x12, 2, 0x08, 1,                        // capacity_range = 2
                            0x1a, 2, 0x0a, 0,                        // volume_capabilities = 3
                            0x22, 6, 0x0a, 1, 'p', 0x12, 1, 'q',     // parameters = 4
                            0x2a, 6, 0x0a, 1, 'k', 0x12, 1, 'x'}));  // secrets = 5
  csi::v1::CreateVolumeResponse created;
  created.mutable_volume()->set_capacity_bytes(2);
  created.mutable_volume()->set_volume_id("v");
  (*created.mutable_volume()->mutable_volume_context())["c"] = "d";
  created.mutable_volume()->add_accessible_topology();
  ExpectWire(created, Bytes({0x0a, 15, 0x08, 2, 0x12, 1, 'v',     // volume = 1 {1: 2, 2: "v",
                             0x1a, 6, 0x0a, 1, 'c', 0x12, 1, 'd',  //   volume_context = 3,
                             0x2a, 0}));                           //   accessible_topology = 5}
  csi::v1::ControllerPublishVolumeRequest publish;
  publish.set_volume_id("v");
  publish.set_node_id("n");
  publish.mutable_volume_capability()->mutable_block();
  publish.set_readonly(true);
  (*publish.mutable_volume_context())["c"] = "d";
  ExpectWire(publish, Bytes({0x0a, 1, 'v', 0x12, 1, 'n', 0x1a, 2, 0x0a, 0, 0x20, 1,
                             0x32, 6, 0x0a, 1, 'c', 0x12, 1, 'd'}));  // volume_context = 6
  csi::v1::ControllerPublishVolumeResponse published;
  (*published.mutable_publish_context())["a"] = "b";
  ExpectWire(published, Bytes({0x0a, 6, 0x0a, 1, 'a', 0x12, 1, 'b'}));
  csi::v1::ControllerUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id("v");
  unpublish.set_node_id("n");
  ExpectWire(unpublish, Bytes({0x0a, 1, 'v', 0x12, 1, 'n'}));
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id("v");
  ExpectWire(del, Bytes({0x0a, 1, 'v'}));
  csi::v1::ControllerGetCapabilitiesResponse capabilities;
  capabilities.add_capabilities()->mutable_rpc()->set_type(
      csi::v1::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME);
  ExpectWire(capabilities, Bytes({0x0a, 4, 0x0a, 2, 0x08, 2}));
}

TEST(WireTest, CapabilitiesAndEnums) {
  csi::v1::GetPluginCapabilitiesResponse plugin;
  plugin.add_capabilities()->mutable_service()->set_type(
      csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);
  // capabilities = 1 { service = 1 { type = 1: 2 } }
  ExpectWire(plugin, Bytes({0x0a, 4, 0x0a, 2, 0x08, 2}));

  csi::v1::NodeGetCapabilitiesResponse node;
  node.add_capabilities()->mutable_rpc()->set_type(
      csi::v1::NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP);
  // capabilities = 1 { rpc = 1 { type = 1: 6 } }
  ExpectWire(node, Bytes({0x0a, 4, 0x0a, 2, 0x08, 6}));
}

// Services whose every method answers OK, so that a call reaching them by its literal path is
// told apart from gRPC's UNIMPLEMENTED for an unknown path.
class Registration final : public pluginregistration::Registration::Service {
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_name("reached");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    return grpc::Status::OK;
  }
};

class CSIRegistration final : public csiregistration::CSIRegistration::Service {
  grpc::Status GetCSIDriverInfo(grpc::ServerContext*, const csiregistration::CSIDriverInfoRequest*,
                                csiregistration::CSIDriverInfo*) override {
    return grpc::Status::OK;
  }
};

class Identity final : public csi::v1::Identity::Service {
  grpc::Status GetPluginInfo(grpc::ServerContext*, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status GetPluginCapabilities(grpc::ServerContext*,
                                     const csi::v1::GetPluginCapabilitiesRequest*,
                                     csi::v1::GetPluginCapabilitiesResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                     csi::v1::ProbeResponse*) override {
    return grpc::Status::OK;
  }
};

class Node final : public csi::v1::Node::Service {
  grpc::Status NodeStageVolume(grpc::ServerContext*, const csi::v1::NodeStageVolumeRequest*,
                               csi::v1::NodeStageVolumeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeUnstageVolume(grpc::ServerContext*, const csi::v1::NodeUnstageVolumeRequest*,
                                 csi::v1::NodeUnstageVolumeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodePublishVolume(grpc::ServerContext*, const csi::v1::NodePublishVolumeRequest*,
                                 csi::v1::NodePublishVolumeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*,
                                   const csi::v1::NodeUnpublishVolumeRequest*,
                                   csi::v1::NodeUnpublishVolumeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeGetVolumeStats(grpc::ServerContext*, const csi::v1::NodeGetVolumeStatsRequest*,
                                  csi::v1::NodeGetVolumeStatsResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeGetVolumeHealth(grpc::ServerContext*, const csi::v1::NodeGetVolumeHealthRequest*,
                                   csi::v1::NodeGetVolumeHealthResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeGetStorageHealth(grpc::ServerContext*,
                                    const csi::v1::NodeGetStorageHealthRequest*,
                                    csi::v1::NodeGetStorageHealthResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeExpandVolume(grpc::ServerContext*, const csi::v1::NodeExpandVolumeRequest*,
                                csi::v1::NodeExpandVolumeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeGetCapabilities(grpc::ServerContext*,
                                   const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse*) override {
    return grpc::Status::OK;
  }
};

class MethodPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/ndr-wire-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    const std::string target = "unix:" + dir_ + "/s.sock";
    grpc::ServerBuilder builder;
    builder.AddListeningPort(target, grpc::InsecureServerCredentials());
    builder.RegisterService(&registration_);
    builder.RegisterService(&csi_registration_);
    builder.RegisterService(&identity_);
    builder.RegisterService(&node_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = std::make_unique<grpc::GenericStub>(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    unlink((dir_ + "/s.sock").c_str());
    rmdir(dir_.c_str());
  }

  // Calls `method` with an empty request; returns the status and the raw response bytes.
  grpc::Status Call(const std::string& method, std::string* response_bytes) {
    grpc::ClientContext context;
    context.set_deadline(::ndr::testing::RpcDeadline());
    grpc::ByteBuffer request;  // an empty message
    grpc::Slice empty("");
    request = grpc::ByteBuffer(&empty, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub_->UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                     [&done](grpc::Status status) { done.set_value(status); });
    grpc::Status status = done.get_future().get();
    std::vector<grpc::Slice> slices;
    response_bytes->clear();
    if (status.ok() && response.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    return status;
  }

  std::string dir_;
  Registration registration_;
  CSIRegistration csi_registration_;
  Identity identity_;
  Node node_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

TEST_F(MethodPathTest, RealPathsReachTheGeneratedServices) {
  const char* paths[] = {
      "/pluginregistration.Registration/GetInfo",
      "/pluginregistration.Registration/NotifyRegistrationStatus",
      "/csiregistration.CSIRegistration/GetCSIDriverInfo",
      "/csi.v1.Identity/GetPluginInfo",
      "/csi.v1.Identity/GetPluginCapabilities",
      "/csi.v1.Identity/Probe",
      "/csi.v1.Node/NodeGetInfo",
      "/csi.v1.Node/NodeGetCapabilities",
      "/csi.v1.Node/NodeStageVolume",
      "/csi.v1.Node/NodeUnstageVolume",
      "/csi.v1.Node/NodePublishVolume",
      "/csi.v1.Node/NodeUnpublishVolume",
      "/csi.v1.Node/NodeGetVolumeStats",
      "/csi.v1.Node/NodeExpandVolume",
      "/csi.v1.Node/NodeGetVolumeHealth",
      "/csi.v1.Node/NodeGetStorageHealth",
  };
  for (const char* path : paths) {
    std::string response;
    grpc::Status status = Call(path, &response);
    EXPECT_TRUE(status.ok()) << path << ": " << status.error_code() << " "
                             << status.error_message();
  }
  std::string response;
  ASSERT_TRUE(Call("/pluginregistration.Registration/GetInfo", &response).ok());
  EXPECT_EQ(response, Bytes({0x12, 7, 'r', 'e', 'a', 'c', 'h', 'e', 'd'}));
}

TEST_F(MethodPathTest, UnknownPathIsUnimplemented) {
  std::string response;
  // The v0 CSI package name must not be served: the subset here is csi.v1.
  EXPECT_EQ(Call("/csi.Identity/GetPluginInfo", &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace ndr

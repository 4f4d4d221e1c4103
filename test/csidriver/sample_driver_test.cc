// The sample driver's services, served in-process on a real unix socket and called through the
// generated stubs, as a CO would.
#include "test/csidriver/sample_driver.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kubeletclient/token/jwt.h"
#include "kubeletclient/token/test_keys.h"
#include "test/csidriver/block_volume.h"
#include "test/util/matchers.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::sample {
namespace {

using RPC = csi::v1::NodeServiceCapability::RPC;

// The RPC capability types of a NodeGetCapabilities answer, in order.
std::vector<int> Types(const csi::v1::NodeGetCapabilitiesResponse& response) {
  std::vector<int> types;
  for (const auto& capability : response.capabilities()) types.push_back(capability.rpc().type());
  return types;
}

using ::ndr::testing::IsOk;
using ::ndr::testing::ReadFile;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

class SampleDriverTest : public ::testing::Test {
 protected:
  // Starts the services with `options`; a server already running (a test that restarts the
  // driver with other options) is stopped and gone first, so that none of its threads still
  // uses the services being replaced.
  void Start(DriverOptions options) {
    if (server_) {
      server_->Shutdown();
      server_->Wait();
      server_.reset();
    }
    identity_ = std::make_unique<IdentityService>(options);
    node_ = std::make_unique<NodeService>(options);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + dir_.Join("csi.sock"), grpc::InsecureServerCredentials());
    builder.RegisterService(identity_.get());
    builder.RegisterService(node_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto channel =
        grpc::CreateChannel("unix:" + dir_.Join("csi.sock"), grpc::InsecureChannelCredentials());
    identity_stub_ = csi::v1::Identity::NewStub(channel);
    node_stub_ = csi::v1::Node::NewStub(channel);
    // A restart finds the directory there.
    ASSERT_TRUE(mkdir(dir_.Join("pod").c_str(), 0755) == 0 || errno == EEXIST);
  }

  void SetUp() override {
    DriverOptions options;
    options.node_id = "node-1";
    options.max_volumes_per_node = 7;
    options.topology = {{"topology.sample.csi.example.com/zone", "z1"}};
    Start(options);
  }

  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(::ndr::testing::RpcDeadline());
    return context;
  }

  csi::v1::NodePublishVolumeRequest ValidPublish() {
    csi::v1::NodePublishVolumeRequest request;
    request.set_volume_id("csi-abc");
    request.set_target_path(dir_.Join("pod/mount"));
    request.mutable_volume_capability()->mutable_mount();
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    (*request.mutable_volume_context())["csi.storage.k8s.io/pod.name"] = "web-0";
    (*request.mutable_volume_context())["color"] = "blue";
    (*request.mutable_secrets())["password"] = "hunter2";
    return request;
  }

  grpc::Status Publish(const csi::v1::NodePublishVolumeRequest& request) {
    csi::v1::NodePublishVolumeResponse response;
    return node_stub_->NodePublishVolume(Context().get(), request, &response);
  }

  grpc::Status Unpublish(const std::string& volume_id, const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest request;
    request.set_volume_id(volume_id);
    request.set_target_path(target);
    csi::v1::NodeUnpublishVolumeResponse response;
    return node_stub_->NodeUnpublishVolume(Context().get(), request, &response);
  }

  TempDir dir_{"drv"};
  std::unique_ptr<IdentityService> identity_;
  std::unique_ptr<NodeService> node_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_stub_;
  std::unique_ptr<csi::v1::Node::Stub> node_stub_;
};

TEST_F(SampleDriverTest, IdentityCalls) {
  csi::v1::GetPluginInfoResponse info;
  ASSERT_TRUE(identity_stub_->GetPluginInfo(Context().get(), {}, &info).ok());
  EXPECT_EQ(info.name(), "sample.csi.example.com");
  EXPECT_EQ(info.vendor_version(), "1.0.0");

  csi::v1::GetPluginCapabilitiesResponse capabilities;
  ASSERT_TRUE(identity_stub_->GetPluginCapabilities(Context().get(), {}, &capabilities).ok());
  ASSERT_EQ(capabilities.capabilities_size(), 1);
  EXPECT_EQ(capabilities.capabilities(0).service().type(),
            csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);

  csi::v1::ProbeResponse probe;
  ASSERT_TRUE(identity_stub_->Probe(Context().get(), {}, &probe).ok());
  EXPECT_TRUE(probe.ready().value());
}

TEST_F(SampleDriverTest, NodeGetInfoAndCapabilities) {
  csi::v1::NodeGetInfoResponse info;
  ASSERT_TRUE(node_stub_->NodeGetInfo(Context().get(), {}, &info).ok());
  EXPECT_EQ(info.node_id(), "node-1");
  EXPECT_EQ(info.max_volumes_per_node(), 7);
  EXPECT_EQ(info.accessible_topology().segments().at("topology.sample.csi.example.com/zone"),
            "z1");

  csi::v1::NodeGetCapabilitiesResponse capabilities;
  ASSERT_TRUE(node_stub_->NodeGetCapabilities(Context().get(), {}, &capabilities).ok());
  // No stage/unstage; what kubelet uses after the mount.
  EXPECT_EQ(Types(capabilities),
            (std::vector<int>{RPC::EXPAND_VOLUME, RPC::GET_VOLUME_STATS, RPC::VOLUME_CONDITION,
                              RPC::GET_VOLUME_HEALTH, RPC::GET_STORAGE_HEALTH}));
}

TEST_F(SampleDriverTest, MalformedPublishIsInvalidArgument) {
  struct Case {
    const char* name;
    std::function<void(csi::v1::NodePublishVolumeRequest*)> mutate;
    const char* message;
  } cases[] = {
      {"no volume_id", [](auto* r) { r->clear_volume_id(); }, "volume_id is required"},
      {"no target_path", [](auto* r) { r->clear_target_path(); }, "target_path is required"},
      {"relative target", [](auto* r) { r->set_target_path("pod/mount"); }, "is not absolute"},
      {"no capability", [](auto* r) { r->clear_volume_capability(); },
       "volume_capability is required"},
      {"no access mode", [](auto* r) { r->mutable_volume_capability()->clear_access_mode(); },
       "access_mode is required"},
      {"unknown access mode",
       [](auto* r) { r->mutable_volume_capability()->mutable_access_mode()->set_mode({}); },
       "access_mode is required"},
      {"no access type", [](auto* r) { r->mutable_volume_capability()->clear_mount(); },
       "access_type (mount or block) is required"},
      {"key escapes dir", [](auto* r) { (*r->mutable_volume_context())["../x"] = "1"; },
       "cannot be a file name"},
      {"key with space", [](auto* r) { (*r->mutable_volume_context())["a b"] = "1"; },
       "cannot be a file name"},
  };
  for (const Case& c : cases) {
    csi::v1::NodePublishVolumeRequest request = ValidPublish();
    c.mutate(&request);
    grpc::Status status = Publish(request);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.name;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.name;
    struct stat st;
    EXPECT_NE(stat(dir_.Join("pod/mount").c_str(), &st), 0) << c.name << ": target was created";
  }
}

TEST_F(SampleDriverTest, MalformedUnpublishIsInvalidArgument) {
  EXPECT_EQ(Unpublish("", dir_.Join("pod/mount")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Unpublish("csi-abc", "").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SampleDriverTest, PublishWritesOneFilePerKeyAndUnpublishRemovesThem) {
  const std::string target = dir_.Join("pod/mount");
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  std::string contents;
  ASSERT_TRUE(ReadFile(target + "/csi.storage.k8s.io_pod.name", &contents));
  EXPECT_EQ(contents, "web-0");
  ASSERT_TRUE(ReadFile(target + "/color", &contents));
  EXPECT_EQ(contents, "blue");
  // Secrets never reach the disk.
  ASSERT_TRUE(ReadFile(target + "/" + kMarkerFile, &contents));
  EXPECT_THAT(contents, ::testing::Not(HasSubstr("hunter2")));
  EXPECT_FALSE(ReadFile(target + "/password", &contents));

  // Idempotent: the same call again succeeds and changes nothing.
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  // The same target with other arguments is ALREADY_EXISTS.
  csi::v1::NodePublishVolumeRequest other = ValidPublish();
  (*other.mutable_volume_context())["color"] = "red";
  EXPECT_EQ(Publish(other).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  other = ValidPublish();
  other.set_readonly(true);
  EXPECT_EQ(Publish(other).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  ASSERT_TRUE(ReadFile(target + "/color", &contents));
  EXPECT_EQ(contents, "blue");

  // Another volume's ID does not unpublish this one.
  EXPECT_EQ(Unpublish("csi-other", target).error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(Unpublish("csi-abc", target).ok());
  struct stat st;
  EXPECT_NE(stat(target.c_str(), &st), 0);
  EXPECT_EQ(stat(dir_.Join("pod").c_str(), &st), 0);  // The parent belongs to the CO.
  // Idempotent.
  EXPECT_TRUE(Unpublish("csi-abc", target).ok());
}

// The target directory is the volume: what the pod wrote there goes with it on unpublish, links
// are removed and not followed. (A real kubelet's NodeUnpublishVolume failed on a pod's file
// before: test/e2e/real-node.sh.)
TEST_F(SampleDriverTest, UnpublishRemovesWhatThePodWroteButNothingOutside) {
  const std::string target = dir_.Join("pod/mount");
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  const std::string outside = dir_.Join("outside");
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(outside + "/keep", "keep"));
  ASSERT_EQ(mkdir((target + "/sub").c_str(), 0755), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(target + "/sub/written-by-pod", "data"));
  ASSERT_EQ(symlink(outside.c_str(), (target + "/link").c_str()), 0);
  ASSERT_TRUE(Unpublish("csi-abc", target).ok());
  struct stat st;
  EXPECT_NE(lstat(target.c_str(), &st), 0);
  std::string contents;
  ASSERT_TRUE(ReadFile(outside + "/keep", &contents));
  EXPECT_EQ(contents, "keep");
}

// --stage-unstage: the spec's staging rules.
class StagingDriverTest : public SampleDriverTest {
 protected:
  void SetUp() override {
    DriverOptions options;
    options.node_id = "node-1";
    options.stage_unstage = true;
    Start(options);
    ASSERT_EQ(mkdir(staging_.c_str(), 0750), 0);
  }

  csi::v1::NodeStageVolumeRequest ValidStage() {
    csi::v1::NodeStageVolumeRequest request;
    request.set_volume_id("vol-1");
    request.set_staging_target_path(staging_);
    request.mutable_volume_capability()->mutable_mount()->set_fs_type("ext4");
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    (*request.mutable_publish_context())["devicePath"] = "/dev/xvdf";
    (*request.mutable_secrets())["key"] = "s3cret";
    return request;
  }

  grpc::Status Stage(const csi::v1::NodeStageVolumeRequest& request) {
    csi::v1::NodeStageVolumeResponse response;
    return node_stub_->NodeStageVolume(Context().get(), request, &response);
  }

  grpc::Status Unstage(const std::string& volume_id) {
    csi::v1::NodeUnstageVolumeRequest request;
    request.set_volume_id(volume_id);
    request.set_staging_target_path(staging_);
    csi::v1::NodeUnstageVolumeResponse response;
    return node_stub_->NodeUnstageVolume(Context().get(), request, &response);
  }

  csi::v1::NodePublishVolumeRequest StagedPublish() {
    csi::v1::NodePublishVolumeRequest request = ValidPublish();
    request.set_volume_id("vol-1");
    request.set_staging_target_path(staging_);
    return request;
  }

  const std::string staging_ = dir_.Join("globalmount");
};

TEST_F(StagingDriverTest, AdvertisesStageUnstage) {
  csi::v1::NodeGetCapabilitiesResponse capabilities;
  ASSERT_TRUE(node_stub_->NodeGetCapabilities(Context().get(), {}, &capabilities).ok());
  EXPECT_EQ(Types(capabilities),
            (std::vector<int>{RPC::STAGE_UNSTAGE_VOLUME, RPC::EXPAND_VOLUME,
                              RPC::GET_VOLUME_STATS, RPC::VOLUME_CONDITION,
                              RPC::GET_VOLUME_HEALTH, RPC::GET_STORAGE_HEALTH}));
}

TEST_F(StagingDriverTest, PublishNeedsTheVolumeStagedFirst) {
  EXPECT_EQ(Publish(StagedPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  csi::v1::NodePublishVolumeRequest unstaged = StagedPublish();
  unstaged.clear_staging_target_path();
  EXPECT_EQ(Publish(unstaged).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  ASSERT_TRUE(Stage(ValidStage()).ok());
  std::string staged;
  ASSERT_TRUE(ReadFile(staging_ + "/" + kStagedFile, &staged));
  EXPECT_THAT(staged, HasSubstr("publish_context devicePath /dev/xvdf"));
  EXPECT_THAT(staged, ::testing::Not(HasSubstr("s3cret")));  // secrets never reach the disk
  EXPECT_TRUE(Stage(ValidStage()).ok());                     // idempotent
  csi::v1::NodeStageVolumeRequest other = ValidStage();
  other.set_volume_id("vol-2");
  EXPECT_EQ(Stage(other).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  ASSERT_TRUE(Publish(StagedPublish()).ok());
  ASSERT_TRUE(Unpublish("vol-1", dir_.Join("pod/mount")).ok());
  EXPECT_EQ(Unstage("vol-2").error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(Unstage("vol-1").ok());
  EXPECT_TRUE(Unstage("vol-1").ok());  // idempotent
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
  EXPECT_EQ(Publish(StagedPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

// --lazy-staging: the stage is recorded in the data directory; the staging directory gets its
// content at the first publish and loses it at the unstage.
TEST_F(StagingDriverTest, LazyStagingFillsTheStagingDirectoryAtTheFirstPublish) {
  server_->Shutdown();
  DriverOptions options;
  options.node_id = "node-1";
  options.stage_unstage = true;
  options.lazy_staging = true;
  options.data_dir = dir_.Join("data");
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  Start(options);
  EXPECT_EQ(Publish(StagedPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(Stage(ValidStage()).ok());
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
  ASSERT_TRUE(Stage(ValidStage()).ok());  // idempotent
  ASSERT_TRUE(Publish(StagedPublish()).ok());
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::ElementsAre(kStagedFile));
  ASSERT_TRUE(Unpublish("vol-1", dir_.Join("pod/mount")).ok());
  ASSERT_TRUE(Unstage("vol-1").ok());
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
  EXPECT_EQ(Publish(StagedPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(SampleDriverTest, NoStatsAdvertisesNoStats) {
  server_->Shutdown();
  DriverOptions options;
  options.node_id = "node-1";
  options.no_stats = true;
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  Start(options);
  csi::v1::NodeGetCapabilitiesResponse capabilities;
  ASSERT_TRUE(node_stub_->NodeGetCapabilities(Context().get(), {}, &capabilities).ok());
  EXPECT_EQ(Types(capabilities), (std::vector<int>{RPC::EXPAND_VOLUME}));
}

TEST_F(StagingDriverTest, InlineEphemeralVolumesNeedNoStage) {
  csi::v1::NodePublishVolumeRequest inline_volume = ValidPublish();
  (*inline_volume.mutable_volume_context())["csi.storage.k8s.io/ephemeral"] = "true";
  EXPECT_TRUE(Publish(inline_volume).ok());
  csi::v1::NodePublishVolumeRequest persistent = ValidPublish();
  persistent.set_target_path(dir_.Join("pod/other"));
  (*persistent.mutable_volume_context())["csi.storage.k8s.io/ephemeral"] = "false";
  EXPECT_EQ(Publish(persistent).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(StagingDriverTest, MalformedStageIsInvalidArgument) {
  for (auto mutate : std::vector<std::function<void(csi::v1::NodeStageVolumeRequest*)>>{
           [](auto* r) { r->clear_volume_id(); },
           [](auto* r) { r->clear_staging_target_path(); },
           [](auto* r) { r->set_staging_target_path("relative"); },
           [](auto* r) { r->clear_volume_capability(); },
           [](auto* r) { r->mutable_volume_capability()->clear_mount(); }}) {
    csi::v1::NodeStageVolumeRequest request = ValidStage();
    mutate(&request);
    EXPECT_EQ(Stage(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << request.ShortDebugString();
  }
}

// --stage-error: every NodeStageVolume answers the code and stages nothing, so that the CO's
// handling of a final and of an uncertain stage error can be watched; NodeUnstageVolume of what
// was never staged succeeds, as the spec asks.
TEST_F(StagingDriverTest, StageErrorAnswersTheCodeAndStagesNothing) {
  for (absl::StatusCode code :
       {absl::StatusCode::kInvalidArgument, absl::StatusCode::kDeadlineExceeded}) {
    DriverOptions options;
    options.node_id = "node-1";
    options.stage_unstage = true;
    options.stage_error = code;
    server_->Shutdown();
    ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);  // Start makes it again
    Start(options);
    const grpc::Status status = Stage(ValidStage());
    EXPECT_EQ(static_cast<int>(status.error_code()), static_cast<int>(code));
    EXPECT_THAT(status.error_message(), HasSubstr("--stage-error"));
    EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
    EXPECT_EQ(Publish(StagedPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Unstage("vol-1").ok());
  }
}

// --later-max-volumes-per-node: the first NodeGetInfo (kubelet's at registration) answers
// --max-volumes-per-node, every later one the new count.
TEST_F(SampleDriverTest, LaterNodeGetInfoAnswersTheLaterCount) {
  DriverOptions options;
  options.node_id = "node-1";
  options.max_volumes_per_node = 7;
  options.later_max_volumes_per_node = 3;
  server_->Shutdown();
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  Start(options);
  for (int64_t expected : {7, 3, 3}) {
    csi::v1::NodeGetInfoResponse info;
    ASSERT_TRUE(node_stub_->NodeGetInfo(Context().get(), {}, &info).ok());
    EXPECT_EQ(info.max_volumes_per_node(), expected);
  }
}

// --faults=empty-node-id: NodeGetInfo answers no node ID, which kubelet refuses for good.
TEST_F(SampleDriverTest, EmptyNodeIdFault) {
  DriverOptions options;
  options.node_id = "node-1";
  options.faults = {"empty-node-id"};
  server_->Shutdown();
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  Start(options);
  csi::v1::NodeGetInfoResponse info;
  ASSERT_TRUE(node_stub_->NodeGetInfo(Context().get(), {}, &info).ok());
  EXPECT_EQ(info.node_id(), "");
}

TEST(ParseErrorCodeTest, NamesOfCodesButOk) {
  EXPECT_EQ(ParseErrorCode("INVALID_ARGUMENT"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseErrorCode("DEADLINE_EXCEEDED"), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ParseErrorCode("UNAUTHENTICATED"), absl::StatusCode::kUnauthenticated);
  for (const char* bad : {"", "OK", "invalid_argument", "3", "INVALID_ARGUMENT "}) {
    EXPECT_EQ(ParseErrorCode(bad), std::nullopt) << bad;
  }
}

// --volume-mount-group: the capability, and the pod's fsGroup applied by the driver to what it
// publishes; a group that is not a number, or any group sent to a driver that did not advertise
// it, is INVALID_ARGUMENT and publishes nothing.
TEST_F(StagingDriverTest, VolumeMountGroupGivesThePublishedDirectoryTheGroup) {
  csi::v1::NodeStageVolumeRequest stage = ValidStage();
  stage.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("2000");
  EXPECT_EQ(Stage(stage).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // not advertised
  csi::v1::NodePublishVolumeRequest publish = ValidPublish();
  publish.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("2000");
  const grpc::Status refused = Publish(publish);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("--volume-mount-group"));

  DriverOptions options;
  options.node_id = "node-1";
  options.stage_unstage = true;
  options.volume_mount_group = true;
  server_->Shutdown();
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  Start(options);
  csi::v1::NodeGetCapabilitiesResponse capabilities;
  ASSERT_TRUE(node_stub_->NodeGetCapabilities(Context().get(), {}, &capabilities).ok());
  EXPECT_THAT(Types(capabilities), ::testing::Contains(RPC::VOLUME_MOUNT_GROUP));

  // Another group where this process may give one (root, with group 4242 mapped in its user
  // namespace), else its own.
  gid_t group = 4242;
  const std::string probe = dir_.Join("probe");
  ASSERT_TRUE(::ndr::testing::WriteFile(probe, ""));
  if (chown(probe.c_str(), static_cast<uid_t>(-1), group) != 0) group = getegid();
  const std::string text = std::to_string(group);
  stage.mutable_volume_capability()->mutable_mount()->set_volume_mount_group(text);
  for (const char* bad : {"staff", "-1", "20 00", "99999999999", "4294967295"}) {
    csi::v1::NodeStageVolumeRequest wrong = stage;
    wrong.mutable_volume_capability()->mutable_mount()->set_volume_mount_group(bad);
    EXPECT_EQ(Stage(wrong).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
  ASSERT_TRUE(Stage(stage).ok());
  publish = StagedPublish();
  publish.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("staff");
  EXPECT_EQ(Publish(publish).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  struct stat st;
  EXPECT_NE(stat(publish.target_path().c_str(), &st), 0);  // nothing published
  publish.mutable_volume_capability()->mutable_mount()->set_volume_mount_group(text);
  ASSERT_TRUE(Publish(publish).ok());
  ASSERT_EQ(stat(publish.target_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, group);
  EXPECT_EQ(st.st_mode & 07777, 02770u);
  ASSERT_EQ(stat((publish.target_path() + "/color").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, group);  // the setgid bit passes the group on
  ASSERT_TRUE(Unpublish("vol-1", publish.target_path()).ok());
  ASSERT_TRUE(Unstage("vol-1").ok());
}

TEST_F(SampleDriverTest, WithoutStageUnstageStagingIsUnimplemented) {
  csi::v1::NodeStageVolumeRequest request;
  csi::v1::NodeStageVolumeResponse response;
  EXPECT_EQ(node_stub_->NodeStageVolume(Context().get(), request, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(SampleDriverTest, ReadonlyVolumeFilesAreReadOnly) {
  csi::v1::NodePublishVolumeRequest request = ValidPublish();
  request.set_readonly(true);
  ASSERT_TRUE(Publish(request).ok());
  struct stat st;
  ASSERT_EQ(stat(dir_.Join("pod/mount/color").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444);
}

TEST_F(SampleDriverTest, MissingParentIsFailedPrecondition) {
  csi::v1::NodePublishVolumeRequest request = ValidPublish();
  request.set_target_path(dir_.Join("nopod/mount"));
  EXPECT_EQ(Publish(request).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(SampleDriverTest, UnpublishLeavesForeignDataAlone) {
  const std::string target = dir_.Join("pod/mount");
  ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(target + "/data", "precious"));
  EXPECT_EQ(Unpublish("csi-abc", target).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  std::string contents;
  EXPECT_TRUE(ReadFile(target + "/data", &contents));
}

TEST_F(SampleDriverTest, RejectPodInfo) {
  server_->Shutdown();
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  DriverOptions options;
  options.node_id = "n";
  options.reject_pod_info = true;
  Start(options);
  grpc::Status status = Publish(ValidPublish());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("csi.storage.k8s.io/pod.name"));
  csi::v1::NodePublishVolumeRequest plain = ValidPublish();
  plain.mutable_volume_context()->erase("csi.storage.k8s.io/pod.name");
  EXPECT_TRUE(Publish(plain).ok());
}

// Raw block volumes without root: the target is a plain file. Forced (change_host = false), so
// that these cases mean the same whoever runs them. The paths are kubelet's (csi_block.go).
class BlockDriverTest : public SampleDriverTest {
 protected:
  void SetUp() override { StartBlock(/*stage_unstage=*/false); }

  void StartBlock(bool stage_unstage, bool reject_pod_info = false) {
    DriverOptions options;
    options.node_id = "node-1";
    options.data_dir = data_;
    options.change_host = false;
    options.stage_unstage = stage_unstage;
    options.reject_pod_info = reject_pod_info;
    Start(options);
    for (const char* d :
         {"kubelet", "kubelet/publish", "kubelet/publish/pv-1", "kubelet/staging"}) {
      ASSERT_TRUE(mkdir(dir_.Join(d).c_str(), 0750) == 0 || errno == EEXIST) << d;
    }
  }

  csi::v1::NodePublishVolumeRequest BlockPublish() {
    csi::v1::NodePublishVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_target_path(target_);
    request.set_staging_target_path(staging_);  // kubelet sends it to every driver
    request.mutable_volume_capability()->mutable_block();
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    (*request.mutable_volume_context())["csi.storage.k8s.io/pod.name"] = "db-0";
    (*request.mutable_secrets())["password"] = "hunter2";
    return request;
  }

  csi::v1::NodeStageVolumeRequest BlockStage() {
    csi::v1::NodeStageVolumeRequest request;
    request.set_volume_id("blk-1");
    request.set_staging_target_path(staging_);
    request.mutable_volume_capability()->mutable_block();
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    return request;
  }

  grpc::Status Stage(const csi::v1::NodeStageVolumeRequest& request) {
    csi::v1::NodeStageVolumeResponse response;
    return node_stub_->NodeStageVolume(Context().get(), request, &response);
  }

  grpc::Status Unstage(const std::string& volume_id, const std::string& staging) {
    csi::v1::NodeUnstageVolumeRequest request;
    request.set_volume_id(volume_id);
    request.set_staging_target_path(staging);
    csi::v1::NodeUnstageVolumeResponse response;
    return node_stub_->NodeUnstageVolume(Context().get(), request, &response);
  }

  // The targets in the index of published block targets.
  std::vector<std::string> IndexedTargets() {
    absl::StatusOr<BlockIndex> index = ReadBlockIndex(data_ + "/" + kBlockIndexFile);
    EXPECT_THAT(index, IsOk());
    std::vector<std::string> targets;
    if (index.ok()) {
      for (const auto& [target, fingerprint] : *index) targets.push_back(target);
    }
    return targets;
  }

  const std::string data_ = dir_.Join("data");
  const std::string target_ = dir_.Join("kubelet/publish/pv-1/pod-uid-1");
  const std::string staging_ = dir_.Join("kubelet/staging/pv-1");
};

// Every path below `root`, relative to it, sorted; directories end in '/'.
std::vector<std::string> Tree(const std::string& root, const std::string& below = "") {
  std::vector<std::string> paths;
  for (const std::string& name : ::ndr::testing::DirEntries(root + "/" + below)) {
    const std::string path = below + name;
    struct stat st;
    if (lstat((root + "/" + path).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      paths.push_back(path + "/");
      for (const std::string& inner : Tree(root, path + "/")) paths.push_back(inner);
    } else {
      paths.push_back(path);
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

bool IsRegularFile(const std::string& path, off_t* size = nullptr) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (size != nullptr) *size = st.st_size;
  return true;
}

TEST_F(BlockDriverTest, PublishMakesThePlainFileTargetAndUnpublishRemovesIt) {
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  off_t size = -1;
  EXPECT_TRUE(IsRegularFile(target_, &size)) << "target is not a regular file";
  EXPECT_EQ(size, 0);
  const std::string image = data_ + "/blk-1.img";
  ASSERT_TRUE(IsRegularFile(image, &size)) << "no disk image";
  EXPECT_EQ(size, kImageSize);
  struct stat st;
  ASSERT_EQ(stat(data_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700);
  ASSERT_EQ(stat(image.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600);
  EXPECT_THAT(IndexedTargets(), ::testing::ElementsAre(target_));
  std::string index;
  ASSERT_TRUE(ReadFile(data_ + "/" + kBlockIndexFile, &index));
  EXPECT_THAT(index, HasSubstr("csi.storage.k8s.io/pod.name"));  // the context is recorded...
  EXPECT_THAT(index, ::testing::Not(HasSubstr("hunter2")));      // ...secrets never
  // No files for the volume_context keys: a block volume has no directory.
  EXPECT_THAT(::ndr::testing::DirEntries(dir_.Join("kubelet/publish/pv-1")),
              ::testing::ElementsAre("pod-uid-1"));

  // Idempotent; the same target with other arguments is ALREADY_EXISTS, as a mount volume is.
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  struct Case {
    const char* name;
    std::function<void(csi::v1::NodePublishVolumeRequest*)> mutate;
  } cases[] = {
      {"other volume", [](auto* r) { r->set_volume_id("blk-2"); }},
      {"readonly", [](auto* r) { r->set_readonly(true); }},
      {"other context", [](auto* r) { (*r->mutable_volume_context())["color"] = "red"; }},
      {"other access mode",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_access_mode()->set_mode(
             csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY);
       }},
      {"mount capability", [](auto* r) { r->mutable_volume_capability()->mutable_mount(); }},
  };
  for (const Case& c : cases) {
    csi::v1::NodePublishVolumeRequest request = BlockPublish();
    c.mutate(&request);
    EXPECT_EQ(Publish(request).error_code(), grpc::StatusCode::ALREADY_EXISTS) << c.name;
  }
  // Secrets are not part of what must match (they never reach the disk to compare).
  csi::v1::NodePublishVolumeRequest other_secret = BlockPublish();
  (*other_secret.mutable_secrets())["password"] = "other";
  EXPECT_TRUE(Publish(other_secret).ok());
  EXPECT_TRUE(IsRegularFile(target_));

  EXPECT_EQ(Unpublish("blk-2", target_).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(IsRegularFile(target_));
  ASSERT_TRUE(Unpublish("blk-1", target_).ok());
  EXPECT_FALSE(IsRegularFile(target_));
  EXPECT_THAT(IndexedTargets(), ::testing::IsEmpty());
  EXPECT_TRUE(IsRegularFile(image)) << "the image is the volume's data; it stays";
  EXPECT_TRUE(Unpublish("blk-1", target_).ok());  // idempotent
  // kubelet removes the publish directory itself; the driver left it empty.
  EXPECT_THAT(::ndr::testing::DirEntries(dir_.Join("kubelet/publish/pv-1")), ::testing::IsEmpty());
}

TEST_F(BlockDriverTest, TwoPodsShareTheVolumesImage) {
  csi::v1::NodePublishVolumeRequest second = BlockPublish();
  second.set_target_path(dir_.Join("kubelet/publish/pv-1/pod-uid-2"));
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  ASSERT_TRUE(Publish(second).ok());
  EXPECT_THAT(IndexedTargets(), ::testing::ElementsAre(target_, second.target_path()));
  ASSERT_TRUE(Unpublish("blk-1", target_).ok());
  EXPECT_THAT(IndexedTargets(), ::testing::ElementsAre(second.target_path()));
  EXPECT_TRUE(IsRegularFile(second.target_path()));
  ASSERT_TRUE(Unpublish("blk-1", second.target_path()).ok());
  EXPECT_THAT(Tree(data_), ::testing::ElementsAre("blk-1.img", kBlockIndexFile));
}

TEST_F(BlockDriverTest, UnpublishFinishesAnInterruptedUnpublish) {
  // The target went, the index line did not (the driver stopped in between).
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  ASSERT_EQ(unlink(target_.c_str()), 0);
  EXPECT_TRUE(Unpublish("blk-2", target_).ok());  // gone is gone, but not this volume's line
  EXPECT_THAT(IndexedTargets(), ::testing::ElementsAre(target_));
  EXPECT_TRUE(Unpublish("blk-1", target_).ok());
  EXPECT_THAT(IndexedTargets(), ::testing::IsEmpty());
}

TEST_F(BlockDriverTest, PublishCompletesAnInterruptedPublish) {
  // Recorded in the index, target not yet made: a retry makes it.
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  ASSERT_EQ(unlink(target_.c_str()), 0);
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  EXPECT_TRUE(IsRegularFile(target_));
}

TEST_F(BlockDriverTest, ForeignFilesAtTheTargetAreLeftAlone) {
  ASSERT_TRUE(::ndr::testing::WriteFile(target_, "precious"));
  EXPECT_EQ(Unpublish("blk-1", target_).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Publish(BlockPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  std::string contents;
  ASSERT_TRUE(ReadFile(target_, &contents));
  EXPECT_EQ(contents, "precious");
  EXPECT_THAT(IndexedTargets(), ::testing::IsEmpty());

  // A symlink is not ours either, even to an empty file.
  ASSERT_TRUE(::ndr::testing::WriteFile(dir_.Join("empty"), ""));
  const std::string link = dir_.Join("kubelet/publish/pv-1/link");
  ASSERT_EQ(symlink(dir_.Join("empty").c_str(), link.c_str()), 0);
  EXPECT_EQ(Unpublish("blk-1", link).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  csi::v1::NodePublishVolumeRequest at_link = BlockPublish();
  at_link.set_target_path(link);
  EXPECT_EQ(Publish(at_link).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  struct stat st;
  EXPECT_EQ(lstat(link.c_str(), &st), 0);

  // An empty file, as a publish that failed half-way leaves, holds nothing: it is removed, or
  // taken over by a publish.
  ASSERT_EQ(unlink(target_.c_str()), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(target_, ""));
  EXPECT_TRUE(Unpublish("blk-1", target_).ok());
  EXPECT_FALSE(IsRegularFile(target_));
  ASSERT_TRUE(::ndr::testing::WriteFile(target_, ""));
  EXPECT_TRUE(Publish(BlockPublish()).ok());
  EXPECT_THAT(IndexedTargets(), ::testing::ElementsAre(target_));
}

TEST_F(BlockDriverTest, MountAndBlockTargetsDoNotMix) {
  // A block publish over a mount volume's directory, and a mount publish over a block target.
  csi::v1::NodePublishVolumeRequest mount = ValidPublish();
  mount.set_target_path(target_);
  ASSERT_TRUE(Publish(mount).ok());
  csi::v1::NodePublishVolumeRequest block = BlockPublish();
  EXPECT_EQ(Publish(block).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  ASSERT_TRUE(Unpublish("csi-abc", target_).ok());
  ASSERT_TRUE(Publish(block).ok());
  EXPECT_EQ(Publish(mount).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_TRUE(IsRegularFile(target_));
}

TEST_F(BlockDriverTest, MissingParentIsFailedPreconditionAndCreatesNothing) {
  csi::v1::NodePublishVolumeRequest request = BlockPublish();
  request.set_target_path(dir_.Join("kubelet/publish/pv-9/pod-uid-1"));
  EXPECT_EQ(Publish(request).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  struct stat st;
  EXPECT_NE(stat(data_.c_str(), &st), 0) << "the data directory was made for nothing";
}

// --stage-unstage with block volumes: the image is made at stage time.
class BlockStagingDriverTest : public BlockDriverTest {
 protected:
  void SetUp() override {
    StartBlock(/*stage_unstage=*/true);
    ASSERT_EQ(mkdir(staging_.c_str(), 0750), 0);
  }
};

TEST_F(BlockStagingDriverTest, HostileVolumeIdsStayInTheDataDirectory) {
  const std::vector<std::string> before = Tree(dir_.path());
  struct Case {
    std::string id;
    std::string image;
  } cases[] = {
      {"../../x", "xLi4vLi4veA.img"},
      {"../data/../../y", "xLi4vZGF0YS8uLi8uLi95.img"},
      {"/etc/passwd", "xL2V0Yy9wYXNzd2Q.img"},
      {"..", "...img"},
      // The longest ID (the CSI spec's 128 bytes): 42 times "///" is "Ly8v", then "//" "Ly8".
      {std::string(128, '/'), [] {
         std::string name = "x";
         for (int i = 0; i < 42; ++i) name += "Ly8v";
         return name + "Ly8.img";
       }()},
  };
  for (const Case& c : cases) {
    const std::string label = c.id.substr(0, 20);
    csi::v1::NodeStageVolumeRequest stage = BlockStage();
    stage.set_volume_id(c.id);
    ASSERT_TRUE(Stage(stage).ok()) << label;
    csi::v1::NodePublishVolumeRequest publish = BlockPublish();
    publish.set_volume_id(c.id);
    ASSERT_TRUE(Publish(publish).ok()) << label;

    std::vector<std::string> images = ::ndr::testing::DirEntries(data_);
    images.erase(std::remove(images.begin(), images.end(), kBlockIndexFile), images.end());
    ASSERT_EQ(images.size(), 1u) << label << ": " << ::testing::PrintToString(images);
    EXPECT_EQ(images[0], c.image) << label;
    // Nothing anywhere else: the tree is what it was, plus the data directory, the image, the
    // index, the staged record and the target.
    std::vector<std::string> expected = before;
    for (const std::string& p :
         {std::string("data/"), "data/" + images[0], std::string("data/") + kBlockIndexFile,
          std::string("kubelet/publish/pv-1/pod-uid-1"),
          std::string("kubelet/staging/pv-1/") + kStagedFile}) {
      expected.push_back(p);
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(Tree(dir_.path()), expected) << label;

    ASSERT_TRUE(Unpublish(c.id, target_).ok()) << label;
    ASSERT_TRUE(Unstage(c.id, staging_).ok()) << label;
    ::ndr::testing::RemoveRecursively(data_);  // the next case starts without images
  }
}

TEST_F(BlockStagingDriverTest, StagePublishUnpublishUnstage) {
  // Not staged: FAILED_PRECONDITION, and nothing is made.
  EXPECT_EQ(Publish(BlockPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(IsRegularFile(target_));
  struct stat st;
  EXPECT_NE(stat(data_.c_str(), &st), 0);

  ASSERT_TRUE(Stage(BlockStage()).ok());
  std::string staged;
  ASSERT_TRUE(ReadFile(staging_ + "/" + kStagedFile, &staged));
  EXPECT_THAT(staged, HasSubstr("volume_id blk-1"));
  EXPECT_THAT(staged, HasSubstr("block"));
  off_t size = -1;
  ASSERT_TRUE(IsRegularFile(data_ + "/blk-1.img", &size)) << "stage made no disk image";
  EXPECT_EQ(size, kImageSize);
  EXPECT_TRUE(Stage(BlockStage()).ok());  // idempotent
  csi::v1::NodeStageVolumeRequest as_mount = BlockStage();
  as_mount.mutable_volume_capability()->mutable_mount();
  EXPECT_EQ(Stage(as_mount).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  // Staged elsewhere is not staged here.
  csi::v1::NodePublishVolumeRequest elsewhere = BlockPublish();
  elsewhere.set_staging_target_path(dir_.Join("kubelet/staging"));
  EXPECT_EQ(Publish(elsewhere).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  ASSERT_TRUE(Publish(BlockPublish()).ok());
  EXPECT_TRUE(IsRegularFile(target_));
  ASSERT_TRUE(Unpublish("blk-1", target_).ok());
  EXPECT_EQ(Unstage("blk-2", staging_).error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(Unstage("blk-1", staging_).ok());
  EXPECT_TRUE(Unstage("blk-1", staging_).ok());  // idempotent
  EXPECT_THAT(::ndr::testing::DirEntries(staging_), ::testing::IsEmpty());
  EXPECT_TRUE(IsRegularFile(data_ + "/blk-1.img")) << "the image is the volume's data; it stays";
  EXPECT_EQ(Publish(BlockPublish()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(BlockDriverTest, RejectPodInfoAppliesToBlockVolumes) {
  server_->Shutdown();
  ASSERT_EQ(rmdir(dir_.Join("pod").c_str()), 0);
  StartBlock(/*stage_unstage=*/false, /*reject_pod_info=*/true);
  grpc::Status status = Publish(BlockPublish());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("csi.storage.k8s.io/pod.name"));
  EXPECT_FALSE(IsRegularFile(target_));
  // Keys that could not be file names are fine: nothing is written for them.
  csi::v1::NodePublishVolumeRequest plain = BlockPublish();
  plain.clear_volume_context();
  (*plain.mutable_volume_context())["a b/../c"] = "1";
  EXPECT_TRUE(Publish(plain).ok());
}

TEST_F(SampleDriverTest, BlockVolumesNeedADataDirectory) {
  csi::v1::NodePublishVolumeRequest request = ValidPublish();
  request.mutable_volume_capability()->mutable_block();
  grpc::Status status = Publish(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("no data directory"));
  struct stat st;
  EXPECT_NE(stat(dir_.Join("pod/mount").c_str(), &st), 0);
}

TEST(ValidateDriverOptionsTest, Table) {
  struct Case {
    const char* name;
    std::function<void(DriverOptions*)> mutate;
    const char* error;  // nullptr: valid
  } cases[] = {
      {"defaults", [](DriverOptions*) {}, nullptr},
      {"bad name", [](DriverOptions* o) { o->name = "../../etc/x"; }, "--drivername"},
      {"long name", [](DriverOptions* o) { o->name = std::string(64, 'a'); }, "--drivername"},
      {"empty node id", [](DriverOptions* o) { o->node_id = ""; }, "--nodeid: must not be empty"},
      {"long node id", [](DriverOptions* o) { o->node_id = std::string(257, 'n'); }, "257 bytes"},
      {"256-byte node id", [](DriverOptions* o) { o->node_id = std::string(256, 'n'); }, nullptr},
      {"negative max", [](DriverOptions* o) { o->max_volumes_per_node = -1; },
       "--max-volumes-per-node"},
      {"relative data dir", [](DriverOptions* o) { o->data_dir = "data"; }, "--data-dir"},
      {"negative later max", [](DriverOptions* o) { o->later_max_volumes_per_node = -2; },
       "--later-max-volumes-per-node"},
      {"free space over 100%", [](DriverOptions* o) { o->low_free_space_percent = 101; },
       "--low-free-space-percent"},
      {"negative free space", [](DriverOptions* o) { o->low_free_space_percent = -1; },
       "--low-free-space-percent"},
      {"absolute data dir", [](DriverOptions* o) { o->data_dir = "/var/lib/x"; }, nullptr},
  };
  for (const Case& c : cases) {
    DriverOptions options;
    options.node_id = "n";
    c.mutate(&options);
    absl::Status status = ValidateDriverOptions(options);
    if (c.error == nullptr) {
      EXPECT_THAT(status, IsOk()) << c.name;
    } else {
      EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument, c.error)) << c.name;
    }
  }
}

TEST(ParseTopologyTest, Table) {
  auto ok = ParseTopology("a/zone=z1, b=r2");
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(ok->at("a/zone"), "z1");
  EXPECT_EQ(ok->at("b"), "r2");
  EXPECT_THAT(ParseTopology(""), IsOk());
  EXPECT_THAT(ParseTopology("novalue"), StatusIs(absl::StatusCode::kInvalidArgument, "key=value"));
  EXPECT_THAT(ParseTopology("=v"), StatusIs(absl::StatusCode::kInvalidArgument, "key=value"));
  EXPECT_THAT(ParseTopology("a=1,a=2"), StatusIs(absl::StatusCode::kInvalidArgument, "twice"));
}

// After the mount: what kubelet asks of a published volume (expander.go, csi_metrics.go).
class AfterMountTest : public BlockDriverTest {
 protected:
  void SetUp() override {}  // each test starts the driver it needs

  void StartWith(nlohmann::json jwks, bool stage_unstage = false,
                 std::set<std::string> faults = {}) {
    DriverOptions options;
    options.node_id = "node-1";
    options.data_dir = data_;
    options.change_host = false;
    options.stage_unstage = stage_unstage;
    options.faults = std::move(faults);
    options.token_jwks = std::move(jwks);
    Start(options);
    for (const char* d : {"kubelet", "kubelet/publish", "kubelet/publish/pv-1", "kubelet/staging"}) {
      ASSERT_TRUE(mkdir(dir_.Join(d).c_str(), 0750) == 0 || errno == EEXIST) << d;
    }
  }

  grpc::Status Stats(const std::string& id, const std::string& path,
                     csi::v1::NodeGetVolumeStatsResponse* response) {
    csi::v1::NodeGetVolumeStatsRequest request;
    request.set_volume_id(id);
    request.set_volume_path(path);
    return node_stub_->NodeGetVolumeStats(Context().get(), request, response);
  }

  grpc::Status Expand(const std::string& id, const std::string& path, int64_t bytes, bool block,
                      csi::v1::NodeExpandVolumeResponse* response) {
    csi::v1::NodeExpandVolumeRequest request;
    request.set_volume_id(id);
    request.set_volume_path(path);
    request.mutable_capacity_range()->set_required_bytes(bytes);
    if (block) request.mutable_volume_capability()->mutable_block();
    return node_stub_->NodeExpandVolume(Context().get(), request, response);
  }

  static const csi::v1::VolumeUsage* Usage(const csi::v1::NodeGetVolumeStatsResponse& response,
                                           csi::v1::VolumeUsage::Unit unit) {
    for (const auto& usage : response.usage()) {
      if (usage.unit() == unit) return &usage;
    }
    return nullptr;
  }
};

TEST_F(AfterMountTest, MountVolumeStatsExpansionAndHealth) {
  StartWith(nullptr);
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  const std::string target = dir_.Join("pod/mount");
  csi::v1::NodeGetVolumeStatsResponse stats;
  ASSERT_TRUE(Stats("csi-abc", target, &stats).ok());
  const csi::v1::VolumeUsage* bytes = Usage(stats, csi::v1::VolumeUsage::BYTES);
  const csi::v1::VolumeUsage* inodes = Usage(stats, csi::v1::VolumeUsage::INODES);
  ASSERT_NE(bytes, nullptr);
  ASSERT_NE(inodes, nullptr);
  // Two context files ("web-0", "blue") and the marker: their bytes are the volume's use.
  struct stat marker;
  ASSERT_EQ(stat((target + "/" + kMarkerFile).c_str(), &marker), 0);
  EXPECT_EQ(bytes->used(), 5 + 4 + marker.st_size);
  EXPECT_GT(bytes->total(), bytes->used());
  EXPECT_LE(bytes->available(), bytes->total() - bytes->used());
  EXPECT_GT(inodes->total(), 0);
  EXPECT_EQ(inodes->used() + inodes->available(), inodes->total());
  EXPECT_FALSE(stats.volume_condition().abnormal());

  // Expansion records the capacity, which stats then report; it never shrinks.
  csi::v1::NodeExpandVolumeResponse expanded;
  ASSERT_TRUE(Expand("csi-abc", target, 3 << 20, false, &expanded).ok());
  EXPECT_EQ(expanded.capacity_bytes(), 3 << 20);
  ASSERT_TRUE(Expand("csi-abc", target, 1 << 20, false, &expanded).ok());
  EXPECT_EQ(expanded.capacity_bytes(), 3 << 20);
  ASSERT_TRUE(Stats("csi-abc", target, &stats).ok());
  EXPECT_EQ(Usage(stats, csi::v1::VolumeUsage::BYTES)->total(), 3 << 20);

  // A file the driver wrote is gone: abnormal, saying which.
  ASSERT_EQ(unlink((target + "/csi.storage.k8s.io_pod.name").c_str()), 0);
  ASSERT_TRUE(Stats("csi-abc", target, &stats).ok());
  EXPECT_TRUE(stats.volume_condition().abnormal());
  EXPECT_THAT(stats.volume_condition().message(), HasSubstr("csi.storage.k8s.io_pod.name"));
}

TEST_F(AfterMountTest, BlockVolumeStatsAndExpansionAreTheDiskImages) {
  StartWith(nullptr);
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  csi::v1::NodeGetVolumeStatsResponse stats;
  ASSERT_TRUE(Stats("blk-1", target_, &stats).ok());
  ASSERT_EQ(stats.usage_size(), 1);
  EXPECT_EQ(stats.usage(0).unit(), csi::v1::VolumeUsage::BYTES);
  EXPECT_EQ(stats.usage(0).total(), kImageSize);
  csi::v1::NodeExpandVolumeResponse expanded;
  ASSERT_TRUE(Expand("blk-1", target_, 4 << 20, true, &expanded).ok());
  EXPECT_EQ(expanded.capacity_bytes(), 4 << 20);
  off_t size = 0;
  ASSERT_TRUE(IsRegularFile(data_ + "/blk-1.img", &size));
  EXPECT_EQ(size, 4 << 20);
  ASSERT_TRUE(Stats("blk-1", target_, &stats).ok());
  EXPECT_EQ(stats.usage(0).total(), 4 << 20);
  // The image gone: abnormal.
  ASSERT_EQ(unlink((data_ + "/blk-1.img").c_str()), 0);
  ASSERT_TRUE(Stats("blk-1", target_, &stats).ok());
  EXPECT_TRUE(stats.volume_condition().abnormal());
}

// The health RPCs of kubelet 1.37 (CSIVolumeHealth): the same judgement as the volume condition,
// as the spec after v1.12 words it.
TEST_F(AfterMountTest, VolumeAndStorageHealth) {
  StartWith(nullptr);
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  const std::string target = dir_.Join("pod/mount");
  auto health = [&](const std::string& id, const std::string& publish,
                    const std::string& staging, csi::v1::NodeGetVolumeHealthResponse* response) {
    csi::v1::NodeGetVolumeHealthRequest request;
    request.set_volume_id(id);
    request.set_volume_publish_path(publish);
    request.set_staging_target_path(staging);
    return node_stub_->NodeGetVolumeHealth(Context().get(), request, response);
  };
  csi::v1::NodeGetVolumeHealthResponse response;
  ASSERT_TRUE(health("csi-abc", target, "", &response).ok());
  EXPECT_EQ(response.volume_health().volume_id(), "csi-abc");
  EXPECT_EQ(response.volume_health().health_statuses_size(), 0);
  ASSERT_EQ(unlink((target + "/csi.storage.k8s.io_pod.name").c_str()), 0);
  ASSERT_TRUE(health("csi-abc", target, "", &response).ok());
  ASSERT_EQ(response.volume_health().health_statuses_size(), 1);
  EXPECT_EQ(response.volume_health().health_statuses(0).status(), csi::v1::DEGRADED);
  EXPECT_EQ(response.volume_health().health_statuses(0).reason(), "PublishedFileMissing");
  // Not published there, no such volume, no ID.
  EXPECT_EQ(health("csi-abc", dir_.Join("nowhere"), "", &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(health("nope", "", "", &response).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(health("", target, "", &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  csi::v1::NodeGetStorageHealthResponse storage;
  ASSERT_TRUE(node_stub_->NodeGetStorageHealth(Context().get(), {}, &storage).ok());
  for (const auto& entry : storage.backend_health()) {
    // Healthy unless this machine's disk is nearly full: then it says so.
    EXPECT_EQ(entry.reason(), "LowFreeSpace");
  }
}

// The free-space threshold of NodeGetStorageHealth: 100% of a file system is never free (the
// threshold always reached), and 0 turns the judgement off, whatever this machine's disk.
TEST_F(AfterMountTest, LowFreeSpaceThreshold) {
  for (const int percent : {100, 0}) {
    DriverOptions options;
    options.node_id = "node-1";
    options.data_dir = data_;
    options.change_host = false;
    options.low_free_space_percent = percent;
    Start(options);
    csi::v1::NodeGetStorageHealthResponse storage;
    ASSERT_TRUE(node_stub_->NodeGetStorageHealth(Context().get(), {}, &storage).ok());
    if (percent == 0) {
      EXPECT_EQ(storage.backend_health_size(), 0);
    } else {
      ASSERT_EQ(storage.backend_health_size(), 1);
      EXPECT_EQ(storage.backend_health(0).reason(), "LowFreeSpace");
      EXPECT_THAT(storage.backend_health(0).message(), HasSubstr("less than 100% of"));
    }
  }
}

// The conditions a test of kubelet's health writers needs, whatever the volume's state.
TEST_F(AfterMountTest, VolumeInaccessibleAndStorageUnreachableFaults) {
  StartWith(nullptr, false, {"volume-inaccessible", "storage-unreachable"});
  ASSERT_TRUE(Publish(ValidPublish()).ok());
  csi::v1::NodeGetVolumeHealthRequest request;
  request.set_volume_id("csi-abc");
  request.set_volume_publish_path(dir_.Join("pod/mount"));
  csi::v1::NodeGetVolumeHealthResponse response;
  ASSERT_TRUE(node_stub_->NodeGetVolumeHealth(Context().get(), request, &response).ok());
  ASSERT_EQ(response.volume_health().health_statuses_size(), 1);
  EXPECT_EQ(response.volume_health().health_statuses(0).status(), csi::v1::INACCESSIBLE);
  EXPECT_EQ(response.volume_health().health_statuses(0).reason(), "VolumeInaccessible");
  request.set_volume_id("");
  EXPECT_EQ(node_stub_->NodeGetVolumeHealth(Context().get(), request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  csi::v1::NodeGetStorageHealthResponse storage;
  ASSERT_TRUE(node_stub_->NodeGetStorageHealth(Context().get(), {}, &storage).ok());
  ASSERT_EQ(storage.backend_health_size(), 1);
  EXPECT_EQ(storage.backend_health(0).status(), csi::v1::STORAGE_UNREACHABLE);
}

TEST_F(AfterMountTest, BlockVolumeHealthIsTheDiskImage) {
  StartWith(nullptr);
  ASSERT_TRUE(Publish(BlockPublish()).ok());
  csi::v1::NodeGetVolumeHealthRequest request;
  request.set_volume_id("blk-1");
  request.set_staging_target_path(dir_.Join("staging"));  // kubelet's dev directory; no publish
  csi::v1::NodeGetVolumeHealthResponse response;
  ASSERT_TRUE(node_stub_->NodeGetVolumeHealth(Context().get(), request, &response).ok());
  EXPECT_EQ(response.volume_health().health_statuses_size(), 0);
  ASSERT_EQ(unlink((data_ + "/blk-1.img").c_str()), 0);
  ASSERT_TRUE(node_stub_->NodeGetVolumeHealth(Context().get(), request, &response).ok());
  ASSERT_EQ(response.volume_health().health_statuses_size(), 1);
  EXPECT_EQ(response.volume_health().health_statuses(0).status(), csi::v1::INACCESSIBLE);
  EXPECT_EQ(response.volume_health().health_statuses(0).reason(), "DiskImageMissing");
}

TEST_F(AfterMountTest, BadStatsAndExpandRequests) {
  StartWith(nullptr);
  csi::v1::NodeGetVolumeStatsResponse stats;
  csi::v1::NodeExpandVolumeResponse expanded;
  EXPECT_EQ(Stats("", target_, &stats).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Stats("v", "", &stats).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Stats("v", dir_.Join("nowhere"), &stats).error_code(), grpc::StatusCode::NOT_FOUND);
  // A directory the driver did not publish.
  EXPECT_EQ(Stats("v", dir_.Join("pod"), &stats).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Expand("", target_, 1, false, &expanded).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Expand("v", dir_.Join("nowhere"), 1, false, &expanded).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Expand("v", dir_.Join("pod"), 1, false, &expanded).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Expand("v", dir_.Join("pod"), -1, false, &expanded).error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(AfterMountTest, TokensAreVerifiedAndRecordedNeverWrittenOut) {
  absl::StatusOr<std::unique_ptr<token::SigningKey>> key =
      token::SigningKey::FromPem(token::NewKeyPem("EC", "P-256"), "test");
  ASSERT_TRUE(key.ok());
  StartWith(nlohmann::json::parse((*key)->Jwks().dump()));
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  auto token_for = [&](const std::string& audience, int64_t exp) {
    return *(*key)->Sign({{"aud", {audience}}, {"sub", "system:serviceaccount:shop:web"},
                          {"iat", now}, {"nbf", now}, {"exp", exp}});
  };
  csi::v1::NodePublishVolumeRequest request = ValidPublish();
  nlohmann::json tokens = {
      {"vault", {{"token", token_for("vault", now + 3600)}, {"expirationTimestamp", "t1"}}},
      {"wrong", {{"token", token_for("vault", now + 3600)}, {"expirationTimestamp", "t2"}}}};
  (*request.mutable_volume_context())[kTokensKey] = tokens.dump();
  ASSERT_TRUE(Publish(request).ok());
  const std::string target = dir_.Join("pod/mount");
  std::string text;
  ASSERT_TRUE(ReadFile(target + "/" + kTokensRecordFile, &text));
  nlohmann::json record = nlohmann::json::parse(text);
  EXPECT_EQ(record["vault"]["verified"], true);
  EXPECT_EQ(record["vault"]["claims"]["sub"], "system:serviceaccount:shop:web");
  EXPECT_EQ(record["wrong"]["verified"], false);
  EXPECT_THAT(record["wrong"]["error"].get<std::string>(), HasSubstr("audience"));
  // The token itself is nowhere in the target.
  for (const std::string& name : ::ndr::testing::DirEntries(target)) {
    std::string contents;
    ReadFile(target + "/" + name, &contents);
    EXPECT_THAT(contents, ::testing::Not(HasSubstr(token_for("vault", now + 3600).substr(0, 60))))
        << name;
  }
  // A republish with fresh tokens is the same publish: OK, and the record is renewed.
  tokens["vault"]["expirationTimestamp"] = "t3";
  (*request.mutable_volume_context())[kTokensKey] = tokens.dump();
  ASSERT_TRUE(Publish(request).ok());
  ASSERT_TRUE(ReadFile(target + "/" + kTokensRecordFile, &text));
  EXPECT_EQ(nlohmann::json::parse(text)["vault"]["expirationTimestamp"], "t3");
  // Hostile token attributes are refused.
  for (const char* hostile : {"not json", "[]", "{\"a\": 5}", "{\"a\": {\"token\": 1}}"}) {
    csi::v1::NodePublishVolumeRequest bad = ValidPublish();
    bad.set_target_path(dir_.Join("pod/other"));
    (*bad.mutable_volume_context())[kTokensKey] = hostile;
    EXPECT_EQ(Publish(bad).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << hostile;
  }
  // Unpublish removes the record too.
  ASSERT_TRUE(Unpublish("csi-abc", target).ok());
  EXPECT_NE(access(target.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace ndr::sample

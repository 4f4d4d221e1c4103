#include "kubeletclient/csi/volume_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kDriver[] = "sample.csi.example.com";

TEST(HandleTest, MatchesKubeletsFormula) {
  // Expected values computed with sha256sum, independently of this code.
  EXPECT_EQ(EphemeralVolumeHandle("d5b7a2a8-1c2e-4f5b-9b1a-3f0c2e1d4a55", "inline-vol"),
            "csi-287c453d8f02517ab016c961cdb5d2a5edd36556703c66d4c73a680b36c38a69");
  EXPECT_EQ(EphemeralVolumeHandle("a", "b").size(), 68u);
  EXPECT_EQ(AttachmentName("csi-abc", "sample.csi.example.com", "node1"),
            "csi-e8a44f51eb760cf91388b025b864c0accee3b6aff48d4ba69fa4d00e4ccafb16");
}

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pod_.name = "web";
    pod_.ns = "shop";
    pod_.uid = "uid-1";
    pod_.service_account = "web-sa";
    PodVolume inline_volume;
    inline_volume.name = "info";
    inline_volume.csi = CsiVolumeSource{kDriver, false, "", {{"color", "blue"}}, std::nullopt};
    pod_.volumes.push_back(inline_volume);
    driver_object_.name = kDriver;
    driver_object_.volume_lifecycle_modes = {"Ephemeral"};
    objects_.csi_drivers[kDriver] = driver_object_;
    DriverInfo registered;
    registered.name = kDriver;
    registered.endpoint = "/csi/csi.sock";
    drivers_[kDriver] = registered;
    options_.root_dir = "/var/lib/kubelet";
    options_.node_name = "node1";
    options_.allowed_inline_drivers = {kDriver};
  }

  absl::StatusOr<std::vector<VolumePlan>> Plan() {
    return PlanVolumes(pod_, objects_, drivers_, options_);
  }

  Pod pod_;
  ObjectSet objects_;
  CsiDriverObject driver_object_;
  DriverRegistry::Snapshot drivers_;
  NodeOptions options_;
};

TEST_F(PlanTest, InlineVolumeAsKubeletWouldSendIt) {
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  ASSERT_EQ(plans->size(), 1u);
  const VolumePlan& plan = (*plans)[0];
  EXPECT_EQ(plan.mode, "Ephemeral");
  EXPECT_EQ(plan.handle, EphemeralVolumeHandle("uid-1", "info"));
  EXPECT_EQ(plan.paths.mount, "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/info/mount");
  EXPECT_EQ(plan.capability.access_mode, "ReadWriteOnce");
  EXPECT_FALSE(plan.capability.block);
  EXPECT_FALSE(plan.device.has_value());  // never staged
  EXPECT_FALSE(plan.attach_required);     // never attached
  // Nobody asked for pod info: none is sent.
  EXPECT_EQ(plan.volume_context.size(), 1u);
  EXPECT_EQ(plan.vol_data.at("volumeLifecycleMode"), "Ephemeral");
  EXPECT_EQ(plan.vol_data.at("specVolID"), "info");
  EXPECT_EQ(plan.vol_data.at("nodeName"), "node1");
  EXPECT_EQ(plan.vol_data.at("attachmentID"),
            AttachmentName(plan.handle, kDriver, "node1"));
}

TEST_F(PlanTest, PodInfoForEitherSwitchAndSpoofedKeysOverwritten) {
  pod_.volumes[0].csi->volume_attributes[kPodNameKey] = "someone-else";
  pod_.volumes[0].csi->volume_attributes[kPodUidKey] = "their-uid";
  for (int which : {0, 1}) {
    objects_.csi_drivers[kDriver].pod_info_on_mount = which == 0;
    drivers_[kDriver].requires_publish_pod = which == 1;
    auto plans = Plan();
    ASSERT_THAT(plans, IsOk());
    const auto& context = (*plans)[0].volume_context;
    EXPECT_EQ(context.at(kPodNameKey), "web") << which;
    EXPECT_EQ(context.at(kPodNamespaceKey), "shop") << which;
    EXPECT_EQ(context.at(kPodUidKey), "uid-1") << which;
    EXPECT_EQ(context.at(kServiceAccountKey), "web-sa") << which;
    EXPECT_EQ(context.at(kEphemeralKey), "true") << which;
    EXPECT_EQ(context.at("color"), "blue") << which;
  }
  objects_.csi_drivers[kDriver].pod_info_on_mount = false;
  drivers_[kDriver].requires_publish_pod = false;
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  // Without either switch the pod's own keys pass through untouched, and none are added.
  EXPECT_EQ((*plans)[0].volume_context.at(kPodNameKey), "someone-else");
  EXPECT_EQ((*plans)[0].volume_context.count(kServiceAccountKey), 0u);
}

TEST_F(PlanTest, InlineRefusals) {
  objects_.csi_drivers.clear();
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               "volume \"info\": volume mode \"Ephemeral\" not supported by driver "
                               "sample.csi.example.com (no CSIDriver object)"));
  driver_object_.volume_lifecycle_modes = {"Persistent"};
  objects_.csi_drivers[kDriver] = driver_object_;
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               "volume mode \"Ephemeral\" not supported by driver "
                               "sample.csi.example.com (only supports [\"Persistent\"])"));
  driver_object_.volume_lifecycle_modes = {"Ephemeral"};
  objects_.csi_drivers[kDriver] = driver_object_;
  options_.allowed_inline_drivers.clear();
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kPermissionDenied,
                               "inline CSI volumes of driver sample.csi.example.com are not "
                               "allowed on this node"));
  options_.allowed_inline_drivers = {kDriver};
  drivers_.clear();
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "driver name sample.csi.example.com not found in the list of "
                               "registered CSI drivers"));
}

TEST_F(PlanTest, SecretsOnlyFromThePodsNamespace) {
  pod_.volumes[0].csi->node_publish_secret_name = "creds";
  objects_.secrets[{"other", "creds"}] = Secret{"other", "creds", {{"password", "x"}}};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "a Secret of that name exists in namespace \"other\", but secrets "
                               "are looked up in the pod's namespace \"shop\" only"));
  objects_.secrets[{"shop", "creds"}] = Secret{"shop", "creds", {{"password", "hunter2"}}};
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  EXPECT_EQ((*plans)[0].publish_secrets.at("password"), "hunter2");
  csi::v1::NodePublishVolumeRequest request;
  request.mutable_secrets()->insert({"password", "hunter2"});
  const std::string shown = RedactedJson(request);
  EXPECT_THAT(shown, ::testing::Not(HasSubstr("hunter2")));
  EXPECT_THAT(shown, HasSubstr("\"password\":\"(redacted)\""));
}

// Defence in depth: objects are validated when they are read, but a pod that slipped past that
// (built in code here) still gets no path outside the root.
TEST_F(PlanTest, NoPathOutsideTheRootEvenForAnUnvalidatedPod) {
  pod_.uid = "../../../../tmp/escape-uid";
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kInvalidArgument,
                               "volume \"info\": the path from --root-dir \"/var/lib/kubelet\""));
  pod_.uid = "uid-1";
  pod_.volumes[0].name = "../../../../../escape-vol";
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kInvalidArgument,
                               "which is not inside the root directory: refused"));
}

TEST_F(PlanTest, PersistentVolumeThroughItsClaim) {
  pod_.volumes.clear();
  PodVolume claim_volume;
  claim_volume.name = "data";
  claim_volume.claim_name = "data-claim";
  pod_.volumes.push_back(claim_volume);
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "PersistentVolumeClaim shop/data-claim is not among the --objects"));
  objects_.claims[{"shop", "data-claim"}] = PersistentVolumeClaim{"shop", "data-claim", "pv-1"};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "PersistentVolume pv-1 is not among the --objects"));
  PersistentVolume pv;
  pv.name = "pv-1";
  pv.access_modes = {"ReadOnlyMany"};
  pv.mount_options = {"noatime"};
  pv.csi = PersistentVolume::Csi{kDriver, "vol-17", true, "ext4", {{"tier", "gold"}}, std::nullopt};
  objects_.volumes["pv-1"] = pv;
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               "volume mode \"Persistent\" not supported by driver "
                               "sample.csi.example.com (only supports [\"Ephemeral\"])"));
  objects_.csi_drivers[kDriver].volume_lifecycle_modes = {"Ephemeral", "Persistent"};
  objects_.csi_drivers[kDriver].pod_info_on_mount = true;
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  const VolumePlan& plan = (*plans)[0];
  EXPECT_EQ(plan.mode, "Persistent");
  EXPECT_EQ(plan.handle, "vol-17");
  EXPECT_EQ(plan.paths.mount, "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount");
  // The device directory: sha256sum of "vol-17", computed apart from this code.
  ASSERT_TRUE(plan.device.has_value());
  EXPECT_EQ(plan.device->globalmount,
            "/var/lib/kubelet/plugins/kubernetes.io/csi/sample.csi.example.com/"
            "5860cf411a63f259bc343f29f9ab64f1ac51b4cbc8e38595871e6930b5013736/globalmount");
  // spec.csi.readOnly is not what makes a volume read-only; the pod's claim is.
  EXPECT_FALSE(plan.read_only);
  EXPECT_EQ(plan.capability.fs_type, "ext4");
  EXPECT_EQ(plan.capability.mount_flags, std::vector<std::string>{"noatime"});
  EXPECT_EQ(plan.capability.access_mode, "ReadOnlyMany");
  EXPECT_EQ(plan.volume_context.at(kEphemeralKey), "false");
  EXPECT_EQ(plan.volume_context.at("tier"), "gold");
  EXPECT_EQ(plan.volume_attributes, (StringMap{{"tier", "gold"}}));  // NodeStage: no pod info
  EXPECT_EQ(plan.vol_data.at("volumeLifecycleMode"), "Persistent");
  // No attachRequired in the CSIDriver object: the API server's default, true.
  EXPECT_TRUE(plan.attach_required);
  objects_.csi_drivers[kDriver].attach_required = false;
  plans = Plan();
  ASSERT_THAT(plans, IsOk());
  EXPECT_FALSE((*plans)[0].attach_required);
  pod_.volumes[0].claim_read_only = true;
  plans = Plan();
  ASSERT_THAT(plans, IsOk());
  EXPECT_TRUE((*plans)[0].read_only);
}

}  // namespace
}  // namespace ndr::kubelet

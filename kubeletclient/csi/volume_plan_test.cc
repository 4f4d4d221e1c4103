#include "kubeletclient/csi/volume_plan.h"

#include <functional>

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
    Container app;
    app.field = "spec.containers[0]";
    app.name = "app";
    app.volume_mounts = {"info"};
    pod_.containers.push_back(app);
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

  // The plans of the volumes to publish, or the first volume's error.
  absl::StatusOr<std::vector<VolumePlan>> Plan() {
    PodPlan plan = PlanVolumes(pod_, objects_, drivers_, options_);
    if (absl::Status s = plan.FirstError(); !s.ok()) return s;
    std::vector<VolumePlan> plans;
    for (const VolumePlan* volume : plan.ToPublish()) plans.push_back(*volume);
    return plans;
  }

  // The whole plan, skipped volumes included.
  PodPlan Whole() { return PlanVolumes(pod_, objects_, drivers_, options_); }

  // Replaces the pod's volumes with a claim "data" of claim "data-claim", mounted by the app
  // (or mapped, for `block`), bound to PV pv-1 of the driver, which supports persistent volumes.
  void UseClaim(bool block = false) {
    pod_.volumes.clear();
    PodVolume claim_volume;
    claim_volume.name = "data";
    claim_volume.claim_name = "data-claim";
    claim_volume.source_types = {"persistentVolumeClaim"};
    pod_.volumes.push_back(claim_volume);
    pod_.containers[0].volume_mounts.clear();
    pod_.containers[0].volume_devices.clear();
    (block ? pod_.containers[0].volume_devices : pod_.containers[0].volume_mounts) = {"data"};
    PersistentVolumeClaim claim;
    claim.ns = "shop";
    claim.name = "data-claim";
    claim.uid = "claim-uid";
    claim.volume_name = "pv-1";
    claim.phase = "Bound";
    objects_.claims[{"shop", "data-claim"}] = claim;
    PersistentVolume pv;
    pv.name = "pv-1";
    pv.access_modes = {"ReadWriteOnce"};
    pv.volume_mode = block ? "Block" : "Filesystem";
    pv.claim_ref = ClaimReference{"shop", "data-claim", "claim-uid"};
    pv.csi = PersistentVolume::Csi{kDriver, "vol-17", false, "ext4", {}, std::nullopt};
    objects_.volumes["pv-1"] = pv;
    objects_.csi_drivers[kDriver].volume_lifecycle_modes = {"Persistent"};
    objects_.csi_drivers[kDriver].attach_required = false;
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
  const std::string shown = RedactedCsiJson(request);
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
  pod_.containers[0].volume_mounts = {pod_.volumes[0].name};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kInvalidArgument,
                               "which is not inside the root directory: refused"));
}

TEST_F(PlanTest, PersistentVolumeThroughItsClaim) {
  pod_.volumes.clear();
  PodVolume claim_volume;
  claim_volume.name = "data";
  claim_volume.claim_name = "data-claim";
  pod_.volumes.push_back(claim_volume);
  pod_.containers[0].volume_mounts = {"data"};
  // desired_state_of_world_populator.go getPVCExtractPV and getPVSpec, with their texts.
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "volume \"data\": error processing PVC shop/data-claim: failed to "
                               "fetch PVC from API server: persistentvolumeclaims \"data-claim\" "
                               "not found"));
  PersistentVolumeClaim claim;
  claim.ns = "shop";
  claim.name = "data-claim";
  claim.volume_name = "pv-1";
  claim.phase = "Bound";
  objects_.claims[{"shop", "data-claim"}] = claim;
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "error processing PVC shop/data-claim: failed to fetch PV pv-1 "
                               "from API server: persistentvolumes \"pv-1\" not found"));
  PersistentVolume pv;
  pv.name = "pv-1";
  pv.access_modes = {"ReadOnlyMany"};
  pv.mount_options = {"noatime"};
  pv.csi = PersistentVolume::Csi{kDriver, "vol-17", true, "ext4", {{"tier", "gold"}}, std::nullopt};
  pv.claim_ref = ClaimReference{"shop", "data-claim", ""};
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

// processPodVolumes: a volume no container uses is ignored; another plugin's volume is not the
// CSI plugin's; both are reported, with why.
TEST_F(PlanTest, EveryVolumeIsAccountedFor) {
  auto add = [&](const std::string& name, const std::string& type, bool used) {
    PodVolume volume;
    volume.name = name;
    volume.source_types = {type};
    pod_.volumes.push_back(volume);
    if (used) pod_.containers[0].volume_mounts.push_back(name);
  };
  add("cache", "emptyDir", true);
  add("config", "configMap", true);
  add("ebs", "awsElasticBlockStore", true);
  add("spare", "emptyDir", false);
  PodVolume unused_csi = pod_.volumes[0];
  unused_csi.name = "unused-csi";
  pod_.volumes.push_back(unused_csi);
  PodPlan plan = Whole();
  ASSERT_THAT(plan.FirstError(), IsOk());
  ASSERT_EQ(plan.volumes.size(), 6u);
  EXPECT_TRUE(plan.volumes[0].plan.has_value());  // "info", the CSI volume the app mounts
  EXPECT_EQ(plan.volumes[1].skipped, "emptyDir: not a CSI volume");
  EXPECT_EQ(plan.volumes[2].skipped, "configMap: not a CSI volume");
  EXPECT_EQ(plan.volumes[3].skipped,
            "awsElasticBlockStore: not a CSI volume (kubelet v1.26 migrates it to the CSI driver "
            "ebs.csi.aws.com; kubeletclient does not translate in-tree volumes)");
  for (size_t i : {4, 5}) {
    EXPECT_THAT(plan.volumes[i].skipped,
                HasSubstr("no container lists it in volumeMounts or volumeDevices: kubelet "
                          "ignores it"))
        << plan.volumes[i].name;
    EXPECT_FALSE(plan.volumes[i].plan.has_value());
  }
  // A volume without a source is the API server's default, an emptyDir.
  EXPECT_EQ(PodVolume().source_type(), "emptyDir");
}

// getPVCExtractPV, getPVSpec and the volume-mode checks of createVolumeSpec: each refusal in
// kubelet's words, nothing planned.
TEST_F(PlanTest, ClaimChecks) {
  struct Case {
    std::string name;
    std::function<void(PersistentVolumeClaim*, PersistentVolume*)> change;
    std::string error;
  } cases[] = {
      {"claim being deleted", [](auto* c, auto*) { c->being_deleted = true; },
       "volume \"data\": error processing PVC shop/data-claim: PVC is being deleted"},
      {"claim pending", [](auto* c, auto*) { c->phase = "Pending"; },
       "error processing PVC shop/data-claim: PVC is not bound (status.phase is \"Pending\")"},
      {"claim lost", [](auto* c, auto*) { c->phase = "Lost"; }, "PVC is not bound"},
      {"no volume name", [](auto* c, auto*) { c->volume_name.clear(); },
       "error processing PVC shop/data-claim: PVC has empty pvc.Spec.VolumeName"},
      {"no claimRef", [](auto*, auto* pv) { pv->claim_ref.reset(); },
       "error processing PVC shop/data-claim: found PV object pv-1 but it has a nil "
       "pv.Spec.ClaimRef indicating it is not yet bound to the claim"},
      {"claimRef of another UID", [](auto*, auto* pv) { pv->claim_ref->uid = "other-uid"; },
       "error processing PVC shop/data-claim: found PV object pv-1 but its pv.Spec.ClaimRef.UID "
       "other-uid does not point to claim.UID claim-uid"},
      {"claim without UID, claimRef with one",
       [](auto* c, auto*) { c->uid.clear(); },
       "found PV object pv-1 but its pv.Spec.ClaimRef.UID claim-uid does not point to claim.UID "},
      {"claimRef naming another claim", [](auto*, auto* pv) { pv->claim_ref->name = "theirs"; },
       "found PV object pv-1 but its pv.Spec.ClaimRef names claim shop/theirs"},
      {"claimRef in another namespace", [](auto*, auto* pv) { pv->claim_ref->ns = "other"; },
       "its pv.Spec.ClaimRef names claim other/data-claim"},
      {"block PV mounted", [](auto*, auto* pv) { pv->volume_mode = "Block"; },
       "volume \"data\": volume data has volumeMode Block, but is specified in volumeMounts"},
  };
  for (const Case& c : cases) {
    UseClaim();
    c.change(&objects_.claims[{"shop", "data-claim"}], &objects_.volumes["pv-1"]);
    PodPlan plan = Whole();
    EXPECT_THAT(plan.FirstError(), StatusIs(absl::StatusCode::kFailedPrecondition, c.error))
        << c.name;
    EXPECT_TRUE(plan.ToPublish().empty()) << c.name;
  }
  UseClaim(/*block=*/false);
  objects_.volumes["pv-1"].volume_mode = "Filesystem";
  pod_.containers[0].volume_mounts.clear();
  pod_.containers[0].volume_devices = {"data"};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               "volume data has volumeMode Filesystem, but is specified in "
                               "volumeDevices"));
  // Both UIDs empty, as in hand-written objects: kubelet's comparison passes.
  UseClaim();
  objects_.claims[{"shop", "data-claim"}].uid.clear();
  objects_.volumes["pv-1"].claim_ref->uid.clear();
  EXPECT_THAT(Plan(), IsOk());
}

// A PV without spec.csi is another plugin's: skipped, after the claim checks.
TEST_F(PlanTest, ClaimOfANonCsiVolumeIsSkipped) {
  UseClaim();
  objects_.volumes["pv-1"].csi.reset();
  objects_.volumes["pv-1"].source_type = "nfs";
  PodPlan plan = Whole();
  ASSERT_THAT(plan.FirstError(), IsOk());
  EXPECT_EQ(plan.volumes[0].skipped,
            "nfs: not a CSI volume (PersistentVolume pv-1 of claim shop/data-claim)");
  objects_.claims[{"shop", "data-claim"}].phase = "Pending";
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition, "PVC is not bound"));
}

// Generic ephemeral volumes: the claim <pod>-<volume>, which must be controlled by this pod
// (ephemeral.VolumeIsForPod), published as the PV it is bound to.
TEST_F(PlanTest, GenericEphemeralVolume) {
  UseClaim();
  PersistentVolumeClaim claim = objects_.claims[{"shop", "data-claim"}];
  objects_.claims.clear();
  claim.name = "web-scratch";
  objects_.volumes["pv-1"].claim_ref->name = "web-scratch";
  pod_.volumes[0].name = "scratch";
  pod_.volumes[0].claim_name.reset();
  pod_.volumes[0].ephemeral_claim_template = true;
  pod_.volumes[0].source_types = {"ephemeral"};
  pod_.containers[0].volume_mounts = {"scratch"};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kNotFound,
                               "volume \"scratch\": error processing PVC shop/web-scratch: failed "
                               "to fetch PVC from API server: persistentvolumeclaims "
                               "\"web-scratch\" not found"));
  objects_.claims[{"shop", "web-scratch"}] = claim;
  const std::string not_owner =
      "volume \"scratch\": PVC shop/web-scratch was not created for pod shop/web (pod is not "
      "owner)";
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition, not_owner));
  // Owned, but not as the controller; then controlled by another pod.
  objects_.claims[{"shop", "web-scratch"}].owner_references = {
      OwnerReference{"v1", "Pod", "web", "uid-1", false}};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition, not_owner));
  objects_.claims[{"shop", "web-scratch"}].owner_references = {
      OwnerReference{"v1", "Pod", "web", "uid-of-an-older-web", true}};
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition, not_owner));
  objects_.claims[{"shop", "web-scratch"}].owner_references = {
      OwnerReference{"v1", "Pod", "web", "uid-1", true}};
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  const VolumePlan& plan = (*plans)[0];
  EXPECT_EQ(plan.mode, "Persistent");
  EXPECT_EQ(plan.spec_name, "pv-1");
  EXPECT_EQ(plan.claim, "shop/web-scratch");
  EXPECT_EQ(plan.handle, "vol-17");
  EXPECT_EQ(plan.paths.mount, "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount");
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("generic ephemeral volume: claim "
                                                        "shop/web-scratch, controlled by this "
                                                        "pod")));
}

// csi_block.go's paths, named after the PV; no mount options, whatever the PV says; the data
// directory's vol_data.json has no lifecycle mode.
TEST_F(PlanTest, RawBlockVolume) {
  UseClaim(/*block=*/true);
  objects_.volumes["pv-1"].mount_options = {"noatime"};
  auto plans = Plan();
  ASSERT_THAT(plans, IsOk());
  const VolumePlan& plan = (*plans)[0];
  EXPECT_TRUE(plan.capability.block);
  EXPECT_TRUE(plan.capability.mount_flags.empty());
  EXPECT_FALSE(plan.device.has_value());
  ASSERT_TRUE(plan.block.has_value());
  const std::string devices = "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/";
  EXPECT_EQ(plan.block->staging, devices + "staging/pv-1");
  EXPECT_EQ(plan.block->publish_dir, devices + "publish/pv-1");
  EXPECT_EQ(plan.block->publish, devices + "publish/pv-1/uid-1");
  EXPECT_EQ(plan.block->global_map, devices + "pv-1/dev");
  EXPECT_EQ(plan.block->global_map_pod, devices + "pv-1/dev/uid-1");
  EXPECT_EQ(plan.block->vol_data, devices + "pv-1/data/vol_data.json");
  EXPECT_EQ(plan.block->pod_map,
            "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1");
  EXPECT_EQ(plan.vol_data, (VolData{{"specVolID", "pv-1"},
                                    {"volumeHandle", "vol-17"},
                                    {"driverName", kDriver},
                                    {"nodeName", "node1"},
                                    {"attachmentID", AttachmentName("vol-17", kDriver, "node1")}}));
  // kubelet's layout would mix a PV named "staging" with every block volume's staging path.
  for (const std::string name : {"staging", "publish"}) {
    UseClaim(/*block=*/true);
    PersistentVolume pv = objects_.volumes["pv-1"];
    objects_.volumes.clear();
    pv.name = name;
    objects_.volumes[name] = pv;
    objects_.claims[{"shop", "data-claim"}].volume_name = name;
    EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kInvalidArgument,
                                 "would share kubelet's directory "
                                 "plugins/kubernetes.io/csi/volumeDevices/" + name))
        << name;
  }
}

// desired_state_of_world.go getSELinuxLabel and AddPodToVolume, selinux.go
// VolumeSupportsSELinuxMount: the label only for a ReadWriteOncePod PV of a driver with
// seLinuxMount, on an SELinux host, from the containers that mount it; user and level only.
TEST_F(PlanTest, SeLinuxMountLabel) {
  auto set_up = [&] {
    UseClaim();
    objects_.volumes["pv-1"].access_modes = {"ReadWriteOncePod"};
    objects_.csi_drivers[kDriver].se_linux_mount = true;
    options_.selinux.enabled = true;
    options_.selinux.source = "--host-selinux=true";
    options_.feature_gates = FeatureGates();
    pod_.se_linux = SeLinuxOptions{"", "", "", "s0:c1,c2"};
    pod_.containers[0].se_linux.reset();
  };
  auto label = [&]() -> std::string {
    auto plans = Plan();
    if (!plans.ok()) return std::string(plans.status().message());
    return (*plans)[0].selinux_label;
  };
  set_up();
  EXPECT_EQ(label(), "system_u:object_r:container_file_t:s0:c1,c2");
  {
    auto plans = Plan();
    ASSERT_THAT(plans, IsOk());
    EXPECT_EQ((*plans)[0].capability.mount_flags,
              std::vector<std::string>{"context=\"system_u:object_r:container_file_t:s0:c1,c2\""});
    EXPECT_EQ((*plans)[0].vol_data.at("seLinuxMountContext"),
              "system_u:object_r:container_file_t:s0:c1,c2");
  }
  // A container's options replace the pod's whole; role and type never reach the file label.
  set_up();
  pod_.containers[0].se_linux = SeLinuxOptions{"user_u", "role_r", "spc_t", "s0:c5,c9"};
  EXPECT_EQ(label(), "user_u:object_r:container_file_t:s0:c5,c9");
  // No level: a random MCS pair, as go-selinux allocates.
  set_up();
  pod_.se_linux = SeLinuxOptions{"", "", "container_t", ""};
  EXPECT_THAT(label(), ::testing::MatchesRegex(
                           "system_u:object_r:container_file_t:s0:c[0-9]+,c[0-9]+"));
  // Each of these turns it off.
  struct Off {
    std::string name;
    std::function<void()> change;
  } offs[] = {
      {"host without SELinux", [&] { options_.selinux.enabled = false; }},
      {"SELinuxMountReadWriteOncePod off",
       [&] { options_.feature_gates.selinux_mount_read_write_once_pod = false; }},
      {"ReadWriteOncePod off", [&] { options_.feature_gates.read_write_once_pod = false; }},
      {"driver without seLinuxMount", [&] { objects_.csi_drivers[kDriver].se_linux_mount.reset(); }},
      {"ReadWriteOnce", [&] { objects_.volumes["pv-1"].access_modes = {"ReadWriteOnce"}; }},
      {"no seLinuxOptions", [&] { pod_.se_linux.reset(); }},
  };
  for (const Off& off : offs) {
    set_up();
    off.change();
    EXPECT_EQ(label(), "") << off.name;
  }
  // Two containers mounting it with different labels: kubelet refuses the pod.
  set_up();
  Container sidecar = pod_.containers[0];
  sidecar.name = "sidecar";
  sidecar.se_linux = SeLinuxOptions{"", "", "", "s0:c3,c4"};
  pod_.containers.push_back(sidecar);
  EXPECT_THAT(Plan(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               "volume pv-1 is used with two different SELinux contexts in the "
                               "same pod: \"system_u:object_r:container_file_t:s0:c1,c2\", "
                               "\"system_u:object_r:container_file_t:s0:c3,c4\""));
  // Only a warning for a volume that does not support SELinux mounts.
  objects_.volumes["pv-1"].access_modes = {"ReadWriteOnce"};
  EXPECT_EQ(label(), "");
}

}  // namespace
}  // namespace ndr::kubelet

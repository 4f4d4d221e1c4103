// Golden tests of what kubelet decides before it calls a driver, and of what it then sends:
// generic ephemeral volumes, the checks of a pod's claims and their PVs, SELinux mount labels,
// and pods whose volumes are not all CSI volumes, or not all used. Each asserts the exact calls
// a recording driver receives and the files under --root-dir, written from kubelet v1.26's code:
//   pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go processPodVolumes
//     (unused volumes), createVolumeSpec (generic ephemeral claims, volume modes),
//     getPVCExtractPV and getPVSpec (the claim checks);
//   k8s.io/component-helpers/storage/ephemeral VolumeClaimName, VolumeIsForPod;
//   pkg/kubelet/volumemanager/cache/desired_state_of_world.go AddPodToVolume, getSELinuxLabel;
//   pkg/volume/util/selinux.go VolumeSupportsSELinuxMount, AddSELinuxMountOption;
//   pkg/volume/csi/csi_attacher.go MountDevice and csi_mounter.go SetUpAt (the context mount
//     option, seLinuxMountContext in both vol_data.json files).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/kubelet_sequence_fixture.h"

namespace ndr {
namespace {

using ::ndr::testing::ClaimAndVolume;
using ::ndr::testing::CsiDriverYaml;
using ::ndr::testing::kClaimVolume;
using ::ndr::testing::kVol1Attachment;
using ::ndr::testing::kPvTarget;
using ::ndr::testing::kStagingPath;
using ::ndr::testing::kVol1Sha;
using ::ndr::testing::PodYaml;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using KubeletClaimsTest = ::ndr::testing::KubeletSequenceTest;

// The pod "web" (uid-a) with a generic ephemeral volume "scratch".
std::string EphemeralPod() {
  return PodYaml("web", "uid-a",
                 "{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: "
                 "[ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}");
}

// The ephemeral volume controller's claim web-scratch with `owners` (a YAML flow list), bound
// to pv-1.
std::string EphemeralClaim(const std::string& owners) {
  std::string objects = ClaimAndVolume("[ReadWriteOnce]", "", "", "web-scratch");
  const std::string metadata = "metadata: {name: web-scratch, namespace: shop, uid: claim-uid-1}";
  objects.replace(objects.find(metadata), metadata.size(),
                  "metadata:\n  name: web-scratch\n  namespace: shop\n  uid: claim-uid-1\n"
                  "  ownerReferences: " + owners);
  return objects;
}

// The files of pv-1 published for pod uid-a by a driver that neither attaches nor stages.
std::vector<std::string> PublishedFiles(const std::string& context = "") {
  return {
      "plugins/",
      "plugins/kubernetes.io/",
      "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/rec.csi.example.com/",
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha, "/"),
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha, "/globalmount/"),
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha,
                   "/vol_data.json = {\"driverName\":\"rec.csi.example.com\",", context,
                   "\"volumeHandle\":\"vol-1\"}\n"),
      "pods/",
      "pods/uid-a/",
      "pods/uid-a/volumes/",
      "pods/uid-a/volumes/kubernetes.io~csi/",
      "pods/uid-a/volumes/kubernetes.io~csi/pv-1/",
      "pods/uid-a/volumes/kubernetes.io~csi/pv-1/mount/",
      absl::StrCat("pods/uid-a/volumes/kubernetes.io~csi/pv-1/vol_data.json = {\"attachmentID\":\"",
                   kVol1Attachment,
                   "\",\"driverName\":\"rec.csi.example.com\",\"nodeName\":\"node-1\",", context,
                   "\"specVolID\":\"pv-1\",\"volumeHandle\":\"vol-1\","
                   "\"volumeLifecycleMode\":\"Persistent\"}\n"),
  };
}

// What the last unpublish leaves: the driver's directory, the pod's volume directories.
const std::vector<std::string> kTornDown = {
    "plugins/", "plugins/kubernetes.io/", "plugins/kubernetes.io/csi/",
    "plugins/kubernetes.io/csi/rec.csi.example.com/", "pods/", "pods/uid-a/",
    "pods/uid-a/volumes/", "pods/uid-a/volumes/kubernetes.io~csi/"};

// A generic ephemeral volume whose claim this pod controls: published exactly as the PV the claim
// is bound to, named after the PV.
TEST_F(KubeletClaimsTest, GenericEphemeralVolumeBound) {
  Objects({{"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")},
           {"claim.yaml", EphemeralClaim("[{apiVersion: v1, kind: Pod, name: web, uid: uid-a, "
                                         "controller: true, blockOwnerDeletion: true}]")}});
  const std::string pod = EphemeralPod();
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),  // MountDevice: STAGE_UNSTAGE_VOLUME
                  std::string("NodeGetCapabilities"),  // SetUpAt: STAGE_UNSTAGE_VOLUME
                  std::string("NodeGetCapabilities"),  // SetUpAt: VOLUME_MOUNT_GROUP
                  std::string("NodeGetCapabilities"),  // the access-mode mapper
                  absl::StrCat("NodePublishVolume volume_id: \"vol-1\" target_path: \"", kPvTarget,
                               "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: "
                               "\"noatime\" } access_mode { mode: SINGLE_NODE_WRITER } } "
                               "volume_context { key: \"tier\" value: \"gold\" }"),
              }));
  EXPECT_THAT(out, HasSubstr("\"claim\": \"shop/web-scratch\""));
  EXPECT_THAT(out, HasSubstr("generic ephemeral volume: claim shop/web-scratch, controlled by "
                             "this pod, bound to PersistentVolume pv-1"));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedFiles()));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" target_path: \"",
                               kPvTarget, "\""),
                  std::string("NodeGetCapabilities"),
              }));
  EXPECT_THAT(Files(), ElementsAreArray(kTornDown));
}

// A claim named <pod>-<volume> that this pod does not control (an older pod of the same name
// made it, or the pod owns it without being its controller): ephemeral.VolumeIsForPod refuses.
TEST_F(KubeletClaimsTest, GenericEphemeralVolumeNotOwnedByThePod) {
  for (const std::string& owners :
       {std::string("[{apiVersion: v1, kind: Pod, name: web, uid: uid-old, controller: true}]"),
        std::string("[{apiVersion: v1, kind: Pod, name: web, uid: uid-a}]")}) {
    Objects({{"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")},
             {"claim.yaml", EphemeralClaim(owners)}});
    std::string out;
    EXPECT_EQ(Run("publish", EphemeralPod(), &out), 1) << out;
    EXPECT_THAT(out, HasSubstr("volume \"scratch\": PVC shop/web-scratch was not created for pod "
                               "shop/web (pod is not owner); nothing was published"))
        << owners;
    EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"})) << owners;
    EXPECT_THAT(Files(), IsEmpty()) << owners;
  }
}

// The claim <pod>-<volume> does not exist (the ephemeral volume controller has not made it yet).
TEST_F(KubeletClaimsTest, GenericEphemeralVolumeClaimMissing) {
  Objects({{"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  std::string out;
  EXPECT_EQ(Run("publish", EphemeralPod(), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("volume \"scratch\": error processing PVC shop/web-scratch: failed to "
                             "fetch PVC from API server: persistentvolumeclaims \"web-scratch\" "
                             "not found"));
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));
  EXPECT_THAT(Files(), IsEmpty());
}

// getPVCExtractPV and getPVSpec: each refusal in kubelet's words, before anything is sent.
TEST_F(KubeletClaimsTest, ClaimChecks) {
  struct Case {
    std::string name;
    std::string from, to;  // a change to ClaimAndVolume()'s text
    std::string error;
  } cases[] = {
      {"claim pending", "status: {phase: Bound}", "status: {phase: Pending}",
       "error processing PVC shop/data: PVC is not bound"},
      {"claim without status", "status: {phase: Bound}\n", "",
       "error processing PVC shop/data: PVC is not bound (status.phase is \"Pending\")"},
      {"claim being deleted", "uid: claim-uid-1}\nspec: {volumeName",
       "uid: claim-uid-1, deletionTimestamp: '2026-11-23T10:00:00Z'}\nspec: {volumeName",
       "error processing PVC shop/data: PVC is being deleted"},
      {"claim not bound to a volume", "spec: {volumeName: pv-1}", "spec: {}",
       "error processing PVC shop/data: PVC has empty pvc.Spec.VolumeName"},
      {"PV without claimRef", "  claimRef: {namespace: shop, name: data, uid: claim-uid-1}\n", "",
       "error processing PVC shop/data: found PV object pv-1 but it has a nil pv.Spec.ClaimRef "
       "indicating it is not yet bound to the claim"},
      {"PV bound to another claim UID", "name: data, uid: claim-uid-1}",
       "name: data, uid: claim-uid-2}",
       "error processing PVC shop/data: found PV object pv-1 but its pv.Spec.ClaimRef.UID "
       "claim-uid-2 does not point to claim.UID claim-uid-1"},
      {"PV bound to another claim", "claimRef: {namespace: shop, name: data,",
       "claimRef: {namespace: shop, name: other,",
       "error processing PVC shop/data: found PV object pv-1 but its pv.Spec.ClaimRef names "
       "claim shop/other"},
      {"block PV in volumeMounts", "  mountOptions: [noatime]\n",
       "  mountOptions: [noatime]\n  volumeMode: Block\n",
       "volume \"data\": volume data has volumeMode Block, but is specified in volumeMounts"},
  };
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  for (const Case& c : cases) {
    std::string objects = ClaimAndVolume();
    ASSERT_NE(objects.find(c.from), std::string::npos) << c.name;
    objects.replace(objects.find(c.from), c.from.size(), c.to);
    Objects({{"pv.yaml", objects}, {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
    std::string out;
    EXPECT_EQ(Run("publish", pod, &out), 1) << c.name << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.error)) << c.name;
    EXPECT_THAT(out, HasSubstr("nothing was published")) << c.name;
    EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"})) << c.name;
    EXPECT_THAT(Files(), IsEmpty()) << c.name;
  }
  // A filesystem PV in volumeDevices.
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  std::string out;
  EXPECT_EQ(Run("publish", PodYaml("db", "uid-a", kClaimVolume, "", /*block=*/true), &out), 1);
  EXPECT_THAT(out, HasSubstr("volume data has volumeMode Filesystem, but is specified in "
                             "volumeDevices"));
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));
}

// The SELinux mount label: with the gates on (a current kubelet's defaults), on an SELinux host,
// for a ReadWriteOncePod PV of a driver with seLinuxMount: context="<user>:object_r:
// container_file_t:<level>" after the PV's mount options in NodeStageVolume and
// NodePublishVolume, and seLinuxMountContext in both vol_data.json files. Off on a host without
// SELinux.
TEST_F(KubeletClaimsTest, SeLinuxMountContext) {
  Objects({{"pv.yaml", ClaimAndVolume("[ReadWriteOncePod]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false, seLinuxMount: true}")}});
  driver_.Configure({.stage = true});
  const std::string pod =
      PodYaml("db", "uid-a", kClaimVolume,
              "  securityContext: {seLinuxOptions: {user: user_u, role: role_r, type: spc_t, "
              "level: \"s0:c11,c22\"}}\n");
  // The calls of a staged volume, with `flags` as the mount flags.
  auto expected = [&](const std::string& flags) -> std::vector<std::string> {
    const std::string capability =
        absl::StrCat("volume_capability { mount { fs_type: \"ext4\" mount_flags: \"noatime\"",
                     flags, " } access_mode { mode: SINGLE_NODE_WRITER } }");
    return {"NodeGetInfo",
            "NodeGetCapabilities",
            "NodeGetCapabilities",
            "NodeGetCapabilities",
            absl::StrCat("NodeStageVolume volume_id: \"vol-1\" staging_target_path: \"",
                         kStagingPath, "\" ", capability,
                         " volume_context { key: \"tier\" value: \"gold\" }"),
            "NodeGetCapabilities",
            "NodeGetCapabilities",
            "NodeGetCapabilities",
            absl::StrCat("NodePublishVolume volume_id: \"vol-1\" staging_target_path: \"",
                         kStagingPath, "\" target_path: \"", kPvTarget, "\" ", capability,
                         " volume_context { key: \"tier\" value: \"gold\" }")};
  };
  std::string out;
  // On an SELinux host: only the user and the level of the pod's options carry over.
  ASSERT_EQ(Run("publish", pod, &out, {"--host-selinux=true"}), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray(expected(
                  " mount_flags: \"context=\\\"user_u:object_r:container_file_t:s0:c11,c22\\\"\"")));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedFiles(
                           "\"seLinuxMountContext\":\"user_u:object_r:container_file_t:s0:c11,c22\",")));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume",
                                                       "NodeGetCapabilities",
                                                       "NodeUnstageVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray(kTornDown));

  // A host without SELinux: no context, and the report says why.
  ASSERT_EQ(Run("publish", pod, &out, {"--host-selinux=false"}), 0) << out;
  EXPECT_THAT(driver_.Take(), ElementsAreArray(expected("")));
  EXPECT_THAT(out, HasSubstr("SELinux mount: not used, the host has no SELinux "
                             "(--host-selinux=false)"));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedFiles()));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  driver_.Take();
  EXPECT_THAT(Files(), ElementsAreArray(kTornDown));

  // The gate off (v1.26's default): none either.
  ASSERT_EQ(Run("publish", pod, &out,
                {"--host-selinux=true", "--feature-gates=SELinuxMountReadWriteOncePod=false"}),
            0)
      << out;
  EXPECT_THAT(driver_.Take(), ElementsAreArray(expected("")));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedFiles()));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
}

// SELinuxMount, GA and on by default in kubelet 1.37: every PersistentVolume of a driver with
// seLinuxMount: true is mounted with -o context, not only ReadWriteOncePod ones (v1.37.2
// pkg/volume/util/selinux.go VolumeSupportsSELinuxMount); a pod whose seLinuxChangePolicy is
// Recursive gets none (GetMountSELinuxLabel, SELinuxChangePolicy on from 1.33).
TEST_F(KubeletClaimsTest, SeLinuxMountContextByRelease) {
  Objects({{"pv.yaml", ClaimAndVolume("[ReadWriteOnce]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false, seLinuxMount: true}")}});
  driver_.Configure({.stage = true});
  auto pod = [](const std::string& policy) {
    return PodYaml("db", "uid-a", kClaimVolume,
                   absl::StrCat("  securityContext: {seLinuxOptions: {level: \"s0:c11,c22\"}",
                                policy, "}\n"));
  };
  const std::string context =
      "mount_flags: \"context=\\\"system_u:object_r:container_file_t:s0:c11,c22\\\"\"";
  auto flags_sent = [&]() {
    std::vector<std::string> with_context;
    for (const std::string& call : driver_.Take()) {
      if (absl::StartsWith(call, "NodeStageVolume") || absl::StartsWith(call, "NodePublishVolume")) {
        with_context.push_back(absl::StrCat(call.substr(0, call.find(' ')), " ",
                                            absl::StrContains(call, context) ? "context" : "none"));
      }
    }
    return with_context;
  };
  std::string out;
  // 1.36: SELinuxMount is off (beta), a ReadWriteOnce volume gets no context.
  ASSERT_EQ(Run("publish", pod(""), &out, {"--host-selinux=true", "--kubelet-version=1.36"}), 0)
      << out;
  EXPECT_THAT(flags_sent(), ElementsAre("NodeStageVolume none", "NodePublishVolume none"));
  EXPECT_THAT(out, HasSubstr("only a PersistentVolume whose only access mode is ReadWriteOncePod"));
  ASSERT_EQ(Run("unpublish", pod(""), &out, {"--kubelet-version=1.36"}), 0) << out;
  driver_.Take();
  // 1.37: the context on both, and in both vol_data.json files.
  ASSERT_EQ(Run("publish", pod(""), &out, {"--host-selinux=true", "--kubelet-version=1.37"}), 0)
      << out;
  EXPECT_THAT(flags_sent(), ElementsAre("NodeStageVolume context", "NodePublishVolume context"));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedFiles(
                           "\"seLinuxMountContext\":\"system_u:object_r:container_file_t:s0:c11,c22\",")));
  ASSERT_EQ(Run("unpublish", pod(""), &out, {"--kubelet-version=1.37"}), 0) << out;
  driver_.Take();
  EXPECT_THAT(Files(), ElementsAreArray(kTornDown));
  // 1.37, the pod asks for Recursive relabelling: none.
  ASSERT_EQ(Run("publish", pod(", seLinuxChangePolicy: Recursive"), &out,
                {"--host-selinux=true", "--kubelet-version=1.37"}),
            0)
      << out;
  EXPECT_THAT(flags_sent(), ElementsAre("NodeStageVolume none", "NodePublishVolume none"));
  EXPECT_THAT(out, HasSubstr("seLinuxChangePolicy is Recursive"));
  ASSERT_EQ(Run("unpublish", pod(""), &out, {"--kubelet-version=1.37"}), 0) << out;
  driver_.Take();
  // 1.37 with SELinuxMount turned off: back to ReadWriteOncePod only.
  ASSERT_EQ(Run("publish", pod(""), &out,
                {"--host-selinux=true", "--kubelet-version=1.37", "--feature-gates=SELinuxMount=false"}),
            0)
      << out;
  EXPECT_THAT(flags_sent(), ElementsAre("NodeStageVolume none", "NodePublishVolume none"));
  ASSERT_EQ(Run("unpublish", pod(""), &out, {"--kubelet-version=1.37"}), 0) << out;
}

// Every volume of the pod is in the report: the CSI ones with their calls, the others skipped
// with why (another plugin's volume; a volume no container uses).
TEST_F(KubeletClaimsTest, PodWithVolumesOfEveryKind) {
  Objects({{"csidriver.yaml", CsiDriverYaml("{volumeLifecycleModes: [Ephemeral]}")}});
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: uid-a}
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: settings, mountPath: /etc/app}
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: cache
    emptyDir: {}
  - name: settings
    configMap: {name: app-settings}
  - name: scratch
    csi: {driver: rec.csi.example.com}
  - name: forgotten
    csi: {driver: rec.csi.example.com}
)";
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  // Only the CSI volume the container mounts: csi- + sha256("uid-a" + "scratch").
  const std::string handle = "csi-f16568175e9bc143f37c5c3a79ebefa0420e3bd228332868514e1ad642187d53";
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodePublishVolume volume_id: \"", handle,
                               "\" target_path: \"<root>/pods/uid-a/volumes/kubernetes.io~csi/"
                               "scratch/mount\" volume_capability { mount { } access_mode { mode: "
                               "SINGLE_NODE_WRITER } }"),
              }));
  EXPECT_THAT(out, HasSubstr("\"volume\": \"cache\",\n      \"skipped\": \"emptyDir: not a CSI "
                             "volume\""));
  EXPECT_THAT(out, HasSubstr("\"volume\": \"settings\",\n      \"skipped\": \"configMap: not a "
                             "CSI volume\""));
  EXPECT_THAT(out, HasSubstr("\"volume\": \"forgotten\",\n      \"skipped\": \"no container lists "
                             "it in volumeMounts or volumeDevices: kubelet ignores it"));
  EXPECT_THAT(out, HasSubstr("\"volume\": \"scratch\",\n      \"driver\": "
                             "\"rec.csi.example.com\""));
  EXPECT_THAT(out, HasSubstr("\"result\": \"published\""));
  EXPECT_THAT(Files(),
              ElementsAreArray({
                  std::string("pods/"),
                  std::string("pods/uid-a/"),
                  std::string("pods/uid-a/volumes/"),
                  std::string("pods/uid-a/volumes/kubernetes.io~csi/"),
                  std::string("pods/uid-a/volumes/kubernetes.io~csi/scratch/"),
                  std::string("pods/uid-a/volumes/kubernetes.io~csi/scratch/mount/"),
                  absl::StrCat("pods/uid-a/volumes/kubernetes.io~csi/scratch/vol_data.json = "
                               "{\"attachmentID\":\"csi-6b1a90d10759434b789979c347d9e8c65e9dd9e6"
                               "2ef04b7cd0be582bfab2e089\",\"driverName\":\"rec.csi.example.com\","
                               "\"nodeName\":\"node-1\",\"specVolID\":\"scratch\",\"volumeHandle\":\"",
                               handle, "\",\"volumeLifecycleMode\":\"Ephemeral\"}\n"),
              }));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray({"pods/", "pods/uid-a/", "pods/uid-a/volumes/",
                                         "pods/uid-a/volumes/kubernetes.io~csi/"}));
}

}  // namespace
}  // namespace ndr

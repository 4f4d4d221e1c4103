// Golden tests of the kubelet side's volume sequence: `kubeletclient publish` and `unpublish` as
// real processes against a CSI driver faked in this process that records every call, and the
// exact files left under --root-dir after each step.
//
// The expected calls and files are written from kubelet v1.26's CSI volume plugin, not from this
// code: pkg/volume/csi/csi_attacher.go (WaitForAttach, MountDevice, UnmountDevice,
// makeDeviceMountPath), csi_mounter.go (SetUpAt, TearDownAt, supportsFSGroup), csi_client.go
// (NodeStageVolume, NodePublishVolume, nodeSupportsCapability, getNodeV1AccessModeMapper,
// asCSIAccessModeV1, asSingleNodeMultiWriterCapableCSIAccessModeV1), csi_util.go
// (saveVolumeData, removeMountDir) and pkg/volume/util/operationexecutor/operation_generator.go
// (the order). Each kubeletclient command also starts with the registration handshake, whose
// only call on the driver is NodeGetInfo. Hashes were computed with sha256sum.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/kubelet_sequence_fixture.h"

namespace ndr {
namespace {

using ::ndr::testing::kDriver;
using ::ndr::testing::kVol1Attachment;
using ::ndr::testing::kVol1Sha;
using ::ndr::testing::AttachmentYaml;
using ::ndr::testing::ClaimAndVolume;
using ::ndr::testing::CsiDriverYaml;
using ::ndr::testing::kClaimVolume;
using ::ndr::testing::kPvTarget;
using ::ndr::testing::kStagingPath;
using ::ndr::testing::PodYaml;
using ::ndr::testing::PublishedPvFiles;
using ::ndr::testing::TornDownFiles;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using KubeletSequenceTest = ::ndr::testing::KubeletSequenceTest;

// The inline volume "scratch" of pod uid-a: csi- + sha256("uid-a" + "scratch"), and its
// attachment ID.
constexpr char kInlineHandle[] =
    "csi-f16568175e9bc143f37c5c3a79ebefa0420e3bd228332868514e1ad642187d53";
constexpr char kInlineAttachment[] =
    "csi-6b1a90d10759434b789979c347d9e8c65e9dd9e62ef04b7cd0be582bfab2e089";

TEST_F(KubeletSequenceTest, InlineVolume) {
  Objects({{"csidriver.yaml", CsiDriverYaml("{volumeLifecycleModes: [Ephemeral]}")}});
  const std::string pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com, "
                              "volumeAttributes: {size: 1Gi}}}");
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  // SetUpAt, ephemeral: no STAGE_UNSTAGE_VOLUME question, then VOLUME_MOUNT_GROUP and the
  // access-mode mapper's; ReadWriteOnce as SINGLE_NODE_WRITER; no staging path.
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodePublishVolume volume_id: \"", kInlineHandle,
                               "\" target_path: \"<root>/pods/uid-a/volumes/kubernetes.io~csi/"
                               "scratch/mount\" volume_capability { mount { } access_mode { "
                               "mode: SINGLE_NODE_WRITER } } volume_context { key: \"size\" "
                               "value: \"1Gi\" }"),
              }));
  EXPECT_THAT(Files(), ElementsAreArray({
                           std::string("pods/"),
                           std::string("pods/uid-a/"),
                           std::string("pods/uid-a/volumes/"),
                           std::string("pods/uid-a/volumes/kubernetes.io~csi/"),
                           std::string("pods/uid-a/volumes/kubernetes.io~csi/scratch/"),
                           std::string("pods/uid-a/volumes/kubernetes.io~csi/scratch/mount/"),
                           absl::StrCat("pods/uid-a/volumes/kubernetes.io~csi/scratch/"
                                        "vol_data.json = {\"attachmentID\":\"",
                                        kInlineAttachment,
                                        "\",\"driverName\":\"rec.csi.example.com\",\"nodeName\":"
                                        "\"node-1\",\"specVolID\":\"scratch\",\"volumeHandle\":\"",
                                        kInlineHandle, "\",\"volumeLifecycleMode\":\"Ephemeral\"}\n"),
                       }));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  absl::StrCat("NodeUnpublishVolume volume_id: \"", kInlineHandle,
                               "\" target_path: \"<root>/pods/uid-a/volumes/kubernetes.io~csi/"
                               "scratch/mount\""),
              }));
  EXPECT_THAT(Files(), ElementsAreArray({"pods/", "pods/uid-a/", "pods/uid-a/volumes/",
                                         "pods/uid-a/volumes/kubernetes.io~csi/"}));
}

TEST_F(KubeletSequenceTest, PersistentVolumeOfADriverThatNeitherAttachesNorStages) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  // MountDevice asks for STAGE_UNSTAGE_VOLUME only, and stops there; SetUpAt asks three times
  // (stage, mount group, mapper) and sends no staging path.
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodePublishVolume volume_id: \"vol-1\" target_path: \"", kPvTarget,
                               "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: "
                               "\"noatime\" } access_mode { mode: SINGLE_NODE_WRITER } } "
                               "volume_context { key: \"tier\" value: \"gold\" }"),
              }));
  // The device directory and its vol_data.json exist even though nothing was staged.
  EXPECT_THAT(Files(), ElementsAreArray(PublishedPvFiles()));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" target_path: \"",
                               kPvTarget, "\""),
                  std::string("NodeGetCapabilities"),  // UnmountDevice: no stage, just remove
              }));
  EXPECT_THAT(Files(), ElementsAreArray(TornDownFiles()));
}

// From kubelet 1.34 MountDevice writes the device directory's vol_data.json only for a driver
// that stages, and UnmountDevice, finding none, skips: the empty globalmount/ stays (v1.34.2 and
// v1.37.2 pkg/volume/csi/csi_attacher.go MountDevice, UnmountDevice). 1.33 as 1.26 (above).
TEST_F(KubeletSequenceTest, ANonStagingDriversDeviceDirectoryFromKubelet134) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  const std::string device_dir =
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha, "/");
  std::string out;
  for (const char* release : {"--kubelet-version=1.33", "--kubelet-version=1.34"}) {
    SCOPED_TRACE(release);
    const bool v134 = std::string(release) == "--kubelet-version=1.34";
    ASSERT_EQ(Run("publish", pod, &out, {release}), 0) << out;
    // The same requests either way: NodeGetCapabilities (stage) and SetUp's.
    EXPECT_EQ(driver_.TakeMethods(),
              std::vector<std::string>({"NodeGetInfo", "NodeGetCapabilities",
                                        "NodeGetCapabilities", "NodeGetCapabilities",
                                        "NodeGetCapabilities", "NodePublishVolume"}));
    std::vector<std::string> published = PublishedPvFiles();
    if (v134) {
      published.erase(std::remove_if(published.begin(), published.end(),
                                     [&](const std::string& f) {
                                       return f == device_dir + "vol_data.json = "
                                                                "{\"driverName\":\"rec.csi."
                                                                "example.com\",\"volumeHandle\":"
                                                                "\"vol-1\"}\n";
                                     }),
                      published.end());
      ASSERT_EQ(published.size(), PublishedPvFiles().size() - 1);
    }
    EXPECT_THAT(Files(), ElementsAreArray(published));
    ASSERT_EQ(Run("unpublish", pod, &out, {release}), 0) << out;
    std::vector<std::string> torn_down = TornDownFiles();
    if (v134) {
      // UnmountDevice skipped without a call: "volume data file ... does not exist".
      EXPECT_EQ(driver_.TakeMethods(),
                std::vector<std::string>({"NodeGetInfo", "NodeUnpublishVolume"}));
      torn_down.insert(torn_down.begin() + 4, {device_dir, device_dir + "globalmount/"});
    } else {
      EXPECT_EQ(driver_.TakeMethods(), std::vector<std::string>({"NodeGetInfo",
                                                                 "NodeUnpublishVolume",
                                                                 "NodeGetCapabilities"}));
    }
    EXPECT_THAT(Files(), ElementsAreArray(torn_down));
  }
}

TEST_F(KubeletSequenceTest, AttachedAndStagedWithPublishContextAndStageSecrets) {
  Objects({{"pv.yaml", ClaimAndVolume("[ReadWriteOnce]",
                                      "    nodeStageSecretRef: {name: stage-creds, namespace: "
                                      "shop}\n")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
           {"attachment.yaml",
            AttachmentYaml("{attached: true, attachmentMetadata: {devicePath: /dev/xvdf}}")},
           {"secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: stage-creds, namespace: shop}\n"
            "data: {key: czNjcmV0}\n"}});
  driver_.Configure({.stage = true});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  EXPECT_THAT(
      driver_.Take(),
      ElementsAreArray({
          std::string("NodeGetInfo"),
          // MountDevice: STAGE_UNSTAGE_VOLUME, VOLUME_MOUNT_GROUP, the mapper, NodeStageVolume
          // with the VolumeAttachment's metadata, the stage secret and the PV's attributes.
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodeStageVolume volume_id: \"vol-1\" publish_context { key: "
                       "\"devicePath\" value: \"/dev/xvdf\" } staging_target_path: \"",
                       kStagingPath,
                       "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: "
                       "\"noatime\" } access_mode { mode: SINGLE_NODE_WRITER } } secrets { key: "
                       "\"key\" value: \"s3cret\" } volume_context { key: \"tier\" value: "
                       "\"gold\" }"),
          // SetUpAt: the same three questions, then NodePublishVolume with the staging path.
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodePublishVolume volume_id: \"vol-1\" publish_context { key: "
                       "\"devicePath\" value: \"/dev/xvdf\" } staging_target_path: \"",
                       kStagingPath, "\" target_path: \"", kPvTarget,
                       "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: "
                       "\"noatime\" } access_mode { mode: SINGLE_NODE_WRITER } } volume_context "
                       "{ key: \"tier\" value: \"gold\" }"),
      }));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("s3cret")));  // the report redacts secrets
  EXPECT_THAT(Files(), ElementsAreArray(PublishedPvFiles()));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" target_path: \"",
                               kPvTarget, "\""),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodeUnstageVolume volume_id: \"vol-1\" staging_target_path: \"",
                               kStagingPath, "\""),
              }));
  EXPECT_THAT(Files(), ElementsAreArray(TornDownFiles()));
}

// Kubelet finds the attachment by its name alone (the hash of handle, driver and node) and
// reads only its status (v1.26.15 csi_attacher.go waitForVolumeAttachmentInternal,
// verifyAttachmentStatus): one that names another PV of the same handle serves this one too.
TEST_F(KubeletSequenceTest, AnAttachmentOfTheHandleServesEveryPvOfIt) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
           {"attachment.yaml",
            absl::StrReplaceAll(
                AttachmentYaml("{attached: true, attachmentMetadata: {devicePath: /dev/xvdg}}"),
                {{"persistentVolumeName: pv-1", "persistentVolumeName: pv-of-another-claim"}})}});
  driver_.Configure({.stage = true});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  std::vector<std::string> calls = driver_.Take();
  ASSERT_FALSE(calls.empty());
  EXPECT_THAT(calls.back(), HasSubstr("value: \"/dev/xvdg\""));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(Files(), ElementsAreArray(TornDownFiles()));
}

// Two pods on the node share one staged volume: staged once, for the first, and unstaged once,
// after the last, whatever order separate commands come in.
TEST_F(KubeletSequenceTest, TwoPodsShareOneStagedVolume) {
  Objects({{"pv.yaml", ClaimAndVolume("[ReadWriteMany]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true});
  const std::string pod_a = PodYaml("a", "uid-a", kClaimVolume);
  const std::string pod_b = PodYaml("b", "uid-b", kClaimVolume);
  auto methods = [&] {
    std::vector<std::string> names;
    for (const std::string& call : driver_.Take()) names.push_back(call.substr(0, call.find(' ')));
    return names;
  };
  std::string out;
  ASSERT_EQ(Run("publish", pod_a, &out), 0) << out;
  EXPECT_THAT(methods(), ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities",
                                           "NodeGetCapabilities", "NodeGetCapabilities",
                                           "NodeStageVolume", "NodeGetCapabilities",
                                           "NodeGetCapabilities", "NodeGetCapabilities",
                                           "NodePublishVolume"}));
  ASSERT_EQ(Run("publish", pod_b, &out), 0) << out;
  EXPECT_THAT(methods(), ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities",
                                           "NodeGetCapabilities", "NodeGetCapabilities",
                                           "NodePublishVolume"}));
  EXPECT_THAT(out, HasSubstr("MountDevice skipped: another pod on this node uses the volume"));
  ASSERT_EQ(Run("unpublish", pod_a, &out), 0) << out;
  EXPECT_THAT(methods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume"}));
  struct stat st;
  EXPECT_EQ(stat((root_ + "/plugins/kubernetes.io/csi/rec.csi.example.com/" + kVol1Sha +
                  "/vol_data.json").c_str(),
                 &st),
            0);
  ASSERT_EQ(Run("unpublish", pod_b, &out), 0) << out;
  EXPECT_THAT(methods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume",
                                           "NodeGetCapabilities", "NodeUnstageVolume"}));
  EXPECT_NE(stat((root_ + "/plugins/kubernetes.io/csi/rec.csi.example.com/" + kVol1Sha).c_str(),
                 &st),
            0);
}

// The PV's first access mode, mapped as csi_client.go maps it, with and without the driver's
// SINGLE_NODE_MULTI_WRITER; the claim's readOnly makes the publish read-only.
TEST_F(KubeletSequenceTest, AccessModes) {
  struct Case {
    std::string modes;
    bool multi_writer;
    std::string expected;
  } cases[] = {
      {"[ReadWriteOnce]", false, "SINGLE_NODE_WRITER"},
      {"[ReadWriteOnce]", true, "SINGLE_NODE_MULTI_WRITER"},
      {"[ReadOnlyMany]", false, "MULTI_NODE_READER_ONLY"},
      {"[ReadOnlyMany]", true, "MULTI_NODE_READER_ONLY"},
      {"[ReadWriteMany]", false, "MULTI_NODE_MULTI_WRITER"},
      {"[ReadWriteMany]", true, "MULTI_NODE_MULTI_WRITER"},
      {"[ReadWriteOncePod]", false, "SINGLE_NODE_WRITER"},
      {"[ReadWriteOncePod]", true, "SINGLE_NODE_SINGLE_WRITER"},
      {"[ReadOnlyMany, ReadWriteMany]", false, "MULTI_NODE_READER_ONLY"},
  };
  const std::string pod = PodYaml(
      "db", "uid-a", "{name: data, persistentVolumeClaim: {claimName: data, readOnly: true}}");
  for (const Case& c : cases) {
    Objects({{"pv.yaml", ClaimAndVolume(c.modes)},
             {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
    driver_.Configure({.stage = true, .multi_writer = c.multi_writer});
    std::string out;
    ASSERT_EQ(Run("publish", pod, &out), 0) << out;
    const std::string mode = absl::StrCat("access_mode { mode: ", c.expected, " }");
    std::vector<std::string> calls = driver_.Take();
    ASSERT_EQ(calls.size(), 9u) << c.modes;
    EXPECT_THAT(calls[4], HasSubstr(mode)) << c.modes << " NodeStageVolume";
    EXPECT_THAT(calls[8], HasSubstr(mode)) << c.modes << " NodePublishVolume";
    EXPECT_THAT(calls[8], HasSubstr(" readonly: true ")) << c.modes;
    ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
    driver_.Take();
  }
}

// fsGroup: a driver with VOLUME_MOUNT_GROUP gets it in NodeStageVolume and NodePublishVolume
// (whatever the fsGroupPolicy); for a driver without it, kubelet changes the files' group itself
// when the policy allows (SetVolumeOwnership after NodePublishVolume).
TEST_F(KubeletSequenceTest, FsGroup) {
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume,
                                  "  securityContext: {fsGroup: 2000}\n");
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false, fsGroupPolicy: File}")}});
  driver_.Configure({.stage = true, .mount_group = true});
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  std::vector<std::string> calls = driver_.Take();
  ASSERT_EQ(calls.size(), 9u);
  EXPECT_THAT(calls[4], HasSubstr("mount { fs_type: \"ext4\" mount_flags: \"noatime\" "
                                  "volume_mount_group: \"2000\" }"));
  EXPECT_THAT(calls[8], HasSubstr("mount { fs_type: \"ext4\" mount_flags: \"noatime\" "
                                  "volume_mount_group: \"2000\" }"));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  driver_.Take();

  driver_.Configure({.stage = true});
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  calls = driver_.Take();
  ASSERT_EQ(calls.size(), 9u);
  EXPECT_THAT(calls[8], ::testing::Not(HasSubstr("volume_mount_group")));
  struct stat st;
  ASSERT_EQ(stat((root_ + "/pods/uid-a/volumes/kubernetes.io~csi/pv-1/mount").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 2000u);
  EXPECT_EQ(st.st_mode & 07777, 02770u);  // 0750 from the driver, with setgid, 0660 and 0110
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
}

TEST_F(KubeletSequenceTest, RefusalsSendNothingAndLeaveNothing) {
  driver_.Configure({.stage = true});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  struct Case {
    std::string name;
    std::map<std::string, std::string> objects;
    std::string error;
  } cases[] = {
      {"no VolumeAttachment",
       {{"pv.yaml", ClaimAndVolume()}, {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")}},
       absl::StrCat("MountVolume.WaitForAttach failed for volume \"pv-1\" : volume vol-1 has GET "
                    "error for volume attachment ",
                    kVol1Attachment, ": volumeattachments.storage.k8s.io \"", kVol1Attachment,
                    "\" not found")},
      {"no CSIDriver object: attach is required",
       {{"pv.yaml", ClaimAndVolume()}},
       "MountVolume.WaitForAttach failed for volume \"pv-1\" : volume vol-1 has GET error"},
      {"not attached yet",
       {{"pv.yaml", ClaimAndVolume()},
        {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
        {"attachment.yaml", AttachmentYaml("{attached: false}")}},
       "MountVolume.WaitForAttach failed for volume \"pv-1\" : attachdetachment timeout for "
       "volume vol-1"},
      {"attach error",
       {{"pv.yaml", ClaimAndVolume()},
        {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
        {"attachment.yaml",
         AttachmentYaml("{attached: false, attachError: {message: 'disk is in use elsewhere'}}")}},
       "MountVolume.WaitForAttach failed for volume \"pv-1\" : disk is in use elsewhere"},
      // verifyAttachmentStatus: an attachment being deleted fails fast, attached or not.
      {"attachment being deleted",
       {{"pv.yaml", ClaimAndVolume()},
        {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
        {"attachment.yaml",
         absl::StrReplaceAll(
             AttachmentYaml("{attached: true}"),
             {{"metadata: {", "metadata: {deletionTimestamp: '2026-11-25T00:00:00Z', "}})}},
       "MountVolume.WaitForAttach failed for volume \"pv-1\" : volume attachment is being "
       "deleted"},
  };
  for (const Case& c : cases) {
    Objects(c.objects);
    std::string out;
    EXPECT_EQ(Run("publish", pod, &out), 1) << c.name << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.error)) << c.name;
    EXPECT_THAT(out, HasSubstr("nothing was published")) << c.name;
    EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"})) << c.name;
    EXPECT_THAT(Files(), ::testing::IsEmpty()) << c.name;
  }

  // A missing stage secret: kubelet's text, found only once the driver says it stages.
  Objects({{"pv.yaml", ClaimAndVolume("[ReadWriteOnce]",
                                      "    nodeStageSecretRef: {name: gone, namespace: shop}\n")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  std::string out;
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MountVolume.MountDevice failed for volume \"pv-1\" : fetching "
                             "NodeStageSecretRef shop/gone failed: kubernetes.io/csi: failed to "
                             "find the secret gone in the namespace shop with error: secrets "
                             "\"gone\" not found"));
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities"}));
  EXPECT_THAT(Files(), ::testing::IsEmpty());
}

// A failed NodeStageVolume leaves no publish and no device directory; a failed NodePublishVolume
// of a volume this publish staged, which no other pod uses, is unstaged again.
TEST_F(KubeletSequenceTest, FailuresLeaveNothingHalfDone) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  driver_.Configure(
      {.stage = true,
       .fail = {{"NodeStageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no such disk")}}});
  std::string out;
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("kubeletclient: volume \"data\": MountVolume.MountDevice failed for "
                             "volume \"pv-1\" : NodeStageVolume: rpc error: code = Internal desc "
                             "= no such disk"));
  std::vector<std::string> calls = driver_.Take();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_THAT(calls[4], HasSubstr("NodeStageVolume"));
  // removeMountDir: the globalmount, the vol_data.json and the device directory went.
  EXPECT_THAT(Files(), ElementsAreArray({"plugins/", "plugins/kubernetes.io/",
                                         "plugins/kubernetes.io/csi/",
                                         "plugins/kubernetes.io/csi/rec.csi.example.com/"}));

  driver_.Configure(
      {.stage = true,
       .fail = {{"NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "mount failed")}}});
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("kubeletclient: volume \"data\": MountVolume.SetUp failed for "
                             "volume \"pv-1\" : NodePublishVolume: rpc error: code = Internal "
                             "desc = mount failed"));
  EXPECT_THAT(out, HasSubstr("UnmountDevice: the device was unstaged again, as no pod uses it"));
  calls = driver_.Take();
  ASSERT_EQ(calls.size(), 11u);
  EXPECT_THAT(calls[8], HasSubstr("NodePublishVolume"));
  EXPECT_EQ(calls[9], "NodeGetCapabilities");
  EXPECT_THAT(calls[10], HasSubstr("NodeUnstageVolume volume_id: \"vol-1\""));
  EXPECT_THAT(Files(), ElementsAreArray({"plugins/", "plugins/kubernetes.io/",
                                         "plugins/kubernetes.io/csi/",
                                         "plugins/kubernetes.io/csi/rec.csi.example.com/", "pods/",
                                         "pods/uid-a/", "pods/uid-a/volumes/",
                                         "pods/uid-a/volumes/kubernetes.io~csi/"}));
}

// A NodeStageVolume error that leaves the driver's state uncertain (DEADLINE_EXCEEDED) leaves the
// device directory, vol_data.json and globalmount for a retry (csi_attacher.go MountDevice), and
// kubelet's reconciler unstages that device once no pod needs it (reconciler_common.go
// unmountDetachDevices; the device was marked uncertain by operation_generator.go
// GenerateMountVolumeFunc): the pod's unpublish ends with NodeUnstageVolume although the pod had
// no volume directory. After a final error there is nothing to unstage. The goldens' stage-error
// scenarios record the same from the real kubelet code of v1.26.15 and v1.37.2.
TEST_F(KubeletSequenceTest, AnUncertainStageIsUnstagedWhenThePodGoes) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume);
  const std::string device = absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha);
  driver_.Configure(
      {.stage = true,
       .fail = {{"NodeStageVolume",
                 grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "still attaching")}}});
  std::string out;
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("the driver's state is uncertain"));
  driver_.Take();
  const std::vector<std::string> files = Files();
  EXPECT_THAT(files, ::testing::Contains(device + "/globalmount/"));
  EXPECT_THAT(files, ::testing::Contains(::testing::StartsWith(device + "/vol_data.json = ")));

  nlohmann::json report;
  EXPECT_EQ(RunReport("unpublish", pod, &out, &report), 0) << out;
  const std::vector<std::string> calls = driver_.Take();
  ASSERT_EQ(calls.size(), 3u) << out;
  EXPECT_EQ(calls[0], "NodeGetInfo");  // the command's registration
  EXPECT_EQ(calls[1], "NodeGetCapabilities");
  EXPECT_THAT(calls[2], HasSubstr("NodeUnstageVolume volume_id: \"vol-1\""));
  ASSERT_EQ(report["volumes"].size(), 1u) << report.dump();
  EXPECT_EQ(report["volumes"][0]["result"], "unstaged");
  EXPECT_EQ(report["volumes"][0]["deviceCalls"].size(), 2u);
  EXPECT_THAT(Files(), ElementsAreArray({"plugins/", "plugins/kubernetes.io/",
                                         "plugins/kubernetes.io/csi/",
                                         "plugins/kubernetes.io/csi/rec.csi.example.com/"}));

  // A final error: removeMountDir took everything; the unpublish sends nothing.
  driver_.Configure(
      {.stage = true,
       .fail = {{"NodeStageVolume", grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no")}}});
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  driver_.Take();
  EXPECT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
}

// What looks like a stranded device but is not kubelet's is left alone and said so: a directory
// whose name is not the hash of the handle its vol_data.json names, a symbolic link, a broken
// vol_data.json; and a device another pod still uses is not a stranded one.
bool MakeDirs(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  return !error;
}

TEST_F(KubeletSequenceTest, OnlyKubeletsOwnStrandedDevicesAreUnstaged) {
  Objects({{"pv.yaml", ClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string driver_dir = root_ + "/plugins/kubernetes.io/csi/rec.csi.example.com";
  const std::string wrong = driver_dir + "/" + std::string(64, 'a');
  ASSERT_TRUE(MakeDirs(wrong + "/globalmount"));
  ASSERT_TRUE(::ndr::testing::WriteFile(
      wrong + "/vol_data.json",
      R"({"driverName":"rec.csi.example.com","volumeHandle":"vol-1","specVolID":"pv-1"})"));
  const std::string broken = driver_dir + "/" + std::string(64, 'b');
  ASSERT_TRUE(MakeDirs(broken));
  ASSERT_TRUE(::ndr::testing::WriteFile(broken + "/vol_data.json", "{not json"));
  const std::string outside = dir_.Join("outside");
  ASSERT_TRUE(MakeDirs(outside));
  ASSERT_TRUE(::ndr::testing::WriteFile(
      outside + "/vol_data.json",
      R"({"driverName":"rec.csi.example.com","volumeHandle":"vol-1","specVolID":"pv-1"})"));
  ASSERT_EQ(symlink(outside.c_str(), (driver_dir + "/" + kVol1Sha).c_str()), 0);

  nlohmann::json report;
  std::string out;
  EXPECT_EQ(RunReport("unpublish", PodYaml("db", "uid-a", kClaimVolume), &out, &report), 0) << out;
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
  std::vector<std::string> skipped;
  for (const auto& volume : report["volumes"]) skipped.push_back(volume.value("skipped", ""));
  EXPECT_THAT(skipped, ::testing::UnorderedElementsAre(
                           HasSubstr("a handle whose hash is not the directory's"),
                           HasSubstr(broken + "/vol_data.json")))
      << report.dump();
  struct stat st;
  EXPECT_EQ(stat((wrong + "/vol_data.json").c_str(), &st), 0);  // all left as they were
  EXPECT_EQ(stat((outside + "/vol_data.json").c_str(), &st), 0);

  // Staged for pod uid-b, which still has the volume: not stranded.
  ASSERT_EQ(unlink((driver_dir + "/" + kVol1Sha).c_str()), 0);
  driver_.Configure({.stage = true});
  ASSERT_EQ(Run("publish", PodYaml("web", "uid-b", kClaimVolume), &out), 0) << out;
  driver_.Take();
  EXPECT_EQ(Run("unpublish", PodYaml("db", "uid-a", kClaimVolume), &out), 0) << out;
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
}

}  // namespace
}  // namespace ndr

// Golden tests of raw block volumes (volumeMode: Block, mapped with volumeDevices): the exact
// calls a recording driver receives from `kubeletclient publish` and `unpublish`, and the exact
// files under --root-dir after each, written from kubelet v1.26's code, not from this code:
//   pkg/volume/util/operationexecutor/operation_generator.go GenerateMapVolumeFunc (the order:
//     NewBlockVolumeMapper, WaitForAttach, SetUpDevice unless the device is mounted already,
//     MapPodDevice, EvalHostSymlinks, util.MapBlockVolume), GenerateUnmapVolumeFunc
//     (util.UnmapBlockVolume, UnmapPodDevice) and GenerateUnmapDeviceFunc
//     (GetDeviceBindMountRefs, TearDownDevice, RemoveMapPath);
//   pkg/volume/csi/csi_block.go (stageVolumeForBlock, publishVolumeForBlock, SetUpDevice,
//     MapPodDevice, UnmapPodDevice, unstageVolumeForBlock, TearDownDevice,
//     cleanupOrphanDeviceFiles, GetStagingPath, getPublishDir, getPublishPath);
//   pkg/volume/csi/csi_plugin.go NewBlockVolumeMapper (data/vol_data.json) and
//     NewBlockVolumeUnmapper; csi_util.go getVolumeDeviceDataDir, getVolumeDevicePluginDir;
//   pkg/volume/csi/csi_client.go NodeStageVolume and NodePublishVolume (a Block capability, the
//     access-mode mapper's NodeGetCapabilities);
//   pkg/volume/util/util.go MapBlockVolume, UnmapBlockVolume and volumepathhandler (the global
//     map file, the pod's symbolic link);
//   pkg/kubelet/volumemanager/reconciler/reconstruct_common.go getVolumesFromPodDir (a pod's block
//     volumes are its volumeDevices entries).
// Bind mounts and loop devices are skipped here (--block-host-ops=skip), so the files are the
// same whoever runs the test: the bind mount's target is then the empty file kubelet creates
// for it. //test:block_process_test makes them for real, as root.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/kubelet_sequence_fixture.h"

namespace ndr {
namespace {

using ::ndr::testing::AttachmentYaml;
using ::ndr::testing::BlockClaimAndVolume;
using ::ndr::testing::CsiDriverYaml;
using ::ndr::testing::kClaimVolume;
using ::ndr::testing::kVol1Attachment;
using ::ndr::testing::PodYaml;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using KubeletBlockTest = ::ndr::testing::KubeletSequenceTest;

const std::string kDevices = "<root>/plugins/kubernetes.io/csi/volumeDevices";
const std::string kStaging = kDevices + "/staging/pv-1";
const std::string kPublishA = kDevices + "/publish/pv-1/uid-a";
const std::string kBlock = "volume_capability { block { } access_mode { mode: SINGLE_NODE_WRITER } }";

std::string BlockPod(const std::string& name, const std::string& uid) {
  return PodYaml(name, uid, kClaimVolume, "", /*block=*/true);
}

// NewBlockVolumeMapper's vol_data.json: no lifecycle mode.
const std::string kBlockVolData = absl::StrCat(
    "plugins/kubernetes.io/csi/volumeDevices/pv-1/data/vol_data.json = {\"attachmentID\":\"",
    kVol1Attachment,
    "\",\"driverName\":\"rec.csi.example.com\",\"nodeName\":\"node-1\",\"specVolID\":\"pv-1\","
    "\"volumeHandle\":\"vol-1\"}\n");

// The files of pv-1 mapped for pod uid-a (and, with `staged`, its staging directory).
std::vector<std::string> MappedFiles(bool staged) {
  std::vector<std::string> files = {
      "plugins/",
      "plugins/kubernetes.io/",
      "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/volumeDevices/",
      "plugins/kubernetes.io/csi/volumeDevices/publish/",
      "plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/",
      "plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-a = ",  // the driver's file
      "plugins/kubernetes.io/csi/volumeDevices/pv-1/",
      "plugins/kubernetes.io/csi/volumeDevices/pv-1/data/",
      kBlockVolData,
      "plugins/kubernetes.io/csi/volumeDevices/pv-1/dev/",
      "plugins/kubernetes.io/csi/volumeDevices/pv-1/dev/uid-a = ",  // the bind mount's file
      "pods/",
      "pods/uid-a/",
      "pods/uid-a/volumeDevices/",
      "pods/uid-a/volumeDevices/kubernetes.io~csi/",
      "pods/uid-a/volumeDevices/kubernetes.io~csi/pv-1 -> " + kPublishA,
  };
  if (staged) {
    files.push_back("plugins/kubernetes.io/csi/volumeDevices/staging/");
    files.push_back("plugins/kubernetes.io/csi/volumeDevices/staging/pv-1/");
    std::sort(files.begin(), files.end());
  }
  return files;
}

// What kubelet leaves when the last pod's mapping is gone: the emptied parents.
std::vector<std::string> UnmappedFiles(bool staged, const std::vector<std::string>& pods) {
  std::vector<std::string> files = {
      "plugins/",
      "plugins/kubernetes.io/",
      "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/volumeDevices/",
      "plugins/kubernetes.io/csi/volumeDevices/publish/",
      "pods/",
  };
  if (staged) files.push_back("plugins/kubernetes.io/csi/volumeDevices/staging/");
  for (const std::string& uid : pods) {
    for (const char* dir : {"/", "/volumeDevices/", "/volumeDevices/kubernetes.io~csi/"}) {
      files.push_back("pods/" + uid + dir);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST_F(KubeletBlockTest, StagedBlockVolume) {
  Objects({{"pv.yaml", BlockClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true});
  const std::string pod = BlockPod("db", "uid-a");
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  EXPECT_THAT(
      driver_.Take(),
      ElementsAreArray({
          std::string("NodeGetInfo"),
          // SetUpDevice: STAGE_UNSTAGE_VOLUME, then NodeStageVolume (with the mapper's question)
          // with a Block capability: no fs type, no mount flags.
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodeStageVolume volume_id: \"vol-1\" staging_target_path: \"", kStaging,
                       "\" ", kBlock, " volume_context { key: \"tier\" value: \"gold\" }"),
          // MapPodDevice: the mapper's question, then NodePublishVolume at the publish file.
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodePublishVolume volume_id: \"vol-1\" staging_target_path: \"", kStaging,
                       "\" target_path: \"", kPublishA, "\" ", kBlock,
                       " volume_context { key: \"tier\" value: \"gold\" }"),
      }));
  EXPECT_THAT(Files(), ElementsAreArray(MappedFiles(/*staged=*/true)));
  // The report says what was done on the host and what was skipped, and why.
  EXPECT_THAT(out, HasSubstr("\"volumeMode\": \"Block\""));
  EXPECT_THAT(out, HasSubstr("\"operation\": \"bind mount\""));
  EXPECT_THAT(out, HasSubstr("\"result\": \"skipped: --block-host-ops=skip\""));
  EXPECT_THAT(out, HasSubstr("\"operation\": \"symlink\""));
  EXPECT_THAT(out, HasSubstr("\"operation\": \"attach loop device\""));
  // The mapping comes after the volume's five calls (the handshake's NodeGetInfo is not its).
  EXPECT_THAT(out, HasSubstr("\"afterCalls\": 5"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("\"afterCalls\": 0")));

  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  // UnmapPodDevice, then TearDownDevice: the staging directory exists.
                  absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" target_path: \"",
                               kPublishA, "\""),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodeUnstageVolume volume_id: \"vol-1\" staging_target_path: \"",
                               kStaging, "\""),
              }));
  EXPECT_THAT(Files(), ElementsAreArray(UnmappedFiles(/*staged=*/true, {"uid-a"})));
  // The unmapping comes before the calls: UnmapBlockVolume, then UnmapPodDevice.
  EXPECT_THAT(out, HasSubstr("\"afterCalls\": 0"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("\"afterCalls\": 1")));
}

// A driver that does not stage still gets the staging path in NodePublishVolume, and none is
// created; TearDownDevice finds no staging directory and calls nothing.
TEST_F(KubeletBlockTest, BlockVolumeOfADriverThatDoesNotStage) {
  Objects({{"pv.yaml", BlockClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = BlockPod("db", "uid-a");
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),  // SetUpDevice: no STAGE_UNSTAGE_VOLUME
                  std::string("NodeGetCapabilities"),  // the mapper's
                  absl::StrCat("NodePublishVolume volume_id: \"vol-1\" staging_target_path: \"",
                               kStaging, "\" target_path: \"", kPublishA, "\" ", kBlock,
                               " volume_context { key: \"tier\" value: \"gold\" }"),
              }));
  EXPECT_THAT(Files(), ElementsAreArray(MappedFiles(/*staged=*/false)));
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" target_path: \"",
                               kPublishA, "\""),
              }));
  EXPECT_THAT(Files(), ElementsAreArray(UnmappedFiles(/*staged=*/false, {"uid-a"})));
}

// An attached volume: WaitForAttach reads the VolumeAttachment, whose metadata is the publish
// context of NodeStageVolume and NodePublishVolume; the stage secret and the publish secret go
// to their calls, and the read-only claim makes the publish read-only.
TEST_F(KubeletBlockTest, AttachedBlockVolumeWithSecrets) {
  Objects({{"pv.yaml", BlockClaimAndVolume("[ReadWriteOnce]",
                                           "    nodeStageSecretRef: {name: stage, namespace: shop}\n"
                                           "    nodePublishSecretRef: {name: pub, namespace: shop}\n")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")},
           {"attachment.yaml",
            AttachmentYaml("{attached: true, attachmentMetadata: {devicePath: /dev/xvdf}}")},
           {"secrets.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: stage, namespace: shop}\n"
            "data: {key: czNjcmV0}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: pub, "
            "namespace: shop}\ndata: {token: cHViLXMzY3JldA==}\n"}});
  driver_.Configure({.stage = true});
  const std::string pod = PodYaml(
      "db", "uid-a", "{name: data, persistentVolumeClaim: {claimName: data, readOnly: true}}", "",
      /*block=*/true);
  std::string out;
  ASSERT_EQ(Run("publish", pod, &out), 0) << out;
  EXPECT_THAT(
      driver_.Take(),
      ElementsAreArray({
          std::string("NodeGetInfo"),
          std::string("NodeGetCapabilities"),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodeStageVolume volume_id: \"vol-1\" publish_context { key: "
                       "\"devicePath\" value: \"/dev/xvdf\" } staging_target_path: \"",
                       kStaging, "\" ", kBlock,
                       " secrets { key: \"key\" value: \"s3cret\" } volume_context { key: "
                       "\"tier\" value: \"gold\" }"),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodePublishVolume volume_id: \"vol-1\" publish_context { key: "
                       "\"devicePath\" value: \"/dev/xvdf\" } staging_target_path: \"",
                       kStaging, "\" target_path: \"", kPublishA, "\" ", kBlock,
                       " readonly: true secrets { key: \"token\" value: \"pub-s3cret\" } "
                       "volume_context { key: \"tier\" value: \"gold\" }"),
      }));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("s3cret")));  // the report redacts secrets
  ASSERT_EQ(Run("unpublish", pod, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume",
                                                       "NodeGetCapabilities",
                                                       "NodeUnstageVolume"}));
  // Not attached: MapVolume's WaitForAttach refuses, nothing is sent or written.
  Objects({{"pv.yaml", BlockClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: true}")}});
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MapVolume.WaitForAttach failed for volume \"pv-1\" : volume vol-1 "
                             "has GET error for volume attachment"));
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));
  EXPECT_THAT(Files(), ElementsAreArray(UnmappedFiles(/*staged=*/true, {"uid-a"})));
}

// Two pods on the node map one staged block volume: set up once, for the first; each gets its
// own publish file, bind mount and link; torn down once, after the last.
TEST_F(KubeletBlockTest, TwoPodsMapOneBlockVolume) {
  Objects({{"pv.yaml", BlockClaimAndVolume("[ReadWriteMany]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true});
  const std::string pod_a = BlockPod("a", "uid-a"), pod_b = BlockPod("b", "uid-b");
  std::string out;
  ASSERT_EQ(Run("publish", pod_a, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetCapabilities",
                                "NodeStageVolume", "NodeGetCapabilities", "NodePublishVolume"}));
  ASSERT_EQ(Run("publish", pod_b, &out), 0) << out;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodePublishVolume volume_id: \"vol-1\" staging_target_path: \"",
                               kStaging, "\" target_path: \"", kDevices,
                               "/publish/pv-1/uid-b\" volume_capability { block { } access_mode "
                               "{ mode: MULTI_NODE_MULTI_WRITER } } volume_context { key: "
                               "\"tier\" value: \"gold\" }"),
              }));
  EXPECT_THAT(out, HasSubstr("SetUpDevice skipped: another pod on this node maps the volume"));
  std::vector<std::string> both = MappedFiles(/*staged=*/true);
  for (const std::string& file :
       {std::string("plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-b = "),
        std::string("plugins/kubernetes.io/csi/volumeDevices/pv-1/dev/uid-b = "),
        std::string("pods/uid-b/"), std::string("pods/uid-b/volumeDevices/"),
        std::string("pods/uid-b/volumeDevices/kubernetes.io~csi/"),
        "pods/uid-b/volumeDevices/kubernetes.io~csi/pv-1 -> " + kDevices + "/publish/pv-1/uid-b"}) {
    both.push_back(file);
  }
  std::sort(both.begin(), both.end());
  EXPECT_THAT(Files(), ElementsAreArray(both));

  ASSERT_EQ(Run("unpublish", pod_a, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume"}));
  EXPECT_THAT(out, HasSubstr("UnmapDevice skipped: another pod on this node maps the volume"));
  struct stat st;
  EXPECT_EQ(stat((root_ + "/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1").c_str(), &st), 0);
  ASSERT_EQ(Run("unpublish", pod_b, &out), 0) << out;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeUnpublishVolume",
                                                       "NodeGetCapabilities",
                                                       "NodeUnstageVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray(UnmappedFiles(/*staged=*/true, {"uid-a", "uid-b"})));
}

// A ReadWriteOncePod volume another pod on the node maps: refused before anything is sent
// (operation_generator.go, with the ReadWriteOncePod gate); with the gate off, mapped.
TEST_F(KubeletBlockTest, ReadWriteOncePodIsForOnePod) {
  Objects({{"pv.yaml", BlockClaimAndVolume("[ReadWriteOncePod]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  std::string out;
  ASSERT_EQ(Run("publish", BlockPod("a", "uid-a"), &out), 0) << out;
  driver_.Take();
  EXPECT_EQ(Run("publish", BlockPod("b", "uid-b"), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MapVolume.SetUpDevice failed for volume \"pv-1\" : volume uses the "
                             "ReadWriteOncePod access mode and is already in use by another pod"));
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));
  ASSERT_EQ(Run("publish", BlockPod("b", "uid-b"), &out, {"--feature-gates=ReadWriteOncePod=false"}),
            0)
      << out;
}

// A failed NodeStageVolume leaves no directories of the volume; a failed NodePublishVolume of a
// volume set up by this publish is torn down again; a driver that creates no file at the
// publish path fails the mapping (kubelet's EvalHostSymlinks), and the volume is unpublished
// and torn down again.
TEST_F(KubeletBlockTest, FailuresLeaveNothingHalfDone) {
  Objects({{"pv.yaml", BlockClaimAndVolume()},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  const std::string pod = BlockPod("db", "uid-a");
  // cleanupOrphanDeviceFiles removes the volume's directories, not their parents.
  const std::vector<std::string> after_stage = {
      "plugins/", "plugins/kubernetes.io/", "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/volumeDevices/",
      "plugins/kubernetes.io/csi/volumeDevices/staging/"};
  const std::vector<std::string> after_publish = {
      "plugins/", "plugins/kubernetes.io/", "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/volumeDevices/",
      "plugins/kubernetes.io/csi/volumeDevices/publish/",
      "plugins/kubernetes.io/csi/volumeDevices/staging/"};
  driver_.Configure(
      {.stage = true,
       .fail = {{"NodeStageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no such disk")}}});
  std::string out;
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("volume \"data\": MapVolume.SetUpDevice failed for volume \"pv-1\" : "
                             "NodeStageVolume: rpc error: code = Internal desc = no such disk"));
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetCapabilities",
                                "NodeStageVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray(after_stage));

  driver_.Configure(
      {.stage = true,
       .fail = {{"NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no device")}}});
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MapVolume.MapPodDevice failed for volume \"pv-1\" : "
                             "NodePublishVolume: rpc error: code = Internal desc = no device"));
  EXPECT_THAT(out, HasSubstr("UnmapDevice: the device was torn down again, as no pod maps it"));
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetCapabilities",
                                "NodeStageVolume", "NodeGetCapabilities", "NodePublishVolume",
                                "NodeGetCapabilities", "NodeUnstageVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray(after_publish));

  // The driver says it published but made no file: kubelet cannot map what is not there, and
  // the volume is unpublished and torn down again. The error is filepath.EvalSymlinks's, in Go's
  // words (v1.26.15 hostutil_linux.go EvalHostSymlinks).
  driver_.Configure({.stage = true, .make_targets = false});
  EXPECT_EQ(Run("publish", pod, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MapVolume.EvalHostSymlinks failed for volume \"pv-1\" : lstat " +
                             root_ + "/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-a: "
                             "no such file or directory"));
  EXPECT_THAT(out, HasSubstr("the volume was unmapped and unpublished again"));
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetCapabilities",
                                "NodeStageVolume", "NodeGetCapabilities", "NodePublishVolume",
                                "NodeUnpublishVolume", "NodeGetCapabilities",
                                "NodeUnstageVolume"}));
  EXPECT_THAT(Files(), ElementsAreArray(after_publish));
}

}  // namespace
}  // namespace ndr

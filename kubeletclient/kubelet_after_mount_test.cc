// Golden tests of what kubelet does to a node plugin after the mount: `kubeletclient publish`
// (expansion at mount, service-account tokens), `expand`, `stats` and `republish` as real
// processes against a recording CSI driver in this process; the exact calls, the report, and the
// files. Written from kubelet v1.26's code, not from this code:
//   pkg/volume/util/operationexecutor/operation_generator.go GenerateMountVolumeFunc and
//     GenerateMapVolumeFunc (expandVolumeDuringMount after SetUp / MapBlockVolume),
//     expandVolumeDuringMount, checkIfSupportsNodeExpansion, legacyCallNodeExpandOnPlugin,
//     GenerateExpandInUseVolumeFunc, doOnlineExpansion, nodeExpandVolume;
//   pkg/volume/csi/expander.go nodeExpandWithClient (the EXPAND_VOLUME question, the
//     nodeExpandSecretRef secret, the PV's first access mode and mount options, "block" for block
//     volumes), csi_client.go NodeExpandVolume and NodeGetVolumeStats (the VOLUME_CONDITION
//     question after the call), csi_metrics.go GetMetrics (GET_VOLUME_STATS first), csi_plugin.go
//     NewBlockVolumeMapper (the stats path volumeDevices/<pv>/dev/<pod uid>);
//   pkg/volume/util/resize_util.go MarkFSResizeFinished, MergeResizeConditionOnPVC;
//   pkg/kubelet/metrics/collectors/volume_stats.go (names, help, labels; one series per claim);
//   pkg/volume/csi/csi_mounter.go SetUpAt and podServiceAccountTokenAttrs, pkg/kubelet/token/
//     token_manager.go (requiresRefresh), pkg/serviceaccount/claims.go, pkg/registry/core/
//     serviceaccount/storage/token.go; csi_plugin.go RequiresRemount and the reconciler's
//     remount.
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/kubelet_sequence_fixture.h"
#include "kubeletclient/token/jwt.h"
#include "kubeletclient/token/test_keys.h"
#include "nlohmann/json.hpp"
#include "test/util/subprocess.h"

namespace ndr {
namespace {

using ::ndr::testing::ClaimAndVolume;
using ::ndr::testing::CsiDriverYaml;
using ::ndr::testing::FakeRegistrar;
using ::ndr::testing::kClaimVolume;
using ::ndr::testing::kPvTarget;
using ::ndr::testing::kStagingPath;
using ::ndr::testing::PodYaml;
using ::ndr::testing::PublishedPvFiles;
using ::ndr::testing::RecordingDriver;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TornDownFiles;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

using Config = RecordingDriver::Config;

// pv-1 of `pv_size` bound to claim shop/data, whose status has `claim_status` added (YAML flow
// entries after "phase: Bound") and whose spec has `claim_spec`; `csi_extra` goes into the PV's
// spec.csi. Block with `block`.
std::string Sized(const std::string& pv_size, const std::string& claim_status,
                  const std::string& csi_extra = "", bool block = false,
                  const std::string& claim_spec = "", const std::string& access_modes = "[ReadWriteOnce]") {
  return absl::StrReplaceAll(
      ClaimAndVolume(access_modes, csi_extra,
                     absl::StrCat(pv_size.empty() ? "" : "  capacity: {storage: " + pv_size + "}\n",
                                  block ? "  volumeMode: Block\n" : "")),
      {{"status: {phase: Bound}", "status: {phase: Bound" + claim_status + "}"},
       {"spec: {volumeName: pv-1}", "spec: {volumeName: pv-1" + claim_spec + "}"}});
}

const char kClaimAt1Gi[] =
    ", capacity: {storage: 1Gi}, conditions: [{type: FileSystemResizePending, status: 'True'}, "
    "{type: Example, status: 'True', reason: Kept}]";

const std::string kExpand2Gi = absl::StrCat(
    "NodeExpandVolume volume_id: \"vol-1\" volume_path: \"", kPvTarget,
    "\" capacity_range { required_bytes: 2147483648 } staging_target_path: \"", kStagingPath,
    "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: \"noatime\" } access_mode { "
    "mode: SINGLE_NODE_WRITER } }");

const std::string kPublishStaged = absl::StrCat(
    "NodePublishVolume volume_id: \"vol-1\" staging_target_path: \"", kStagingPath,
    "\" target_path: \"", kPvTarget,
    "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: \"noatime\" } access_mode { "
    "mode: SINGLE_NODE_WRITER } } volume_context { key: \"tier\" value: \"gold\" }");

const std::string kStage = absl::StrCat(
    "NodeStageVolume volume_id: \"vol-1\" staging_target_path: \"", kStagingPath,
    "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: \"noatime\" } access_mode { "
    "mode: SINGLE_NODE_WRITER } } volume_context { key: \"tier\" value: \"gold\" }");

// The calls of a staged publish of pv-1 by a driver that stages: MountDevice, then SetUp.
std::vector<std::string> StagedPublishCalls() {
  return {"NodeGetInfo",        "NodeGetCapabilities", "NodeGetCapabilities",
          "NodeGetCapabilities", kStage,               "NodeGetCapabilities",
          "NodeGetCapabilities", "NodeGetCapabilities", kPublishStaged};
}

std::vector<std::string> Plus(std::vector<std::string> calls, std::vector<std::string> more) {
  calls.insert(calls.end(), more.begin(), more.end());
  return calls;
}

class KubeletAfterMountTest : public ::ndr::testing::KubeletSequenceTest {
 protected:
  const std::string pod_ = PodYaml("db", "uid-a", kClaimVolume);
};

// expandVolumeDuringMount after SetUp: the claim's status (1Gi) is below the PV's capacity
// (2Gi), so NodeExpandVolume follows NodePublishVolume, with the pod's mount directory, the
// globalmount and the PV's capability; then MarkFSResizeFinished writes the claim's status:
// the PV's capacity, the resize condition gone, other conditions kept.
TEST_F(KubeletAfterMountTest, ExpandsAtMountAfterSetUpAndWritesTheClaimStatus) {
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray(Plus(StagedPublishCalls(),
                                    {"NodeGetCapabilities", "NodeGetCapabilities", kExpand2Gi})));
  EXPECT_EQ(report["volumes"][0]["claimStatus"],
            json::parse(R"({"claim": "shop/data", "status": {"phase": "Bound",
                "capacity": {"storage": "2Gi"},
                "conditions": [{"type": "Example", "status": "True", "reason": "Kept"}]}})"));
  EXPECT_EQ(report["volumes"][0]["result"], "published");
  EXPECT_THAT(Files(), ElementsAreArray(PublishedPvFiles()));
}

// The staging path is the globalmount even for a driver that does not stage (GetDeviceMountPath
// is the CSI plugin's whatever the driver says), and a claim without status capacity counts as
// 0: kubelet expands to the PV's capacity.
TEST_F(KubeletAfterMountTest, ExpandsWithTheGlobalmountForADriverThatDoesNotStage) {
  Objects({{"pv.yaml", Sized("2Gi", "")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),  // MountDevice: does it stage? no
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  absl::StrCat("NodePublishVolume volume_id: \"vol-1\" target_path: \"", kPvTarget,
                               "\" volume_capability { mount { fs_type: \"ext4\" mount_flags: "
                               "\"noatime\" } access_mode { mode: SINGLE_NODE_WRITER } } "
                               "volume_context { key: \"tier\" value: \"gold\" }"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),  // the access-mode mapper's
                  kExpand2Gi,
              }));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"],
            json::parse(R"({"phase": "Bound", "capacity": {"storage": "2Gi"}})"));
}

// legacyCallNodeExpandOnPlugin returns NodeExpand's error: a driver without EXPAND_VOLUME fails
// the mount ("MountVolume.Setup failed while expanding volume"). The volume was published; the
// pod cannot start with it, so it is unpublished and unstaged again, as kubelet does once the pod
// is deleted. The claim had no status capacity: the error says why kubelet tried.
TEST_F(KubeletAfterMountTest, WithoutExpandVolumeTheMountFailsAndIsUndone) {
  Objects({{"pv.yaml", Sized("2Gi", "")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 1) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray(Plus(StagedPublishCalls(),
                                    {"NodeGetCapabilities",
                                     absl::StrCat("NodeUnpublishVolume volume_id: \"vol-1\" "
                                                  "target_path: \"",
                                                  kPvTarget, "\""),
                                     "NodeGetCapabilities",  // UnmountDevice: does it stage?
                                     absl::StrCat("NodeUnstageVolume volume_id: \"vol-1\" "
                                                  "staging_target_path: \"",
                                                  kStagingPath, "\"")})));
  const std::string result = report["volumes"][0]["result"];
  EXPECT_THAT(result, HasSubstr("MountVolume.Setup failed while expanding volume for volume "
                                "\"pv-1\" : Expander.NodeExpand found CSI plugin "
                                "kubernetes.io/csi/rec.csi.example.com to not support node "
                                "expansion"));
  EXPECT_THAT(result, HasSubstr("has no status.capacity.storage, which it reads as 0"));
  EXPECT_THAT(log, HasSubstr("volume \"data\": MountVolume.Setup failed while expanding volume"));
  EXPECT_FALSE(report["volumes"][0].contains("claimStatus"));
  EXPECT_THAT(Files(), ElementsAreArray(TornDownFiles()));
}

// expandVolumeDuringMount: a read-only volume is not expanded (a FileSystemResizeFailed warning)
// and mounts as it is.
TEST_F(KubeletAfterMountTest, ReadOnlyClaimIsMountedUnexpanded) {
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .expand = true});
  std::string log;
  json report;
  const std::string pod = PodYaml(
      "db", "uid-a", "{name: data, persistentVolumeClaim: {claimName: data, readOnly: true}}");
  ASSERT_EQ(RunReport("publish", pod, &log, &report), 0) << log;
  std::vector<std::string> methods = driver_.TakeMethods();
  EXPECT_EQ(methods.back(), "NodePublishVolume");  // no EXPAND_VOLUME question, no expansion
  EXPECT_THAT(report["volumes"][0]["notes"].dump(), HasSubstr("requested read-only file system"));
  EXPECT_FALSE(report["volumes"][0].contains("claimStatus"));
}

// FAILED_PRECONDITION from NodeExpandVolume (inUseError): kubelet marks the volume and does not
// fail the mount; the claim's status is not written.
TEST_F(KubeletAfterMountTest, FailedPreconditionDoesNotFailTheMount) {
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure(
      {.stage = true,
       .expand = true,
       .fail = {{"NodeExpandVolume",
                 grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not while in use")}}});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 0) << log;
  EXPECT_THAT(driver_.TakeMethods().back(), "NodeExpandVolume");
  EXPECT_EQ(report["volumes"][0]["result"], "published");
  EXPECT_THAT(report["volumes"][0]["notes"].dump(),
              HasSubstr("Expander.NodeExpand failed to expand the volume : NodeExpandVolume: rpc "
                        "error: code = FailedPrecondition desc = not while in use"));
  EXPECT_THAT(report["volumes"][0]["notes"].dump(), HasSubstr("MarkForInUseExpansionError"));
  EXPECT_FALSE(report["volumes"][0].contains("claimStatus"));
  EXPECT_THAT(Files(), ElementsAreArray(PublishedPvFiles()));
}

// expander.go: the nodeExpandSecretRef's data with CSINodeExpandSecret (on by default now; alpha
// and off in v1.26), redacted in the report; none with the gate off.
TEST_F(KubeletAfterMountTest, ExpandSecretFollowsItsGate) {
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi,
                             "    nodeExpandSecretRef: {name: grow, namespace: shop}\n")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")},
           {"secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: grow, namespace: shop}\n"
            "data: {key: czNjcmV0}\n"}});
  driver_.Configure({.expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take().back(),
              HasSubstr("secrets { key: \"key\" value: \"s3cret\" }"));
  EXPECT_THAT(report.dump(), Not(HasSubstr("s3cret")));
  EXPECT_THAT(report.dump(), HasSubstr("(redacted)"));
  ASSERT_EQ(Run("unpublish", pod_, &log), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("publish", pod_, &log, &report, {"--feature-gates=CSINodeExpandSecret=false"}),
            0)
      << log;
  EXPECT_THAT(driver_.Take().back(), Not(HasSubstr("secrets")));
}

// GenerateExpandInUseVolumeFunc: the PV grew while the pod uses the volume. The same request as
// at mount; the claim's new status. Then nothing left to do: nothing sent.
TEST_F(KubeletAfterMountTest, OnlineExpansionOfAPublishedVolume) {
  Objects({{"pv.yaml", Sized("1Gi", kClaimAt1Gi)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take(), ElementsAreArray(StagedPublishCalls()));  // nothing to expand
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data"}), 0) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({std::string("NodeGetInfo"), std::string("NodeGetCapabilities"),
                                std::string("NodeGetCapabilities"), kExpand2Gi}));
  EXPECT_EQ(report["volumes"][0]["result"], "expanded to 2Gi");
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["capacity"]["storage"], "2Gi");
  // The claim as the report says kubelet left it: nothing to expand.
  Objects({{"pv.yaml", Sized("2Gi", ", capacity: {storage: 2Gi}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data"}), 0) << log;
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
  EXPECT_THAT(report["volumes"][0]["result"].get<std::string>(),
              HasSubstr("not expanded: the claim's status capacity (2Gi) is not below the PV's "
                        "capacity (2Gi)"));
}

// Expansion recovery (RecoverVolumeExpansionFailure, on from 1.32; GA 1.34): the size sent is
// the claim's status.allocatedResources, not the PV's capacity, and only while the resizer left
// NodeResizePending; kubelet patches the claim as it goes (v1.37.2 operation_generator.go
// nodeExpandVolume, checkForRecoveryFromExpansion; node_expander.go; resize_util.go). 1.30
// (gate off, alpha) expands to the PV's capacity as 1.26 did; 1.31's newest patch takes the
// recovery path whenever the resizer wrote the fields.
TEST_F(KubeletAfterMountTest, ExpansionRecoveryByRelease) {
  Objects({{"pv.yaml", Sized("1Gi", ", capacity: {storage: 1Gi}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod_, &log, &report, {"--kubelet-version=1.37"}), 0) << log;
  driver_.Take();
  auto required_bytes = [&]() {
    std::vector<std::string> sizes;
    for (const std::string& call : driver_.Take()) {
      const size_t at = call.find("required_bytes: ");
      if (at != std::string::npos) sizes.push_back(call.substr(at + 16, call.find(' ', at + 16) - at - 16));
    }
    return sizes;
  };
  // The resizer asked the controller for 3Gi, the PV says 2Gi (a recovery that lowered it).
  const std::string pending =
      ", capacity: {storage: 1Gi}, allocatedResources: {storage: 3Gi}, "
      "allocatedResourceStatuses: {storage: NodeResizePending}, conditions: [{type: "
      "FileSystemResizePending, status: 'True'}, {type: Example, status: 'True'}]";
  Objects({{"pv.yaml", Sized("2Gi", pending, "", false, "", "[ReadWriteOnce]")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  for (const char* release : {"1.37", "1.32"}) {
    SCOPED_TRACE(release);
    ASSERT_EQ(RunReport("expand", pod_, &log, &report,
                        {"--volume=data", absl::StrCat("--kubelet-version=", release)}),
              0)
        << log;
    EXPECT_THAT(required_bytes(), ElementsAreArray({"3221225472"}));
    EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"],
              json::parse(R"({"phase": "Bound", "capacity": {"storage": "3Gi"},
                              "allocatedResourceStatuses": {},
                              "conditions": [{"type": "Example", "status": "True"}]})"));
    EXPECT_EQ(report["volumes"][0]["claimStatus"]["patches"],
              json::parse(R"(["allocatedResourceStatuses.storage: NodeResizeInProgress",
                              "capacity 3Gi, allocatedResourceStatuses.storage removed"])"));
  }
  // 1.31's newest patch takes the recovery path (its claim patches) but with the PV's size, as
  // 1.30 (the legacy path) does: the size from allocatedResources came in 1.32 (v1.31.14 and
  // v1.32.2 operation_generator.go nodeExpandVolume; the goldens of scenario b measure it).
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data", "--kubelet-version=1.31"}),
            0)
      << log;
  EXPECT_THAT(required_bytes(), ElementsAreArray({"2147483648"}));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["patches"],
            json::parse(R"(["allocatedResourceStatuses.storage: NodeResizeInProgress",
                            "capacity 2Gi, allocatedResourceStatuses.storage removed"])"));
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data", "--kubelet-version=1.30"}),
            0)
      << log;
  EXPECT_THAT(required_bytes(), ElementsAreArray({"2147483648"}));
  // The resizer has not handed it to the node yet: no call.
  Objects({{"pv.yaml",
            Sized("2Gi",
                  ", capacity: {storage: 1Gi}, allocatedResources: {storage: 2Gi}, "
                  "allocatedResourceStatuses: {storage: ControllerResizeInProgress}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data", "--kubelet-version=1.37"}),
            0)
      << log;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));
  EXPECT_THAT(report["volumes"][0]["result"].get<std::string>(),
              HasSubstr("NodeExpandVolume is not allowed to proceed for volume pv-1 with "
                        "resizeStatus ControllerResizeInProgress"));
  // OUT_OF_RANGE is infeasible from 1.31: the claim says so, and the expansion fails.
  Objects({{"pv.yaml", Sized("2Gi", pending)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  Config config{.stage = true, .expand = true};
  config.fail["NodeExpandVolume"] = grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "too big");
  driver_.Configure(config);
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data", "--kubelet-version=1.37"}),
            1)
      << log;
  EXPECT_THAT(log, HasSubstr("Expander.NodeExpand failed to expand the volume NodeExpandVolume: "
                             "rpc error: code = OutOfRange desc = too big"));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["allocatedResourceStatuses"],
            json::parse(R"({"storage": "NodeResizeInfeasible"})"));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["conditions"][2]["type"],
            "NodeResizeError");
  driver_.Take();
  // A failure before the call (the expand secret is missing) is not the driver's: no
  // NodeResizeInfeasible, only the NodeResizeError condition (csi/expander.go: a plain error).
  Objects({{"pv.yaml", Sized("2Gi", pending, "    nodeExpandSecretRef: {name: nope, namespace: shop}\n")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .expand = true});
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data", "--kubelet-version=1.37"}),
            1)
      << log;
  EXPECT_THAT(driver_.TakeMethods(), ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities"}));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["allocatedResourceStatuses"],
            json::parse(R"({"storage": "NodeResizeInProgress"})"));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["conditions"][2]["type"],
            "NodeResizeError");
  // 1.26 to 1.30's alpha recovery path is not modelled: the gate is refused there.
  ASSERT_EQ(RunReport("expand", pod_, &log, &report,
                      {"--volume=data", "--kubelet-version=1.30",
                       "--feature-gates=RecoverVolumeExpansionFailure=true"}),
            1)
      << log;
  EXPECT_THAT(log, HasSubstr("RecoverVolumeExpansionFailure=true at kubelet 1.30: kubeletclient "
                             "models the expansion-recovery path of kubelet 1.31 and later only"));
}

// A block volume: the publish path as volume path, the block staging path, a Block capability.
TEST_F(KubeletAfterMountTest, OnlineExpansionOfABlockVolume) {
  Objects({{"pv.yaml", Sized("1Gi", kClaimAt1Gi, "", /*block=*/true)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.expand = true});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume, "", /*block=*/true);
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod, &log, &report), 0) << log;
  driver_.Take();
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi, "", /*block=*/true)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  ASSERT_EQ(RunReport("expand", pod, &log, &report, {"--volume=data"}), 0) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({
                  std::string("NodeGetInfo"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeGetCapabilities"),
                  std::string("NodeExpandVolume volume_id: \"vol-1\" volume_path: "
                              "\"<root>/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/"
                              "uid-a\" capacity_range { required_bytes: 2147483648 } "
                              "staging_target_path: \"<root>/plugins/kubernetes.io/csi/"
                              "volumeDevices/staging/pv-1\" volume_capability { block { } "
                              "access_mode { mode: SINGLE_NODE_WRITER } }"),
              }));
  EXPECT_EQ(report["volumes"][0]["claimStatus"]["status"]["capacity"]["storage"], "2Gi");
}

// What expand refuses before anything is sent: a volume that is not published, a claim that
// asks for less than it has, an inline volume, a name the pod does not have.
TEST_F(KubeletAfterMountTest, ExpandRefusesBeforeSendingAnything) {
  Objects({{"pv.yaml", Sized("2Gi", kClaimAt1Gi)},
           {"csidriver.yaml",
            CsiDriverYaml("{attachRequired: false, volumeLifecycleModes: [Persistent, "
                          "Ephemeral]}")}});
  driver_.Configure({.expand = true});
  std::string log;
  json report;
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data"}), 1) << log;
  EXPECT_THAT(log, HasSubstr("volume \"data\" is not published for this pod on this node"));
  EXPECT_THAT(log, HasSubstr("nothing was expanded"));
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));

  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=nope"}), 1) << log;
  EXPECT_THAT(log, HasSubstr("the pod has no volume \"nope\" (it has [data])"));

  const std::string inline_pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com}}");
  ASSERT_EQ(Run("publish", inline_pod, &log), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("expand", inline_pod, &log, &report, {"--volume=scratch"}), 1) << log;
  EXPECT_THAT(log, HasSubstr("is an inline CSI volume: kubelet expands only volumes of "
                             "PersistentVolumes"));
  ASSERT_EQ(Run("unpublish", inline_pod, &log), 0) << log;

  // A claim asking for 1Gi that has 2Gi: a shrink, which Kubernetes never does.
  Objects({{"pv.yaml", Sized("3Gi", ", capacity: {storage: 2Gi}", "", false,
                             ", resources: {requests: {storage: 1Gi}}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  ASSERT_EQ(Run("publish", pod_, &log), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("expand", pod_, &log, &report, {"--volume=data"}), 1) << log;
  EXPECT_THAT(log, HasSubstr("claim shop/data asks for 1Gi (spec.resources.requests.storage) "
                             "but has 2Gi (status.capacity.storage)"));
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
}

csi::v1::NodeGetVolumeStatsResponse StatsAnswer(bool abnormal) {
  csi::v1::NodeGetVolumeStatsResponse answer;
  csi::v1::VolumeUsage* bytes = answer.add_usage();
  bytes->set_unit(csi::v1::VolumeUsage::BYTES);
  bytes->set_total(2147483648);
  bytes->set_used(1073741824);
  bytes->set_available(1073741824);
  csi::v1::VolumeUsage* inodes = answer.add_usage();
  inodes->set_unit(csi::v1::VolumeUsage::INODES);
  inodes->set_total(131072);
  inodes->set_used(12);
  inodes->set_available(131060);
  answer.mutable_volume_condition()->set_abnormal(abnormal);
  answer.mutable_volume_condition()->set_message(abnormal ? "disk is failing" : "fine");
  return answer;
}

// csi_metrics.go GetMetrics: GET_VOLUME_STATS, then NodeGetVolumeStats with the mount directory
// and no staging path. The condition only with CSIVolumeHealth (off by default), asked after the
// call; kubelet keeps `abnormal` and puts the message in a VolumeConditionAbnormal event.
TEST_F(KubeletAfterMountTest, StatsOfAFilesystemVolumeAndItsHealth) {
  Objects({{"pv.yaml", Sized("2Gi", ", capacity: {storage: 2Gi}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stage = true, .stats = true, .condition = true,
                     .stats_response = StatsAnswer(/*abnormal=*/true)});
  std::string log;
  json report;
  ASSERT_EQ(Run("publish", pod_, &log), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("stats", pod_, &log, &report), 0) << log;
  const std::string stats_call =
      absl::StrCat("NodeGetVolumeStats volume_id: \"vol-1\" volume_path: \"", kPvTarget, "\"");
  EXPECT_THAT(driver_.Take(), ElementsAreArray({std::string("NodeGetInfo"),
                                                std::string("NodeGetCapabilities"), stats_call}));
  json volume = report["volumes"][0];
  EXPECT_EQ(volume["capacity"], 2147483648);
  EXPECT_EQ(volume["used"], 1073741824);
  EXPECT_EQ(volume["available"], 1073741824);
  EXPECT_EQ(volume["inodes"], 131072);
  EXPECT_EQ(volume["inodesUsed"], 12);
  EXPECT_EQ(volume["inodesFree"], 131060);
  EXPECT_FALSE(volume.contains("abnormal"));  // CSIVolumeHealth is off
  ASSERT_EQ(RunReport("stats", pod_, &log, &report, {"--feature-gates=CSIVolumeHealth=true"}), 0)
      << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({std::string("NodeGetInfo"), std::string("NodeGetCapabilities"),
                                stats_call, std::string("NodeGetCapabilities")}));
  volume = report["volumes"][0];
  EXPECT_EQ(volume["abnormal"], true);
  EXPECT_EQ(volume["message"], "disk is failing");
  EXPECT_EQ(volume["event"], "Warning VolumeConditionAbnormal: Volume data: disk is failing");
}

// kubelet 1.37 reads no volume condition from NodeGetVolumeStats; with CSIVolumeHealth its
// volume health manager asks NodeGetVolumeHealth of each mounted PersistentVolume, with the
// device mount path and the mounter's path, and NodeGetStorageHealth of each driver
// (pkg/kubelet/volumemanager/volumehealth/manager.go, cache/volume_health.go,
// pkg/volume/csi/csi_client.go mapVolumeHealthConditions, mapStorageBackendHealth, v1.37.2).
TEST_F(KubeletAfterMountTest, StatsAndHealthAtKubelet137) {
  Objects({{"pv.yaml", Sized("2Gi", ", capacity: {storage: 2Gi}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  Config config{.stage = true, .stats = true, .condition = true,
                .stats_response = StatsAnswer(/*abnormal=*/true)};
  config.volume_health = true;
  config.storage_health = true;
  auto* entry = config.volume_health_response.mutable_volume_health()->add_health_statuses();
  entry->set_status(csi::v1::DEGRADED);
  entry->set_reason("SlowDisk");
  entry->set_message("one path of two");
  config.volume_health_response.mutable_volume_health()->add_health_statuses()->set_reason(
      "FutureKind");  // UNKNOWN status: kubelet drops it
  auto* backend = config.storage_health_response.add_backend_health();
  backend->set_status(csi::v1::STORAGE_UNREACHABLE);
  backend->set_reason("ArrayDown");
  backend->mutable_volume_capability()->mutable_block();
  backend->mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_SINGLE_WRITER);
  driver_.Configure(config);
  std::string log;
  json report;
  ASSERT_EQ(Run("publish", pod_, &log, {"--kubelet-version=1.37"}), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("stats", pod_, &log, &report,
                      {"--kubelet-version=1.37", "--feature-gates=CSIVolumeHealth=true"}),
            0)
      << log;
  EXPECT_THAT(
      driver_.Take(),
      ElementsAreArray({
          std::string("NodeGetInfo"), std::string("NodeGetCapabilities"),
          absl::StrCat("NodeGetVolumeStats volume_id: \"vol-1\" volume_path: \"", kPvTarget, "\""),
          std::string("NodeGetCapabilities"),
          absl::StrCat("NodeGetVolumeHealth volume_id: \"vol-1\" volume_publish_path: \"",
                       kPvTarget, "\" staging_target_path: \"", kStagingPath, "\""),
          std::string("NodeGetCapabilities"), std::string("NodeGetStorageHealth"),
      }));
  json volume = report["volumes"][0];
  EXPECT_FALSE(volume.contains("abnormal"));
  EXPECT_THAT(volume["condition"].get<std::string>(), HasSubstr("not read: kubelet 1.37"));
  EXPECT_EQ(report["podStatus"], json::parse(R"({"volumeHealth": [{"name": "data",
      "healthConditions": [{"status": "Degraded", "reason": "SlowDisk",
                            "message": "one path of two"}]}]})"));
  EXPECT_EQ(report["storageHealthProbes"][0]["storageHealth"], json::parse(R"({"csiNodeStatus":
      {"storageHealth": [{"name": "rec.csi.example.com", "healthConditions": [{"status":
      "StorageUnreachable", "reason": "ArrayDown", "accessMode": "ReadWriteOncePod",
      "volumeMode": "Block"}]}]}})"));
  // Healthy answers: the status writers change nothing, from a pod and a CSINode without health
  // (status_manager.go SetPodVolumeHealth, nodeinfomanager.go tryUpdateCSINodeStorageHealth).
  config.volume_health_response.mutable_volume_health()->clear_health_statuses();
  config.storage_health_response.clear_backend_health();
  driver_.Configure(config);
  ASSERT_EQ(RunReport("stats", pod_, &log, &report,
                      {"--kubelet-version=1.37", "--feature-gates=CSIVolumeHealth=true"}),
            0)
      << log;
  driver_.Take();
  EXPECT_EQ(report["volumes"][0]["volumeHealth"], "healthy: no adverse condition");
  EXPECT_THAT(report["volumes"][0]["podStatusWrite"].get<std::string>(), HasSubstr("not written"));
  EXPECT_EQ(report["podStatus"], json::parse(R"({"volumeHealth": []})"));
  EXPECT_EQ(report["storageHealthProbes"][0]["storageHealth"],
            json::parse(R"({"csiNodeStatus": {}})"));
  // The pod's status says what the last round wrote. Healthy again: the entry stays, without
  // conditions; another volume's entry is left alone.
  const std::string was_degraded = pod_ + R"(status:
  volumeHealth:
  - name: data
    healthConditions: [{status: Degraded, reason: SlowDisk, message: one path of two}]
  - {name: other, healthConditions: [{status: Inaccessible, reason: Gone}]}
)";
  ASSERT_EQ(RunReport("stats", was_degraded, &log, &report,
                      {"--kubelet-version=1.37", "--feature-gates=CSIVolumeHealth=true"}),
            0)
      << log;
  driver_.Take();
  EXPECT_EQ(report["volumes"][0]["podStatusWrite"], "written into the pod's status.volumeHealth");
  EXPECT_EQ(report["podStatus"], json::parse(R"({"volumeHealth": [{"name": "data"},
      {"name": "other", "healthConditions": [{"status": "Inaccessible", "reason": "Gone"}]}]})"));
  // Degraded again with another message: the same status and reason, nothing written, and the
  // status keeps the old message.
  entry = config.volume_health_response.mutable_volume_health()->add_health_statuses();
  entry->set_status(csi::v1::DEGRADED);
  entry->set_reason("SlowDisk");
  entry->set_message("both paths slow");
  driver_.Configure(config);
  ASSERT_EQ(RunReport("stats", was_degraded, &log, &report,
                      {"--kubelet-version=1.37", "--feature-gates=CSIVolumeHealth=true"}),
            0)
      << log;
  driver_.Take();
  EXPECT_THAT(report["volumes"][0]["podStatusWrite"].get<std::string>(), HasSubstr("not written"));
  EXPECT_EQ(report["podStatus"]["volumeHealth"][0]["healthConditions"][0]["message"],
            "one path of two");
  // 1.36: the condition as before, no health RPCs.
  ASSERT_EQ(RunReport("stats", pod_, &log, &report,
                      {"--kubelet-version=1.36", "--feature-gates=CSIVolumeHealth=true"}),
            0)
      << log;
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetVolumeStats",
                                "NodeGetCapabilities"}));
  EXPECT_EQ(report["volumes"][0]["abnormal"], true);
  EXPECT_FALSE(report.contains("podStatus"));
  // 1.37 without the gate: stats only.
  ASSERT_EQ(RunReport("stats", pod_, &log, &report, {"--kubelet-version=1.37"}), 0) << log;
  EXPECT_THAT(driver_.TakeMethods(),
              ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities", "NodeGetVolumeStats"}));
}

// The Prometheus families kubelet exports, exactly, and read back by the Prometheus client's own
// text parser (Debian's python3-prometheus-client).
TEST_F(KubeletAfterMountTest, StatsAsKubeletsPrometheusFamilies) {
  Objects({{"pv.yaml", Sized("2Gi", ", capacity: {storage: 2Gi}")},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure(
      {.stats = true, .condition = true, .stats_response = StatsAnswer(/*abnormal=*/false)});
  std::string log, text;
  json report;
  ASSERT_EQ(Run("publish", pod_, &log), 0) << log;
  ASSERT_EQ(RunReport("stats", pod_, &log, &report,
                      {"--format=prometheus", "--feature-gates=CSIVolumeHealth=true"}, &text),
            0)
      << log;
  const std::string labels = "{namespace=\"shop\",persistentvolumeclaim=\"data\"}";
  EXPECT_EQ(text, absl::StrCat(
      "# HELP kubelet_volume_stats_available_bytes [ALPHA] Number of available bytes in the "
      "volume\n# TYPE kubelet_volume_stats_available_bytes gauge\n"
      "kubelet_volume_stats_available_bytes", labels, " 1.073741824e+09\n"
      "# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume\n"
      "# TYPE kubelet_volume_stats_capacity_bytes gauge\n"
      "kubelet_volume_stats_capacity_bytes", labels, " 2.147483648e+09\n"
      "# HELP kubelet_volume_stats_health_status_abnormal [ALPHA] Abnormal volume health status. "
      "The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is "
      "healthy\n# TYPE kubelet_volume_stats_health_status_abnormal gauge\n"
      "kubelet_volume_stats_health_status_abnormal", labels, " 0\n"
      "# HELP kubelet_volume_stats_inodes [ALPHA] Maximum number of inodes in the volume\n"
      "# TYPE kubelet_volume_stats_inodes gauge\n"
      "kubelet_volume_stats_inodes", labels, " 131072\n"
      "# HELP kubelet_volume_stats_inodes_free [ALPHA] Number of free inodes in the volume\n"
      "# TYPE kubelet_volume_stats_inodes_free gauge\n"
      "kubelet_volume_stats_inodes_free", labels, " 131060\n"
      "# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume\n"
      "# TYPE kubelet_volume_stats_inodes_used gauge\n"
      "kubelet_volume_stats_inodes_used", labels, " 12\n"
      "# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume\n"
      "# TYPE kubelet_volume_stats_used_bytes gauge\n"
      "kubelet_volume_stats_used_bytes", labels, " 1.073741824e+09\n"));
  // The Prometheus client's parser reads it back: every family a gauge, every value as sent.
  const std::string file = dir_.Join("metrics.txt");
  ASSERT_TRUE(::ndr::testing::WriteFile(file, text));
  Subprocess parse({"/usr/bin/python3", "-c", R"(
import sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for sample in family.samples:
        print(family.type, sample.name, sample.labels["namespace"],
              sample.labels["persistentvolumeclaim"], int(sample.value))
)", file},
                   dir_.Join("parse.log"));
  ASSERT_EQ(parse.Wait(), 0) << parse.Log();
  EXPECT_EQ(parse.Log(),
            "gauge kubelet_volume_stats_available_bytes shop data 1073741824\n"
            "gauge kubelet_volume_stats_capacity_bytes shop data 2147483648\n"
            "gauge kubelet_volume_stats_health_status_abnormal shop data 0\n"
            "gauge kubelet_volume_stats_inodes shop data 131072\n"
            "gauge kubelet_volume_stats_inodes_free shop data 131060\n"
            "gauge kubelet_volume_stats_inodes_used shop data 12\n"
            "gauge kubelet_volume_stats_used_bytes shop data 1073741824\n");
}

// csi_plugin.go NewBlockVolumeMapper: a block volume's metrics path is
// volumeDevices/<pv>/dev/<pod uid>. A driver without GET_VOLUME_STATS has no metrics: skipped,
// not an error.
TEST_F(KubeletAfterMountTest, StatsOfABlockVolumeAndOfADriverWithout) {
  Objects({{"pv.yaml", Sized("2Gi", ", capacity: {storage: 2Gi}", "", /*block=*/true)},
           {"csidriver.yaml", CsiDriverYaml("{attachRequired: false}")}});
  driver_.Configure({.stats = true, .stats_response = StatsAnswer(false)});
  const std::string pod = PodYaml("db", "uid-a", kClaimVolume, "", /*block=*/true);
  std::string log;
  json report;
  ASSERT_EQ(Run("publish", pod, &log), 0) << log;
  driver_.Take();
  ASSERT_EQ(RunReport("stats", pod, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take(),
              ElementsAreArray({std::string("NodeGetInfo"), std::string("NodeGetCapabilities"),
                                std::string("NodeGetVolumeStats volume_id: \"vol-1\" volume_path: "
                                            "\"<root>/plugins/kubernetes.io/csi/volumeDevices/"
                                            "pv-1/dev/uid-a\"")}));
  driver_.Configure({});
  ASSERT_EQ(RunReport("stats", pod, &log, &report), 0) << log;
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities"}));
  EXPECT_THAT(report["volumes"][0]["skipped"].get<std::string>(),
              HasSubstr("metrics are not supported for rec.csi.example.com volumes"));
}

// Each token of `tokens` (the volume context's value) verified by Debian's python3-jwt, an
// implementation independent of ours, against `kubeletclient jwks`'s document; its claims.
json VerifyWithPyJwt(const std::string& jwks_file, const std::string& token,
                     const std::string& audience, const std::string& dir) {
  Subprocess verify({"/usr/bin/python3", "-c", R"(
import json, sys, jwt
jwks, token, audience = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
header = jwt.get_unverified_header(token)
key = [k for k in jwt.PyJWKSet.from_dict(jwks).keys if k.key_id == header["kid"]][0]
print(json.dumps(jwt.decode(token, key.key, algorithms=[header["alg"]], audience=audience,
                            issuer="https://kubernetes.default.svc.cluster.local")))
)", jwks_file, token, audience},
                    absl::StrCat(dir, "/pyjwt-", audience.size(), ".log"));
  EXPECT_EQ(verify.Wait(), 0) << verify.Log();
  json claims = json::parse(verify.Log(), nullptr, false);
  EXPECT_TRUE(claims.is_object()) << "python3-jwt said: " << verify.Log();
  return claims;
}

// podServiceAccountTokenAttrs: one token per tokenRequest, bound to the pod, in the volume
// context as {audience: {token, expirationTimestamp}}; no audience is the API server's own
// (the issuer); no expirationSeconds is 3600. Each token verifies with python3-jwt against the
// JWKS `kubeletclient jwks` prints. The report and the log never show a token.
TEST_F(KubeletAfterMountTest, TokensForTwoAudiencesWithTheDefaultExpiration) {
  const std::string key_file = dir_.Join("sa.key");
  ASSERT_TRUE(::ndr::testing::WriteFile(key_file, token::NewKeyPem("RSA")));
  Objects({{"csidriver.yaml",
            CsiDriverYaml("{volumeLifecycleModes: [Ephemeral], tokenRequests: [{audience: vault, "
                          "expirationSeconds: 7200}, {audience: ''}]}")},
           {"sa.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: shop, "
            "uid: sa-uid-1}\n"}});
  const std::string pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com}}");
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod, &log, &report,
                      {"--service-account-key-file=" + key_file}),
            0)
      << log;
  std::vector<std::string> calls = driver_.Take();
  EXPECT_THAT(calls.back(), HasSubstr("volume_context { key: "
                                      "\"csi.storage.k8s.io/serviceAccount.tokens\" value: "
                                      "\"<tokens>\" }"));
  std::vector<std::string> tokens = driver_.TakeTokens();
  ASSERT_EQ(tokens.size(), 1u);
  const json attr = json::parse(tokens[0]);
  ASSERT_EQ(attr.size(), 2u);
  // JWKS from the command, to a file python reads.
  std::string jwks_text;
  Subprocess jwks({Runfile("kubeletclient/kubeletclient"), "jwks",
                   "--service-account-key-file=" + key_file},
                  dir_.Join("jwks.log"), dir_.Join("jwks.json"));
  ASSERT_EQ(jwks.Wait(), 0) << jwks.Log();
  for (const auto& [audience, seconds] :
       {std::pair{std::string("vault"), 7200}, std::pair{std::string(""), 3600}}) {
    SCOPED_TRACE(audience);
    ASSERT_TRUE(attr.contains(audience));
    const std::string token = attr[audience]["token"];
    const std::string aud = audience.empty() ? "https://kubernetes.default.svc.cluster.local"
                                             : audience;
    json claims = VerifyWithPyJwt(dir_.Join("jwks.json"), token, aud, dir_.path());
    ASSERT_TRUE(claims.is_object());
    EXPECT_EQ(claims["aud"], json::array({aud}));
    EXPECT_EQ(claims["sub"], "system:serviceaccount:shop:default");
    EXPECT_EQ(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>(), seconds);
    EXPECT_EQ(claims["nbf"], claims["iat"]);
    EXPECT_EQ(claims["kubernetes.io"],
              json::parse(R"({"namespace": "shop", "pod": {"name": "web", "uid": "uid-a"},
                              "serviceaccount": {"name": "default", "uid": "sa-uid-1"}})"));
    // expirationTimestamp is exp, as metav1.Time writes it.
    EXPECT_EQ(attr[audience]["expirationTimestamp"],
              absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                               absl::FromUnixSeconds(claims["exp"].get<int64_t>()),
                               absl::UTCTimeZone()));
    EXPECT_THAT(report.dump(), Not(HasSubstr(token.substr(0, 40))));
    EXPECT_THAT(log, Not(HasSubstr(token.substr(0, 40))));
  }
  EXPECT_THAT(report["volumes"][0]["notes"][0].get<std::string>(),
              HasSubstr("service-account token for audience \"vault\": requested, expires "));
  ASSERT_EQ(Run("unpublish", pod, &log), 0) << log;
}

// kubelet 1.35 reads the CSIDriver's serviceAccountTokenInSecrets: the tokens go in
// NodePublishVolume's secrets instead of its volume context (v1.35.4 pkg/volume/csi/
// csi_mounter.go SetUpAt, podServiceAccountTokenAttrs); 1.34 ignores the field.
TEST_F(KubeletAfterMountTest, TokensInSecretsFromKubelet135) {
  const std::string key_file = dir_.Join("sa.key");
  ASSERT_TRUE(::ndr::testing::WriteFile(key_file, token::NewKeyPem("RSA")));
  Objects({{"csidriver.yaml",
            CsiDriverYaml("{volumeLifecycleModes: [Ephemeral], tokenRequests: [{audience: vault}], "
                          "serviceAccountTokenInSecrets: true}")},
           {"sa.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: shop, "
            "uid: sa-uid-1}\n"}});
  const std::string pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com}}");
  const std::string in_context =
      "volume_context { key: \"csi.storage.k8s.io/serviceAccount.tokens\" value: \"<tokens>\" }";
  const std::string in_secrets =
      "secrets { key: \"csi.storage.k8s.io/serviceAccount.tokens\" value: \"<tokens>\" }";
  std::string log;
  for (const auto& [release, expect_in_secrets] :
       {std::pair{"1.34", false}, std::pair{"1.35", true}, std::pair{"1.37", true}}) {
    SCOPED_TRACE(release);
    json report;
    ASSERT_EQ(RunReport("publish", pod, &log, &report,
                        {"--service-account-key-file=" + key_file,
                         absl::StrCat("--kubelet-version=", release)}),
              0)
        << log;
    const std::string publish = driver_.Take().back();
    EXPECT_THAT(publish, HasSubstr(expect_in_secrets ? in_secrets : in_context));
    EXPECT_THAT(publish, Not(HasSubstr(expect_in_secrets ? in_context : in_secrets)));
    ASSERT_EQ(driver_.TakeTokens().size(), 1u);
    EXPECT_EQ(report["node"]["kubeletVersion"], release);
    ASSERT_EQ(Run("unpublish", pod, &log, {absl::StrCat("--kubelet-version=", release)}), 0)
        << log;
    driver_.Take();
  }
}

// Refused before anything is sent: a driver asking for tokens without a key to sign them, or
// for a service account that does not exist; a key file that is not a key.
TEST_F(KubeletAfterMountTest, TokensRefusedBeforeAnythingIsSent) {
  Objects({{"csidriver.yaml",
            CsiDriverYaml("{volumeLifecycleModes: [Ephemeral], tokenRequests: [{audience: vault}]}")}});
  const std::string pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com}}");
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod, &log, &report), 1) << log;
  EXPECT_THAT(log, HasSubstr("mounter.SetUpAt failed to get service accoount token attributes: "
                             "failed to fetch token: no service-account signing key"));
  EXPECT_THAT(log, HasSubstr("nothing was published"));
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
  const std::string key_file = dir_.Join("sa.key");
  ASSERT_TRUE(::ndr::testing::WriteFile(key_file, token::NewKeyPem("EC", "P-256")));
  ASSERT_EQ(RunReport("publish", pod, &log, &report, {"--service-account-key-file=" + key_file}),
            1)
      << log;
  EXPECT_THAT(log, HasSubstr("serviceaccounts \"default\" not found"));
  EXPECT_THAT(driver_.Take(), ElementsAreArray({"NodeGetInfo"}));
  const std::string bad_key = dir_.Join("bad.key");
  ASSERT_TRUE(::ndr::testing::WriteFile(bad_key, "hello\n"));
  ASSERT_EQ(RunReport("publish", pod, &log, &report, {"--service-account-key-file=" + bad_key}),
            1)
      << log;
  EXPECT_THAT(log, HasSubstr("service-account key file " + bad_key +
                             ": holds no PEM private key"));
  EXPECT_THAT(driver_.Take(), ::testing::IsEmpty());  // refused before any handshake
}

// CSIDriver validation (validateTokenRequests): duplicate audiences and too short or negative
// expirations are the API server's errors, and nothing is sent.
TEST_F(KubeletAfterMountTest, InvalidTokenRequestsAreRefused) {
  const std::string pod =
      PodYaml("web", "uid-a", "{name: scratch, csi: {driver: rec.csi.example.com}}");
  for (const auto& [spec, error] : std::vector<std::pair<std::string, std::string>>{
           {"[{audience: a}, {audience: a}]", "spec.tokenRequests[1].audience: Duplicate value: \"a\""},
           {"[{audience: a, expirationSeconds: 300}]",
            "spec.tokenRequests[0].expirationSeconds: Invalid value: 300: may not specify a "
            "duration less than 10 minutes"},
           {"[{audience: a, expirationSeconds: -1}]",
            "spec.tokenRequests[0].expirationSeconds: Invalid value: -1"}}) {
    SCOPED_TRACE(spec);
    Objects({{"csidriver.yaml", CsiDriverYaml("{volumeLifecycleModes: [Ephemeral], tokenRequests: " +
                                              spec + "}")}});
    std::string log;
    json report;
    ASSERT_EQ(RunReport("publish", pod, &log, &report), 1) << log;
    EXPECT_THAT(log, HasSubstr(error));
    EXPECT_THAT(driver_.Take(), ::testing::IsEmpty());
  }
}

// The reconciler's remount for a requiresRepublish driver, in a pod with another driver's inline
// volume, an emptyDir and a volume no container uses: only the first is published again (SetUp:
// no NodeStageVolume), the others are reported untouched or skipped. Tokens come from kubelet's
// cache: reused 25 minutes later (below 80% of 3600 s), fresh 50 minutes later.
TEST_F(KubeletAfterMountTest, RepublishOfAMixedPod) {
  RecordingDriver other(dir_.Join("other.sock"), root_);
  FakeRegistrar other_registrar(reg_ + "/other-reg.sock", dir_.Join("other.sock"),
                                "other.csi.example.com");
  const std::string key_file = dir_.Join("sa.key");
  ASSERT_TRUE(::ndr::testing::WriteFile(key_file, token::NewKeyPem("EC", "P-384")));
  Objects({{"csidriver.yaml",
            CsiDriverYaml("{volumeLifecycleModes: [Ephemeral], requiresRepublish: true, "
                          "tokenRequests: [{audience: vault, expirationSeconds: 3600}]}")},
           {"other.yaml",
            "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: "
            "other.csi.example.com}\nspec: {volumeLifecycleModes: [Ephemeral]}\n"},
           {"sa.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: shop}\n"}});
  const std::string pod = absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop, uid: uid-a}\nspec:\n"
      "  containers:\n  - name: app\n    image: busybox\n    volumeMounts: [{name: secrets, "
      "mountPath: /s}, {name: other, mountPath: /o}, {name: cache, mountPath: /c}]\n"
      "  volumes:\n  - {name: secrets, csi: {driver: rec.csi.example.com}}\n"
      "  - {name: other, csi: {driver: other.csi.example.com}}\n  - {name: cache, emptyDir: {}}\n"
      "  - {name: unused, csi: {driver: rec.csi.example.com}}\n");
  const std::vector<std::string> flags = {
      "--service-account-key-file=" + key_file,
      "--allowed-inline-drivers=rec.csi.example.com,other.csi.example.com"};
  std::string log;
  json report;
  ASSERT_EQ(RunReport("publish", pod, &log, &report, flags), 0) << log;
  driver_.Take();
  driver_.TakeTokens();
  other.Take();
  std::vector<std::string> republish = flags;
  republish.insert(republish.end(), {"--rounds=3", "--interval=25m"});
  ASSERT_EQ(RunReport("republish", pod, &log, &report, republish), 0) << log;
  // Three rounds of SetUp for the ephemeral volume: VOLUME_MOUNT_GROUP, the mapper, publish.
  std::vector<std::string> methods = driver_.TakeMethods();
  EXPECT_THAT(methods, ElementsAreArray({"NodeGetInfo", "NodeGetCapabilities",
                                         "NodeGetCapabilities", "NodePublishVolume",
                                         "NodeGetCapabilities", "NodeGetCapabilities",
                                         "NodePublishVolume", "NodeGetCapabilities",
                                         "NodeGetCapabilities", "NodePublishVolume"}));
  EXPECT_THAT(other.TakeMethods(), ElementsAreArray({"NodeGetInfo"}));  // untouched
  std::vector<std::string> tokens = driver_.TakeTokens();
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0], tokens[1]);  // 25 minutes: reused
  EXPECT_NE(tokens[1], tokens[2]);  // 50 minutes: past 80% of an hour, a new one
  ASSERT_EQ(report["rounds"].size(), 3u);
  const json& round = report["rounds"][1];
  EXPECT_EQ(round["volumes"][0]["result"], "republished");
  EXPECT_THAT(round["volumes"][0]["notes"].dump(), HasSubstr("reused from kubelet's token cache"));
  EXPECT_EQ(round["volumes"][1]["result"],
            "untouched: CSIDriver other.csi.example.com does not set requiresRepublish: kubelet "
            "mounts its volumes once");
  EXPECT_EQ(round["volumes"][2]["skipped"], "emptyDir: not a CSI volume");
  EXPECT_THAT(round["volumes"][3]["skipped"].get<std::string>(),
              HasSubstr("no container lists it in volumeMounts or volumeDevices"));
  ASSERT_EQ(Run("unpublish", pod, &log), 0) << log;
}

}  // namespace
}  // namespace ndr

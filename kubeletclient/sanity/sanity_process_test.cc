// `kubeletclient sanity` as a real process, judging the sample driver (registered by our
// registrar, on real sockets) as it is and broken on purpose (sample-csi-driver --faults): the
// sound driver passes every check that applies, each broken one fails exactly the checks that
// stand for what it breaks.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/token/test_keys.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::DirEntries;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kDriverName[] = "sample.csi.example.com";

// The checks of one run, by verdict: {"PASS": {...}, "FAIL": {...}, "SKIP": {...},
// "NOT JUDGED": {...}}.
std::map<std::string, std::set<std::string>> Verdicts(const std::string& output) {
  std::map<std::string, std::set<std::string>> verdicts;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    for (const char* word : {"PASS", "FAIL", "SKIP", "NOT JUDGED"}) {
      const std::string head = absl::StrCat(word, "  ");
      if (absl::StartsWith(line, head)) {
        absl::string_view rest = line.substr(head.size());
        verdicts[word].insert(std::string(rest.substr(0, rest.find(':'))));
      }
    }
  }
  return verdicts;
}

// Whether process `pid` is stopped (state T in /proc/PID/stat).
bool Stopped(pid_t pid) {
  std::string stat;
  if (!ReadFile(absl::StrCat("/proc/", pid, "/stat"), &stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

class SanityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& d : {csi_dir_, reg_dir_, root_}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  }

  // The sample driver with `driver_flags`, and our registrar with `registrar_flags`, registered
  // in reg_dir_.
  void StartDriver(std::vector<std::string> driver_flags,
                   std::vector<std::string> registrar_flags = {}) {
    std::vector<std::string> driver = {Runfile("test/csidriver/sample-csi-driver"),
                                       "--endpoint=" + csi_socket_, "--nodeid=node-1",
                                       "--topology=topology.sample.csi.example.com/zone=z1"};
    driver.insert(driver.end(), driver_flags.begin(), driver_flags.end());
    driver_ = std::make_unique<Subprocess>(driver, dir_.Join("driver.log"));
    std::vector<std::string> registrar = {
        Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi_socket_,
        "--kubelet-registration-path=" + csi_socket_, "--plugin-registration-path=" + reg_dir_};
    registrar.insert(registrar.end(), registrar_flags.begin(), registrar_flags.end());
    registrar_ = std::make_unique<Subprocess>(registrar, dir_.Join("registrar.log"));
    ASSERT_TRUE(PollUntil([&] {
      struct stat st;
      return stat(reg_socket_.c_str(), &st) == 0;
    })) << registrar_->Log();
  }

  std::vector<std::string> Argv(std::vector<std::string> extra) {
    // Block host operations are skipped, root or not, so that the verdicts are the same on every
    // machine; the handshake's deadlines are ones no busy machine reaches.
    std::vector<std::string> argv = {Runfile("kubeletclient/kubeletclient"),
                                     "sanity",
                                     "--registration-socket=" + reg_socket_,
                                     "--root-dir=" + root_,
                                     "--node-name=node-1",
                                     "--volume-handle=vol-1",
                                     "--block-host-ops=skip",
                                     "--get-info-timeout=60s",
                                     "--notify-timeout=60s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // Runs kubeletclient sanity; its exit code, and its output in `output`.
  int Run(std::vector<std::string> extra, std::string* output) {
    Subprocess run(Argv(std::move(extra)), dir_.Join(absl::StrCat("run", runs_++, ".log")));
    std::optional<int> code = run.Wait();
    *output = run.Log();
    return code.value_or(-1);
  }

  // What is left under the root directory: kubelet's own (empty) directories only.
  std::vector<std::string> LeftTargets() {
    std::vector<std::string> left;
    const std::string pods = root_ + "/pods";
    for (const std::string& uid : DirEntries(pods)) {
      for (const char* kind : {"/volumes/kubernetes.io~csi", "/volumeDevices/kubernetes.io~csi"}) {
        for (const std::string& volume : DirEntries(pods + "/" + uid + kind)) {
          left.push_back(absl::StrCat(uid, kind, "/", volume));
        }
      }
    }
    for (const std::string& pv :
         DirEntries(root_ + "/plugins/kubernetes.io/csi/volumeDevices/publish")) {
      for (const std::string& uid :
           DirEntries(root_ + "/plugins/kubernetes.io/csi/volumeDevices/publish/" + pv)) {
        left.push_back(absl::StrCat("volumeDevices/publish/", pv, "/", uid));
      }
    }
    return left;
  }

  TempDir dir_{"san"};
  const std::string csi_dir_ = dir_.Join("csi"), reg_dir_ = dir_.Join("reg");
  const std::string root_ = dir_.Join("root"), csi_socket_ = dir_.Join("csi/csi.sock");
  const std::string reg_socket_ = reg_dir_ + "/" + kDriverName + "-reg.sock";
  std::unique_ptr<Subprocess> driver_, registrar_;
  int runs_ = 0;
};

const std::set<std::string> kVolumeChecks = {
    "publish",          "target",    "tokens",
    "restart-replay",   "republish", "second-pod",
    "read-only",        "stats",     "volume-health",    "expand",
    "unpublish-twice",  "teardown",  "unpublish-removed-target",
    "unstage-repeated", "clean"};
const std::set<std::string> kEphemeralChecks = {
    "publish", "target", "restart-replay", "teardown", "unpublish-removed-target", "clean"};

// A CSIDriver that allows every kind of volume and asks for all there is: tokens, republish.
constexpr char kCsiDriver[] = R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
  tokenRequests: [{audience: vault}]
  requiresRepublish: true
)";

std::set<std::string> Named(const std::string& mode, std::set<std::string> checks) {
  std::set<std::string> names;
  for (const std::string& check : checks) names.insert(mode + "/" + check);
  return names;
}

// The sample driver, staging, with a CSIDriver that allows and asks for everything and the key
// to sign its tokens: every check applies and passes, but tokens for block volumes, which kubelet
// never sends.
TEST_F(SanityTest, TheSampleDriverPassesEveryCheck) {
  StartDriver({"--stage-unstage"});
  ASSERT_TRUE(WriteFile(dir_.Join("csidriver.yaml"), kCsiDriver));
  ASSERT_TRUE(WriteFile(dir_.Join("sa.key"), token::NewKeyPem("EC", "P-256")));
  const std::string junit = dir_.Join("junit.xml");
  std::string out;
  ASSERT_EQ(Run({"--junit=" + junit, "--objects=" + dir_.Join("csidriver.yaml"),
                 "--service-account-key-file=" + dir_.Join("sa.key")},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  std::set<std::string> passed = {"registration/handshake", "registration/node-info",
                                  "registration/capabilities", "registration/storage-health"};
  for (const auto& [prefix, checks] : std::vector<std::pair<std::string, std::set<std::string>>>{
           {"filesystem", kVolumeChecks},
           {"block", kVolumeChecks},
           {"inline", kEphemeralChecks},
           {"generic-ephemeral", kEphemeralChecks}}) {
    std::set<std::string> named = Named(prefix, checks);
    passed.insert(named.begin(), named.end());
  }
  passed.erase("block/tokens");
  // Without host changes (--block-host-ops=skip; and in Bazel's sandbox the driver cannot make a
  // device either) the block target is a plain file: whether kubelet could map it is not judged.
  // //kubeletclient/sanity:sanity_peers_test judges it as root.
  passed.erase("block/target");
  EXPECT_EQ(verdicts["PASS"], passed) << out;
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  EXPECT_THAT(verdicts["SKIP"], ElementsAre("block/target", "block/tokens")) << out;
  EXPECT_THAT(out, HasSubstr(absl::StrCat(passed.size(), " passed, 0 failed, 2 skipped (1 of them "
                                          "for want of host changes: --block-host-ops=skip)")));
  EXPECT_THAT(out, HasSubstr("no host changes (--block-host-ops=skip): kubelet's bind mounts"));
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/tokens: NodePublishVolume with tokens for [vault] "
                             "in its volume context accepted"));
  EXPECT_THAT(out, HasSubstr("PASS  inline/publish: NodePublishVolume\n"));
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/publish: NodeStageVolume, NodePublishVolume"));
  EXPECT_THAT(out, HasSubstr("SKIP  block/target: cannot be judged without host changes: target_path "));
  // The sample driver reports its directory's file system, not the 1 GiB of the PV: said.
  EXPECT_THAT(out, ::testing::ContainsRegex("PASS  filesystem/stats: capacity [0-9]+, .*\\(a CO "
                                            "shows this capacity for a volume of 1073741824 "
                                            "bytes: (more|less) than its PV's\\)\n"));
  EXPECT_THAT(LeftTargets(), IsEmpty());
  // The made-up pods' directories go with their volumes, as kubelet removes a deleted pod's.
  EXPECT_THAT(DirEntries(root_ + "/pods"), IsEmpty());
  // JUnit: a testcase per check.
  std::string xml;
  ASSERT_TRUE(ReadFile(junit, &xml));
  EXPECT_THAT(xml, HasSubstr(absl::StrCat("<testsuites tests=\"", passed.size() + 2,
                                          "\" failures=\"0\" errors=\"0\" skipped=\"2\" time=\"")));
  EXPECT_THAT(xml, ::testing::ContainsRegex("<testsuite name=\"kubeletclient sanity: "
                                            "sample.csi.example.com \\(kubelet 1\\.[0-9]+\\)\""));
  EXPECT_THAT(xml, ::testing::ContainsRegex("<testcase classname=\"sanity.block\" "
                                            "name=\"block/stats\" time=\"[0-9]+\\.[0-9]{3}\">"
                                            "</testcase>"));
  // Which build judged: first in the output, and the suite's property.
  EXPECT_THAT(out, ::testing::ContainsRegex("(^|\n)judge: kubeletclient [0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_THAT(xml, ::testing::ContainsRegex(
                       "<properties><property name=\"judge\" value=\"kubeletclient [0-9]+\\.[0-9]+"
                       "\\.[0-9]+[^\"]* \\(commit ([0-9a-f]{40}|unknown), built [-0-9T:Z]+\\)\"/>"
                       "</properties>"));
  // The XML declaration, the two suite elements open and closed, the properties, a line per check.
  EXPECT_EQ(std::count(xml.begin(), xml.end(), '\n'), static_cast<long>(passed.size()) + 2 + 6);
}

// No handle: the driver's Controller service creates each volume and attaches it (the sample
// driver with --controller stages and publishes its volumes only with that attachment's publish
// context), and detaches and deletes it at the end.
TEST_F(SanityTest, VolumesCreatedAndAttachedByTheDriversController) {
  StartDriver({"--stage-unstage", "--controller"});
  ASSERT_TRUE(WriteFile(
      dir_.Join("csidriver.yaml"),
      absl::StrReplaceAll(kCsiDriver, {{"attachRequired: false", "attachRequired: true"}})));
  ASSERT_TRUE(WriteFile(dir_.Join("sa.key"), token::NewKeyPem("EC", "P-256")));
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", "--objects=" + dir_.Join("csidriver.yaml"),
                 "--service-account-key-file=" + dir_.Join("sa.key")},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  std::set<std::string> passed = {"registration/handshake", "registration/node-info",
                                  "registration/capabilities", "registration/storage-health",
                                  "controller/capabilities"};
  std::set<std::string> controller = {"create-volume", "controller-publish", "controller-unpublish",
                                      "delete-volume"};
  for (const auto& [prefix, checks] : std::vector<std::pair<std::string, std::set<std::string>>>{
           {"filesystem", kVolumeChecks},
           {"block", kVolumeChecks},
           {"inline", kEphemeralChecks},
           {"generic-ephemeral", kEphemeralChecks},
           {"filesystem", controller},
           {"block", controller},
           {"generic-ephemeral", controller}}) {
    std::set<std::string> named = Named(prefix, checks);
    passed.insert(named.begin(), named.end());
  }
  passed.erase("block/tokens");
  passed.erase("block/target");  // not judged without host changes (see above)
  EXPECT_EQ(verdicts["PASS"], passed) << out;
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/controller-publish: attached to node ID node-1"));
}

// A Controller service on a socket of its own (--controller-address, as csi-sanity's
// --csi.controllerendpoint): the volumes are made there, the node calls go to the node plugin.
TEST_F(SanityTest, AControllerOnASocketOfItsOwn) {
  StartDriver({"--stage-unstage"});
  const std::string controller_socket = dir_.Join("csi/controller.sock");
  Subprocess controller({Runfile("test/csidriver/sample-csi-driver"),
                         "--endpoint=" + controller_socket, "--nodeid=node-1", "--controller",
                         "--v=4"},
                        dir_.Join("controller.log"));
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    return stat(controller_socket.c_str(), &st) == 0;
  })) << controller.Log();
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", "--volume-mode=filesystem",
                 "--controller-address=unix://" + controller_socket},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  for (const char* check : {"controller/capabilities", "filesystem/create-volume",
                            "filesystem/publish", "filesystem/delete-volume"}) {
    EXPECT_THAT(verdicts["PASS"], ::testing::Contains(check)) << out;
  }
  EXPECT_THAT(controller.Log(), HasSubstr("CreateVolume"));
  EXPECT_THAT(controller.Log(), ::testing::Not(HasSubstr("NodePublishVolume")));
  // The node plugin has no Controller service: create-volume passed only through the other.
  EXPECT_THAT(driver_->Log(), HasSubstr("NodePublishVolume"));
  // Not a unix socket: refused before anything is sent.
  EXPECT_EQ(Run({"--volume-handle=", "--controller-address=tcp://10.0.0.1:9000"}, &out), 1);
  EXPECT_THAT(out, HasSubstr("--controller-address"));
}

// The whole of `path` ("" if it cannot be read).
std::string FileText(const std::string& path) {
  std::string text;
  return ReadFile(path, &text) ? text : "";
}

// The lines of the sample driver's --record for `method`.
std::vector<std::string> Recorded(const std::string& record, const std::string& method) {
  std::ifstream in(record);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (absl::StrContains(line, absl::StrCat("\"method\":\"", method, "\""))) {
      lines.push_back(line);
    }
  }
  return lines;
}

// Volumes made from a StorageClass, as the external-provisioner makes them: its parameters
// without the reserved keys, the fsType in the capability, the accessibility requirements of
// allowedTopologies with the selected node's topology preferred, the provisioner's secret in
// CreateVolume and DeleteVolume, the node-stage secret by reference through the PV into
// NodeStageVolume, and a csi-sanity secrets file's NodePublishVolumeSecret into NodePublishVolume.
// Secret values never reach the report.
TEST_F(SanityTest, VolumesFromAStorageClassCarryItsParametersSecretsAndTopology) {
  const std::string record = dir_.Join("calls.jsonl");
  StartDriver({"--stage-unstage", "--controller", "--record=" + record});
  ASSERT_EQ(mkdir(dir_.Join("objects").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(dir_.Join("objects/driver.yaml"), R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec: {attachRequired: true}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: sample.csi.example.com
parameters:
  type: ssd
  csi.storage.k8s.io/fstype: ext4
  csi.storage.k8s.io/provisioner-secret-name: prov
  csi.storage.k8s.io/provisioner-secret-namespace: storage
  csi.storage.k8s.io/node-stage-secret-name: ${pvc.name}-stage
  csi.storage.k8s.io/node-stage-secret-namespace: storage
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.sample.csi.example.com/zone, values: [z0, z1]}
---
apiVersion: v1
kind: Secret
metadata: {name: prov, namespace: storage}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Secret
metadata: {name: sanity-fs-1-stage, namespace: storage}
stringData: {stagekey: s3cret-stage}
---
apiVersion: v1
kind: Secret
metadata: {name: sanity-e-data-stage, namespace: storage}
stringData: {stagekey: s3cret-stage}
)"));
  ASSERT_TRUE(WriteFile(dir_.Join("secrets.yaml"),
                        "NodePublishVolumeSecret:\n  publishkey: pub-value\n"
                        "CreateSnapshotSecret:\n  k: v\n"));
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", "--volume-mode=filesystem", "--only=^(filesystem|controller)/",
                 "--objects=" + dir_.Join("objects"), "--secrets-file=" + dir_.Join("secrets.yaml")},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  for (const char* check : {"filesystem/create-volume", "filesystem/controller-publish",
                            "filesystem/publish", "filesystem/expand",
                            "filesystem/delete-volume"}) {
    EXPECT_THAT(verdicts["PASS"], ::testing::Contains(check)) << out;
  }
  EXPECT_THAT(out, HasSubstr("StorageClass fast (WaitForFirstConsumer, reclaimPolicy Delete)"));
  EXPECT_THAT(out, HasSubstr("not used (the judge makes none of these calls): CreateSnapshotSecret"));
  // What was sent shows, secrets by their keys only.
  EXPECT_THAT(out, HasSubstr("request: CreateVolume {"));
  EXPECT_THAT(out, HasSubstr("\"password\":\"(redacted)\""));
  for (const char* value : {"hunter2", "s3cret-stage", "pub-value"}) {
    EXPECT_THAT(out, ::testing::Not(HasSubstr(value))) << value;
    EXPECT_THAT(FileText(record), ::testing::Not(HasSubstr(value))) << value;
  }
  // What the driver received.
  // The filesystem scenario's, and the generic ephemeral volume's (made though not reported).
  std::vector<std::string> create = Recorded(record, "CreateVolume");
  ASSERT_EQ(create.size(), 2u) << FileText(record);
  EXPECT_THAT(create[0], HasSubstr("\"parameters\":{\"type\":\"ssd\"}"));
  EXPECT_THAT(create[0], HasSubstr("\"secrets\":{\"password\":\"(redacted)\"}"));
  EXPECT_THAT(create[0], HasSubstr("\"fs_type\":\"ext4\""));
  EXPECT_THAT(create[0],
              HasSubstr("\"accessibility_requirements\":{\"requisite\":[{\"segments\":{\"topology."
                        "sample.csi.example.com/zone\":\"z0\"}},{\"segments\":{\"topology.sample."
                        "csi.example.com/zone\":\"z1\"}}],\"preferred\":[{\"segments\":{\"topology."
                        "sample.csi.example.com/zone\":\"z1\"}},"));
  std::vector<std::string> stage = Recorded(record, "NodeStageVolume");
  ASSERT_FALSE(stage.empty());
  for (const std::string& line : stage) {
    EXPECT_THAT(line, HasSubstr("\"secrets\":{\"stagekey\":\"(redacted)\"}"));
    EXPECT_THAT(line, HasSubstr("\"fs_type\":\"ext4\""));
  }
  std::vector<std::string> publish = Recorded(record, "NodePublishVolume");
  ASSERT_FALSE(publish.empty());
  for (const std::string& line : publish) {
    EXPECT_THAT(line, HasSubstr("\"secrets\":{\"publishkey\":\"(redacted)\"}"));
  }
  std::vector<std::string> deleted = Recorded(record, "DeleteVolume");
  ASSERT_EQ(deleted.size(), 2u);
  for (const std::string& line : deleted) {
    EXPECT_THAT(line, HasSubstr("\"secrets\":{\"password\":\"(redacted)\"}"));
  }
}

// Without a StorageClass, a csi-sanity secrets file alone: each call gets its secrets, the node
// ones through Secrets the PV names, as kubelet hands them over.
TEST_F(SanityTest, ASecretsFileAloneServesEveryCall) {
  const std::string record = dir_.Join("calls.jsonl");
  StartDriver({"--stage-unstage", "--controller", "--record=" + record});
  ASSERT_TRUE(WriteFile(dir_.Join("secrets.yaml"), R"(CreateVolumeSecret: {c: create-value}
DeleteVolumeSecret: {d: delete-value}
NodeStageVolumeSecret: {s: stage-value}
NodePublishVolumeSecret: {p: publish-value}
)"));
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", "--volume-mode=filesystem",
                 "--secrets-file=" + dir_.Join("secrets.yaml")},
                &out),
            0)
      << out;
  EXPECT_THAT(Verdicts(out)["FAIL"], IsEmpty()) << out;
  for (const auto& [method, secrets] : std::vector<std::pair<std::string, std::string>>{
           {"CreateVolume", "{\"c\":\"(redacted)\"}"},
           {"DeleteVolume", "{\"d\":\"(redacted)\"}"},
           {"NodeStageVolume", "{\"s\":\"(redacted)\"}"},
           {"NodePublishVolume", "{\"p\":\"(redacted)\"}"}}) {
    std::vector<std::string> lines = Recorded(record, method);
    ASSERT_FALSE(lines.empty()) << method;
    for (const std::string& line : lines) {
      EXPECT_THAT(line, HasSubstr("\"secrets\":" + secrets)) << method;
    }
  }
  for (const char* value : {"create-value", "delete-value", "stage-value", "publish-value"}) {
    EXPECT_THAT(out, ::testing::Not(HasSubstr(value)));
  }
  // A key that is none of csi-sanity's is refused before anything is sent.
  ASSERT_TRUE(WriteFile(dir_.Join("typo.yaml"), "NodeStageSecret: {s: v}\n"));
  EXPECT_EQ(Run({"--volume-handle=", "--secrets-file=" + dir_.Join("typo.yaml")}, &out), 1);
  EXPECT_THAT(out, HasSubstr("unknown key \"NodeStageSecret\"; csi-sanity's keys are"));
}

// A StorageClass the external-provisioner would refuse, or that names what is not given, is bad
// input: said before any volume is made. A Retain class leaves its volume, saying so; one without
// allowVolumeExpansion is never expanded.
TEST_F(SanityTest, StorageClassesAreCheckedAndFollowed) {
  const std::string record = dir_.Join("calls.jsonl");
  StartDriver({"--stage-unstage", "--controller", "--record=" + record});
  const std::string head =
      "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nprovisioner: sample.csi.example.com\n";
  for (const char* sub : {"bad", "missing", "two", "prov"}) {
    ASSERT_EQ(mkdir(dir_.Join(sub).c_str(), 0755), 0);
  }
  ASSERT_TRUE(WriteFile(dir_.Join("bad/sc.yaml"),
                        head + "metadata: {name: bad}\n"
                               "parameters: {csi.storage.k8s.io/typo: x}\n"));
  ASSERT_TRUE(WriteFile(dir_.Join("missing/sc.yaml"),
                        head + "metadata: {name: missing}\n"
                               "parameters:\n"
                               "  csi.storage.k8s.io/node-publish-secret-name: s-${pv.name}\n"
                               "  csi.storage.k8s.io/node-publish-secret-namespace: x\n"));
  ASSERT_TRUE(WriteFile(dir_.Join("two/sc.yaml"),
                        head + "metadata: {name: keep}\nreclaimPolicy: Retain\n---\n" + head +
                            "metadata: {name: other}\n"));
  ASSERT_TRUE(WriteFile(dir_.Join("conflict.yaml"), "DeleteVolumeSecret: {a: b}\n"));
  ASSERT_TRUE(WriteFile(dir_.Join("prov/sc.yaml"),
                        head + "metadata: {name: prov}\n"
                               "parameters: {csi.storage.k8s.io/provisioner-secret-name: p, "
                               "csi.storage.k8s.io/provisioner-secret-namespace: x}\n"
                               "---\napiVersion: v1\nkind: Secret\nmetadata: {name: p, namespace: x}\n"));
  struct Case {
    std::vector<std::string> flags;
    const char* error;
  } cases[] = {
      {{"--objects=" + dir_.Join("bad")},
       "StorageClass bad: failed to strip CSI Parameters of prefixed keys: found unknown parameter "
       "key \"csi.storage.k8s.io/typo\""},
      {{"--objects=" + dir_.Join("missing")},
       "it names Secret x/s-kubeletclient-sanity-filesystem-00000000 for NodePublishVolume of the "
       "filesystem volume (claim kubeletclient-sanity/sanity-fs-1), which is not among --objects"},
      {{"--objects=" + dir_.Join("two")}, "say which with --storage-class=NAME"},
      {{"--objects=" + dir_.Join("two"), "--storage-class=nope"},
       "--storage-class=nope: no StorageClass of that name among --objects"},
      {{"--objects=" + dir_.Join("prov"), "--secrets-file=" + dir_.Join("conflict.yaml")},
       "--secrets-file has DeleteVolumeSecret for the same call: keep one of them"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> flags = {"--volume-handle=", "--volume-mode=filesystem"};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    std::string out;
    EXPECT_EQ(Run(flags, &out), 1) << out;
    EXPECT_THAT(out, HasSubstr(c.error)) << out;
  }
  EXPECT_THAT(Recorded(record, "CreateVolume"), IsEmpty());
  // Retain: the volume stays on the driver's storage; no allowVolumeExpansion: no expansion.
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", "--volume-mode=filesystem", "--only=^filesystem/",
                 "--objects=" + dir_.Join("two"), "--storage-class=keep"},
                &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/delete-volume: the StorageClass's reclaimPolicy is "
                             "Retain: volume sample-kubeletclient-sanity-filesystem-"));
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/expand: StorageClass keep does not set "
                             "allowVolumeExpansion"));
  EXPECT_THAT(Recorded(record, "CreateVolume"), ::testing::SizeIs(2));  // and generic-ephemeral's
  EXPECT_THAT(Recorded(record, "DeleteVolume"), IsEmpty());
  // A class given where every scenario has a handle is said to be unused, not passed over.
  Run({"--volume-handle=vol-1", "--volume-mode=filesystem", "--objects=" + dir_.Join("two"),
       "--storage-class=keep"},
      &out);
  EXPECT_THAT(out, HasSubstr("StorageClass not used: every scenario has a --volume-handle"));
  EXPECT_THAT(Recorded(record, "CreateVolume"), ::testing::SizeIs(2));
}

// A volume of the driver's controller that was never attached: the driver refuses it, and the
// failure says why.
TEST_F(SanityTest, AnUnattachedVolumeFailsThePublish) {
  StartDriver({"--stage-unstage", "--controller"});
  std::string out;
  EXPECT_EQ(Run({"--volume-handle=sample-never-attached", "--volume-mode=filesystem"}, &out), 1)
      << out;
  EXPECT_THAT(out, HasSubstr("FAIL  filesystem/publish: the pod's volume could not be published"));
  EXPECT_THAT(out, HasSubstr("is not attached to node node-1"));
  // The rest cannot be judged, but what kubelet's undoing of the failed publish left can.
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/teardown: not published"));
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/clean: "));
}

// A driver that does not stage: the repeated NodeUnstageVolume does not apply.
TEST_F(SanityTest, WithoutStagingTheUnstageCheckIsSkipped) {
  StartDriver({});
  const std::string junit = dir_.Join("junit.xml");
  std::string out;
  ASSERT_EQ(Run({"--volume-mode=filesystem", "--junit=" + junit}, &out), 0) << out;
  std::string xml;
  ASSERT_TRUE(ReadFile(junit, &xml));
  EXPECT_THAT(xml, ::testing::ContainsRegex(
                       "<testcase classname=\"sanity.filesystem\" "
                       "name=\"filesystem/unstage-repeated\" time=\"[0-9.]+\"><skipped "
                       "message=\"the driver lacks the STAGE_UNSTAGE_VOLUME node "
                       "capability\"/></testcase>"));
  auto verdicts = Verdicts(out);
  // Without a CSIDriver object: no tokens, no republish, no inline volumes either.
  std::set<std::string> skipped = Named("inline", kEphemeralChecks);
  skipped.insert({"filesystem/unstage-repeated", "filesystem/tokens", "filesystem/republish"});
  EXPECT_EQ(verdicts["SKIP"], skipped) << out;
  EXPECT_THAT(out, HasSubstr("SKIP  inline/publish: the CSIDriver does not list Ephemeral"));
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/unstage-repeated: the driver lacks the "
                             "STAGE_UNSTAGE_VOLUME node capability"));
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/publish: NodePublishVolume"));
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
}

// Several releases in one run: each judged in turn, a check a release lacks skipped saying so,
// and kubelet 1.34+'s own leftover for a driver that does not stage (an empty globalmount/:
// csi_attacher.go MountDevice writes no vol_data.json, UnmountDevice then skips) not blamed on
// the driver.
TEST_F(SanityTest, EachReleaseIsJudgedInOneRun) {
  StartDriver({"--faults=storage-unreachable"});
  const std::string junit = dir_.Join("junit.xml");
  std::string out;
  ASSERT_EQ(Run({"--volume-mode=filesystem", "--kubelet-version=1.33,v1.37.2", "--junit=" + junit},
                &out),
            0)
      << out;
  // Each release in a root directory of its own.
  EXPECT_THAT(out, HasSubstr("=== kubelet 1.33 (root directory " + root_ + "/kubelet-1.33)\n"));
  EXPECT_THAT(out, HasSubstr("=== kubelet 1.37 (root directory " + root_ + "/kubelet-1.37)\n"));
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/volume-health: kubelet 1.33 does not call "
                             "NodeGetVolumeHealth (from 1.37, with CSIVolumeHealth)"));
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/volume-health: NodeGetVolumeHealth: no adverse "
                             "condition"));
  // The driver reports its storage unreachable: a condition kubelet maps, not a fault.
  EXPECT_THAT(out, HasSubstr("PASS  registration/storage-health: NodeGetStorageHealth: "
                             "StorageUnreachable/DataDirUnreachable"));
  EXPECT_THAT(out, HasSubstr("which kubelet 1.37 itself leaves for a driver that does not stage: "
                             "removed by the judge)"));
  EXPECT_THAT(out, ::testing::ContainsRegex("kubelet 1.33: [0-9]+ passed, 0 failed, [0-9]+ skipped"));
  EXPECT_THAT(out, ::testing::ContainsRegex("kubelet 1.37: [0-9]+ passed, 0 failed, [0-9]+ skipped"));
  std::string xml;
  ASSERT_TRUE(ReadFile(junit, &xml));
  EXPECT_THAT(xml, HasSubstr("name=\"1.37/filesystem/volume-health\""));
  EXPECT_THAT(xml, ::testing::ContainsRegex("name=\"1.33/filesystem/volume-health\" "
                                            "time=\"[0-9.]+\"><skipped"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"kubeletclient sanity: sample.csi.example.com "
                             "(kubelet 1.33, 1.37)\""));
  EXPECT_THAT(LeftTargets(), IsEmpty());
  // A release given twice, one kubelet never had, a gate 1.33 refuses: nothing is judged.
  EXPECT_EQ(Run({"--kubelet-version=1.29,1.29"}, &out), 1);
  EXPECT_THAT(out, HasSubstr("--kubelet-version: 1.29 is given twice"));
  EXPECT_EQ(Run({"--kubelet-version=1.25"}, &out), 1);
  EXPECT_THAT(out, HasSubstr("\"1.25\" is not a kubelet release kubeletclient knows: give 1.26 "
                             "to 1.37"));
  EXPECT_EQ(Run({"--kubelet-version=1.33,1.37", "--feature-gates=ReadWriteOncePod=false"}, &out),
            1);
  EXPECT_THAT(out, HasSubstr("unrecognized feature gate: ReadWriteOncePod (kubelet 1.33 no longer "
                             "has it: its behaviour is always on) (at kubelet 1.33)"));
  EXPECT_THAT(out, Not(HasSubstr("PASS")));
}

// Each fault fails the checks of what it breaks, and only those.
TEST_F(SanityTest, EachBrokenDriverFailsExactlyItsChecks) {
  // The call each fault is caught by, named in its FAIL's request line.
  const std::map<std::string, std::string> named = {
      {"stage-not-idempotent", "NodeStageVolume"},
      {"unpublish-missing-target", "NodeUnpublishVolume"},
      {"block-target-directory", "NodePublishVolume"},
      {"stats-used-over-capacity", "NodeGetVolumeStats"},
      {"read-only-refused", "NodePublishVolume"},
      {"stats-internal", "NodeGetVolumeStats"},
  };
  const std::map<std::string, std::set<std::string>> expected = {
      {"stage-not-idempotent",
       {"filesystem/restart-replay", "block/restart-replay", "generic-ephemeral/restart-replay"}},
      {"unpublish-missing-target",
       // The filesystem volume's failed teardown leaves it staged, which clean says (and the
       // generic ephemeral volume, on the same handle, cannot be judged for it). The block
       // volume's pod entry is gone before its NodeUnpublishVolume fails, so the last pod's
       // teardown unstages it.
       {"filesystem/unpublish-twice", "filesystem/teardown", "filesystem/unpublish-removed-target",
        "filesystem/clean", "block/unpublish-twice", "block/teardown",
        "block/unpublish-removed-target"}},
      {"block-target-directory", {"block/target"}},
      {"stats-used-over-capacity", {"filesystem/stats"}},
      {"read-only-refused", {"filesystem/read-only", "block/read-only"}},
      {"stats-internal", {"filesystem/stats", "block/stats"}},
  };
  for (const auto& [fault, failures] : expected) {
    SCOPED_TRACE(fault);
    registrar_.reset();
    driver_.reset();
    unlink(reg_socket_.c_str());
    StartDriver({"--stage-unstage", "--faults=" + fault});
    std::string out;
    // A root directory each: a fault's leftovers would have the next run refused.
    EXPECT_EQ(Run({"--root-dir=" + dir_.Join("root-" + fault)}, &out), 1) << out;
    EXPECT_EQ(Verdicts(out)["FAIL"], failures) << out;
    const std::set<std::string> not_judged =
        fault == "unpublish-missing-target"
            ? std::set<std::string>{"generic-ephemeral/publish", "generic-ephemeral/target",
                                    "generic-ephemeral/restart-replay",
                                    "generic-ephemeral/teardown",
                                    "generic-ephemeral/unpublish-removed-target",
                                    "generic-ephemeral/clean"}
            : std::set<std::string>{};
    EXPECT_EQ(Verdicts(out)["NOT JUDGED"], not_judged) << out;
    EXPECT_THAT(out, HasSubstr(absl::StrCat(failures.size(), " failed")));
    // Every FAIL says what was sent, what came back, and which kubelet function needs better.
    EXPECT_THAT(out, HasSubstr("      kubelet: ")) << out;
    EXPECT_THAT(out, HasSubstr("\n      request: " + named.at(fault) + " {")) << out;
    if (fault == "read-only-refused") {
      // Pod C never published, teardown passed: the SKIP says so, not that teardown stopped.
      EXPECT_THAT(out, HasSubstr("SKIP  filesystem/unpublish-removed-target: pod sanity-c was "
                                 "never published (see the read-only check)"));
    }
  }
}

// A run whose teardown failed leaves its volume staged. Within the run, the scenario on the same
// volume cannot be carried out: NOT JUDGED, counted as a failure, an error in JUnit. A second run
// on the same root directory would take what is left for its own: it is refused before anything
// is sent, naming what is there, so that it can never end "0 failed" with checks passed over.
TEST_F(SanityTest, WhatAnEarlierRunLeftIsNeverJudgedAsClean) {
  StartDriver({"--stage-unstage", "--faults=unpublish-missing-target"});
  const std::string junit = dir_.Join("junit.xml");
  std::string out;
  EXPECT_EQ(Run({"--junit=" + junit}, &out), 1) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "NOT JUDGED  generic-ephemeral/publish: [^\n]*/plugins/kubernetes.io/csi/"
                       "sample.csi.example.com/[0-9a-f]+ is left from an earlier check of this "
                       "run whose teardown failed"));
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "\n[0-9]+ passed, 7 failed, [0-9]+ skipped[^\n]*, 6 not judged \\(what an "
                       "earlier check of this run left stood in their way: counted as "
                       "failures\\)\n"));
  std::string xml;
  ASSERT_TRUE(ReadFile(junit, &xml));
  EXPECT_THAT(xml, HasSubstr("errors=\"6\""));
  EXPECT_THAT(xml, HasSubstr("name=\"generic-ephemeral/clean\""));
  EXPECT_THAT(xml, ::testing::ContainsRegex("name=\"generic-ephemeral/clean\" "
                                            "time=\"[0-9.]+\"><error message=\"not judged: "));
  // Even judging only what the first run did not reach finds the root directory taken.
  EXPECT_EQ(Run({"--only=^block/"}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("sanity: --root-dir=" + root_ + " holds what an earlier run left"));
  EXPECT_THAT(out, ::testing::ContainsRegex("file " + root_ +
                                            "/plugins/kubernetes.io/csi/sample.csi.example.com/"
                                            "[0-9a-f]+/vol_data.json"));
  EXPECT_THAT(out, HasSubstr("Give a new --root-dir"));
  // Nothing was sent: no handshake, no verdict.
  EXPECT_THAT(out, Not(HasSubstr("registration/handshake")));
  EXPECT_THAT(out, Not(HasSubstr("PASS  ")));
}

TEST_F(SanityTest, FailuresShowTheRequestTheAnswerAndWhatKubeletNeeds) {
  StartDriver({"--stage-unstage", "--faults=stage-not-idempotent"});
  std::string out;
  EXPECT_EQ(Run({"--only=^filesystem/restart-replay$"}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("FAIL  filesystem/restart-replay: a repeated call with identical "
                             "arguments failed\n      request: NodeStageVolume {"));
  EXPECT_THAT(out, HasSubstr("\"staging_target_path\":\"" + root_ +
                             "/plugins/kubernetes.io/csi/sample.csi.example.com/"));
  EXPECT_THAT(out, HasSubstr("      answer: NodeStageVolume: rpc error: code = AlreadyExists"));
  EXPECT_THAT(out, HasSubstr("      kubelet: reconciler.go reconstructVolumes"));
  // --only: that check alone is reported (and counted).
  EXPECT_THAT(out, HasSubstr("\n0 passed, 1 failed, 0 skipped\n"));
}

// A driver with filesystem volumes only refuses block at CreateVolume: skipped when no mode was
// asked for (as a refusal at publish is), a FAIL when block was.
TEST_F(SanityTest, AModeRefusedAtCreateVolumeIsSkippedUnlessAskedFor) {
  StartDriver({"--stage-unstage", "--controller", "--filesystem-only"});
  std::string out;
  EXPECT_EQ(Run({"--volume-handle="}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("SKIP  block/create-volume: the driver refuses block volumes at "
                             "CreateVolume: CreateVolume: rpc error: code = InvalidArgument"));
  EXPECT_THAT(out, HasSubstr("SKIP  block/publish: the driver refuses block volumes at "
                             "CreateVolume"));
  EXPECT_THAT(Verdicts(out)["FAIL"], IsEmpty()) << out;
  EXPECT_THAT(out, HasSubstr("PASS  filesystem/create-volume: "));
  EXPECT_EQ(Run({"--volume-handle=", "--volume-mode=filesystem,block"}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("FAIL  block/create-volume: CreateVolume failed"));
}

// A publish that fails is reported with the NodePublishVolume that failed, not with the calls
// that undid the stage afterwards.
TEST_F(SanityTest, AFailedPublishNamesTheCallThatFailed) {
  StartDriver({"--stage-unstage", "--reject-pod-info"});
  ASSERT_TRUE(WriteFile(dir_.Join("csidriver.yaml"), kCsiDriver));  // podInfoOnMount: true
  ASSERT_TRUE(WriteFile(dir_.Join("sa.key"), token::NewKeyPem("EC", "P-256")));
  std::string out;
  EXPECT_EQ(Run({"--volume-mode=filesystem", "--only=^filesystem/publish$",
                 "--objects=" + dir_.Join("csidriver.yaml"),
                 "--service-account-key-file=" + dir_.Join("sa.key")},
                &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("FAIL  filesystem/publish: the pod's volume could not be published\n"
                             "      request: NodePublishVolume {"));
  EXPECT_THAT(out, HasSubstr("      answer: MountVolume.SetUp failed for volume \"sanity-fs-1\" : "
                             "NodePublishVolume: rpc error: code = InvalidArgument"));
}

// A driver of read-only inline volumes only, whose CSIDriver lists only Ephemeral: judged by its
// inline volume as the user describes it, with no handle and no Controller service; the
// persistent and generic ephemeral checks are skipped because kubelet would refuse them.
TEST_F(SanityTest, AnInlineOnlyDriverIsJudgedByTheInlineVolumeTheUserDescribes) {
  StartDriver({"--inline-only"});
  ASSERT_TRUE(WriteFile(dir_.Join("csidriver.yaml"), R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec: {attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: [Ephemeral]}
---
apiVersion: v1
kind: Secret
metadata: {name: vault-creds, namespace: kubeletclient-sanity}
stringData: {token: s3cret}
)"));
  const std::string objects = "--objects=" + dir_.Join("csidriver.yaml");
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=", objects, "--inline-read-only",
                 "--inline-volume-attributes=source=hello,flavour=plain",
                 "--inline-publish-secret=vault-creds"},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  for (const std::string& check : Named("inline", kEphemeralChecks)) {
    EXPECT_EQ(verdicts["PASS"].count(check), 1u) << check << "\n" << out;
  }
  std::set<std::string> skipped = Named("generic-ephemeral", kEphemeralChecks);
  for (const char* mode : {"filesystem", "block"}) {
    for (const std::string& check : Named(mode, kVolumeChecks)) skipped.insert(check);
  }
  EXPECT_EQ(verdicts["SKIP"], skipped) << out;
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/publish: the CSIDriver lists only Ephemeral in "
                             "volumeLifecycleModes"));
  // What the user described is what the driver was sent.
  EXPECT_THAT(driver_->Log(), HasSubstr("readonly=1 volume_context_keys=7 secrets=[token]"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("s3cret")));

  // Without readOnly, the driver's refusal is the verdict's reason, word for word.
  EXPECT_EQ(Run({"--volume-handle=", objects, "--inline-volume-attributes=source=hello"}, &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("SKIP  inline/publish: "));
  EXPECT_THAT(out, HasSubstr("set readOnly: true on the pod's csi volume"));
  EXPECT_THAT(LeftTargets(), IsEmpty());

  for (const auto& [flag, error] : std::vector<std::pair<std::string, std::string>>{
           {"--inline-volume-attributes=source", "\"source\" is not KEY=VALUE"},
           {"--inline-volume-attributes=a=1,a=2", "a is given twice"},
           {"--volume-handle=block=", "block= names no handle"},
           {"--volume-handle=filesystem=vol-1",
            "no --volume-handle was given for block, generic-ephemeral, and driver "
            "sample.csi.example.com cannot create volumes (it has no Controller service): give "
            "--volume-handle=H, a volume the driver knows (or SCENARIO=H for each of block, "
            "generic-ephemeral)"}}) {
    EXPECT_EQ(Run({flag}, &out), 1) << out;
    EXPECT_THAT(out, HasSubstr(error));
  }
  // A handle for a scenario the modes leave out is refused, not dropped.
  EXPECT_EQ(Run({"--volume-handle=generic-ephemeral=vol-g", "--volume-mode=block"}, &out), 1)
      << out;
  EXPECT_THAT(out, HasSubstr("--volume-handle: generic-ephemeral=vol-g is for a scenario that "
                             "--volume-mode=block leaves out"));
}

// Kubelet reads a VolumeAttachment by its name and judges its status alone (v1.26.15
// csi_attacher.go verifyAttachmentStatus), so the user's attachments, written for PVs of their
// own, serve the judge's PVs of the same handles; and each scenario gets the handle named for it.
TEST_F(SanityTest, EachScenarioGetsItsHandleAndTheUsersAttachmentsServeIt) {
  StartDriver({"--stage-unstage"});
  std::string yaml = R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec: {attachRequired: true, podInfoOnMount: false}
)";
  for (const char* handle : {"vol-fs", "vol-block"}) {
    absl::StrAppend(&yaml, "---\napiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\n",
                    "metadata: {name: ", kubelet::AttachmentName(handle, kDriverName, "node-1"),
                    "}\nspec: {attacher: ", kDriverName,
                    ", nodeName: node-1, source: {persistentVolumeName: pv-of-", handle,
                    "}}\nstatus: {attached: true}\n");
  }
  ASSERT_TRUE(WriteFile(dir_.Join("objects.yaml"), yaml));
  std::string out;
  ASSERT_EQ(Run({"--volume-handle=filesystem=vol-fs,block=vol-block,generic-ephemeral=vol-fs",
                 "--objects=" + dir_.Join("objects.yaml")},
                &out),
            0)
      << out;
  auto verdicts = Verdicts(out);
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  for (const char* check : {"filesystem/publish", "block/publish", "generic-ephemeral/publish"}) {
    EXPECT_EQ(verdicts["PASS"].count(check), 1u) << check << "\n" << out;
  }
  const std::string driver_log = driver_->Log();
  EXPECT_THAT(driver_log, HasSubstr("NodeStageVolume volume_id=vol-fs"));
  EXPECT_THAT(driver_log, HasSubstr("NodeStageVolume volume_id=vol-block"));
  EXPECT_THAT(driver_log, ::testing::Not(HasSubstr("volume_id=vol-1")));
}

// SIGINT in the middle: the rest is skipped, what was published is torn down, exit 130.
TEST_F(SanityTest, InterruptedRunsCleanUp) {
  StartDriver({"--stage-unstage"});
  setenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER", "filesystem/second-pod", 1);
  Subprocess run(Argv({}), dir_.Join("interrupted.log"));
  unsetenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
  // Stopped with pods A and B published; the signal waits until the step is over.
  ASSERT_TRUE(PollUntil([&] { return Stopped(run.pid()); })) << run.Log();
  EXPECT_THAT(LeftTargets(), ::testing::SizeIs(2));
  ASSERT_TRUE(run.Signal(SIGINT));
  ASSERT_TRUE(run.Signal(SIGCONT));
  EXPECT_EQ(run.Wait(), 130) << run.Log();
  const std::string out = run.Log();
  EXPECT_THAT(out, HasSubstr("Interrupted: skipping the remaining checks and cleaning up"));
  EXPECT_THAT(out, HasSubstr("SKIP  block/publish: interrupted"));
  EXPECT_THAT(Verdicts(out)["FAIL"], IsEmpty()) << out;
  EXPECT_THAT(LeftTargets(), IsEmpty());
}

// Two judges on one root directory: the second is refused at once, naming the first (its pid,
// command line and start) and what to do, and sends nothing; the first, stopped meanwhile with
// two pods published, goes on undisturbed and gives its usual verdicts.
TEST_F(SanityTest, ASecondJudgeOnTheSameRootDirIsRefused) {
  StartDriver({"--stage-unstage"});
  setenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER", "filesystem/second-pod", 1);
  Subprocess first(Argv({}), dir_.Join("first.log"));
  unsetenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
  ASSERT_TRUE(PollUntil([&] { return Stopped(first.pid()); })) << first.Log();
  const std::string driver_before = driver_->Log();
  std::string out;
  EXPECT_EQ(Run({}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr(absl::StrCat("sanity: --root-dir=", root_,
                                          " is in use by another judge: pid ", first.pid(), " (",
                                          Runfile("kubeletclient/kubeletclient"),
                                          " sanity --registration-socket=", reg_socket_)));
  EXPECT_THAT(out, HasSubstr(", started at "));
  EXPECT_THAT(out, HasSubstr("holds its lock; nothing was sent. Wait for that judge to finish, "
                             "or give another --root-dir."));
  EXPECT_THAT(Verdicts(out), IsEmpty()) << out;
  EXPECT_EQ(driver_->Log(), driver_before);  // not a call made to the driver
  EXPECT_THAT(LeftTargets(), ::testing::SizeIs(2));  // the first's pods, untouched
  ASSERT_TRUE(first.Signal(SIGCONT));
  EXPECT_EQ(first.Wait(), 0) << first.Log();
  const std::string first_out = first.Log();
  EXPECT_THAT(Verdicts(first_out)["FAIL"], IsEmpty()) << first_out;
  EXPECT_THAT(Verdicts(first_out)["NOT JUDGED"], IsEmpty()) << first_out;
  EXPECT_THAT(first_out, HasSubstr(" passed, 0 failed, ")) << first_out;
  EXPECT_THAT(LeftTargets(), IsEmpty());
  // Once the first has ended, its lock goes with it.
  EXPECT_EQ(Run({"--volume-mode=filesystem"}, &out), 0) << out;
}

TEST_F(SanityTest, BadInputIsRefusedBeforeAnythingIsSent) {
  StartDriver({});
  struct Case {
    std::vector<std::string> flags;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"--volume-mode=tape"}, "--volume-mode: \"tape\" is not filesystem or block"},
      {{"--only=(("}, "--only: \"((\" is not a regular expression"},
      {{"--volume-handle="},
       "no --volume-handle was given, and driver sample.csi.example.com cannot create volumes "
       "(it has no Controller service): give --volume-handle=H"},
      {{"--objects=" + dir_.Join("missing.yaml")}, "missing.yaml"},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(Run(c.flags, &out), 1) << out;
    EXPECT_THAT(out, HasSubstr(c.error));
    // Nothing is judged: bad input (the last case after the registration, which it needs).
    EXPECT_THAT(Verdicts(out)["FAIL"], IsEmpty()) << out;
    EXPECT_THAT(Verdicts(out)["SKIP"], IsEmpty()) << out;
  }
  // Without --root-dir: never kubelet's own (it would get the made-up pods), but a new directory
  // made for the run, named first and removed at the end.
  Subprocess no_root({Runfile("kubeletclient/kubeletclient"), "sanity",
                      "--registration-socket=" + reg_socket_, "--volume-handle=v",
                      "--only=^registration/handshake$", "--block-host-ops=skip"},
                     dir_.Join("noroot.log"));
  EXPECT_EQ(no_root.Wait(), 0) << no_root.Log();
  const std::string log = no_root.Log();
  std::smatch made;
  ASSERT_TRUE(std::regex_search(
      log, made, std::regex("root directory: (/tmp/kubeletclient-sanity-[A-Za-z0-9]{6}) ")))
      << log;
  struct stat st;
  EXPECT_NE(lstat(made[1].str().c_str(), &st), 0) << made[1] << " was left";
  EXPECT_THAT(log, Not(HasSubstr("/var/lib/kubelet")));
  EXPECT_THAT(DirEntries(root_), IsEmpty());
}

// A driver that needs pod information for its inline volumes (the sample driver, staging: an
// unstaged publish is refused unless the volume context says the volume is ephemeral) with a
// CSIDriver whose podInfoOnMount is false and the registrar's --requires-publish-pod. No kubelet
// asks the registrar (csi_plugin.go RegistrationHandler.RegisterPlugin and podInfoEnabled read
// only the CSIDriver, v1.26.15 to v1.37.2), so on a real node that publish fails: by default the
// judge does not pass it (an inline publish the driver refuses is a SKIP saying so, as for any
// driver that serves no inline volumes), and only the named opt-in shows what the design
// proposal would give.
TEST_F(SanityTest, PodInfoOnlyFromTheRegistrarFailsAsOnARealKubelet) {
  StartDriver({"--stage-unstage"}, {"--requires-publish-pod"});
  ASSERT_TRUE(WriteFile(dir_.Join("csidriver.yaml"), R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec:
  attachRequired: false
  podInfoOnMount: false
  volumeLifecycleModes: [Persistent, Ephemeral]
)"));
  const std::vector<std::string> flags = {"--volume-mode=filesystem", "--only=^inline/",
                                          "--objects=" + dir_.Join("csidriver.yaml")};
  std::string out;
  EXPECT_EQ(Run(flags, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("pod information: from the CSIDriver's podInfoOnMount only"));
  EXPECT_THAT(Verdicts(out)["PASS"], ::testing::Not(::testing::Contains("inline/publish"))) << out;
  EXPECT_THAT(out, HasSubstr("SKIP  inline/publish: the driver refuses inline volumes: "
                             "MountVolume.SetUp failed"));
  EXPECT_THAT(out, HasSubstr("is not staged"));
  EXPECT_THAT(LeftTargets(), IsEmpty());

  std::vector<std::string> opted_in = flags;
  opted_in.push_back("--ask-csi-registration");
  EXPECT_EQ(Run(opted_in, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--ask-csi-registration: the pod-info design proposal"));
  EXPECT_THAT(Verdicts(out)["PASS"], ::testing::Contains("inline/publish")) << out;
}

// Direct mode: the driver alone, no registrar. The judge offers it from a registration socket of
// its own and judges it as through our registrar: the same verdicts as
// TheSampleDriverPassesEveryCheck's filesystem checks; its socket directory goes with it.
TEST_F(SanityTest, DirectModeJudgesADriverWithoutARegistrar) {
  driver_ = std::make_unique<Subprocess>(
      std::vector<std::string>{Runfile("test/csidriver/sample-csi-driver"),
                               "--endpoint=" + csi_socket_, "--nodeid=node-1", "--stage-unstage"},
      dir_.Join("driver.log"));
  ASSERT_TRUE(PollUntil([&] {
    struct stat st;
    return stat(csi_socket_.c_str(), &st) == 0;
  })) << driver_->Log();
  auto judge_dirs = [] {
    std::set<std::string> dirs;
    for (const std::string& entry : DirEntries("/tmp")) {
      if (absl::StartsWith(entry, "ndr-judge-")) dirs.insert(entry);
    }
    return dirs;
  };
  const std::set<std::string> before = judge_dirs();
  std::vector<std::string> argv = {Runfile("kubeletclient/kubeletclient"),
                                   "sanity",
                                   "--csi-address=unix://" + csi_socket_,
                                   "--root-dir=" + root_,
                                   "--node-name=node-1",
                                   "--volume-handle=vol-1",
                                   "--volume-mode=filesystem",
                                   "--block-host-ops=skip",
                                   "--get-info-timeout=60s",
                                   "--notify-timeout=60s"};
  Subprocess run(argv, dir_.Join("direct.log"));
  EXPECT_EQ(run.Wait(), 0) << run.Log();
  const std::string out = run.Log();
  EXPECT_THAT(out, HasSubstr("PASS  registration/handshake: driver sample.csi.example.com "
                             "registered (offered directly from the judge's registration socket"));
  auto verdicts = Verdicts(out);
  EXPECT_THAT(verdicts["FAIL"], IsEmpty()) << out;
  for (const char* check : {"filesystem/publish", "filesystem/stats", "filesystem/clean",
                            "generic-ephemeral/publish"}) {
    EXPECT_THAT(verdicts["PASS"], ::testing::Contains(check)) << out;
  }
  EXPECT_THAT(LeftTargets(), IsEmpty());
  EXPECT_EQ(judge_dirs(), before);

  // Through a registrar and directly at once: refused, before anything is sent.
  argv.push_back("--registration-socket=" + reg_socket_);
  Subprocess both(argv, dir_.Join("both.log"));
  EXPECT_EQ(both.Wait(), 1);
  EXPECT_THAT(both.Log(), HasSubstr("sanity: --csi-address judges the driver directly; it cannot "
                                    "be given with --registration-socket"));
  // Nothing at the address: the handshake fails, saying why.
  argv.pop_back();
  argv[2] = "--csi-address=" + dir_.Join("nothing.sock");
  Subprocess nothing(argv, dir_.Join("nothing.log"));
  EXPECT_EQ(nothing.Wait(), 1);
  EXPECT_THAT(nothing.Log(), HasSubstr("FAIL  registration/handshake: the driver could not be "
                                       "offered for registration"));
  EXPECT_THAT(nothing.Log(),
              HasSubstr("GetPluginInfo on --csi-address " + dir_.Join("nothing.sock")));
  EXPECT_EQ(judge_dirs(), before);
}

// A kubelet's directory is never the judge's, given explicitly or not: here a process named
// kubelet (a copy of sleep) runs with the default root directory, /var/lib/kubelet.
TEST_F(SanityTest, ARunningKubeletsRootDirIsRefused) {
  std::string sleep;
  ASSERT_TRUE(ReadFile("/bin/sleep", &sleep));
  ASSERT_TRUE(WriteFile(dir_.Join("kubelet"), sleep));
  ASSERT_EQ(chmod(dir_.Join("kubelet").c_str(), 0755), 0);
  Subprocess kubelet({dir_.Join("kubelet"), "600"}, dir_.Join("kubelet.log"));
  ASSERT_TRUE(PollUntil([&] {  // exec'd
    std::string comm;
    return ReadFile(absl::StrCat("/proc/", kubelet.pid(), "/comm"), &comm) && comm == "kubelet\n";
  }));
  Subprocess run({Runfile("kubeletclient/kubeletclient"), "sanity",
                  "--registration-socket=" + reg_socket_, "--root-dir=/var/lib/kubelet/"},
                 dir_.Join("refused.log"));
  EXPECT_EQ(run.Wait(), 1);
  EXPECT_THAT(run.Log(), HasSubstr(absl::StrCat(
                             "sanity: --root-dir=/var/lib/kubelet/: the kubelet running as pid ",
                             kubelet.pid(), " uses the root directory /var/lib/kubelet")));
}

// No driver at the socket: the registration fails, with the reason, and nothing else runs.
TEST_F(SanityTest, AnUnreachableSocketFailsTheRegistration) {
  std::string out;
  EXPECT_EQ(Run({}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("FAIL  registration/handshake: no CSI driver registered\n      " +
                             reg_socket_));
  EXPECT_THAT(Verdicts(out)["PASS"], IsEmpty());
}

}  // namespace
}  // namespace ndr

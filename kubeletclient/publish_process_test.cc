// `kubeletclient publish` and `unpublish` as real processes, against our registrar and the
// sample driver on real sockets: pods' volumes end up as real directories of files.
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kDriverName[] = "sample.csi.example.com";
constexpr char kUid[] = "d5b7a2a8-1c2e-4f5b-9b1a-3f0c2e1d4a55";

// Every path under `dir` (with its type), but log files, which the processes write as they go.
std::set<std::string> Tree(const std::string& dir) {
  static std::set<std::string>* found;
  std::set<std::string> paths;
  found = &paths;
  nftw(
      dir.c_str(),
      [](const char* path, const struct stat* st, int, struct FTW*) {
        const std::string p = path;
        if (p.size() < 4 || p.compare(p.size() - 4, 4, ".log") != 0) {
          found->insert(p + (S_ISDIR(st->st_mode) ? "/" : S_ISLNK(st->st_mode) ? "@" : ""));
        }
        return 0;
      },
      16, FTW_PHYS);
  return paths;
}

constexpr char kPod[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
  uid: d5b7a2a8-1c2e-4f5b-9b1a-3f0c2e1d4a55
spec:
  serviceAccountName: web-sa
  containers:
  - name: c
    image: busybox
    volumeMounts: [{name: inline-vol, mountPath: /info}]
  volumes:
  - name: inline-vol
    csi:
      driver: sample.csi.example.com
      volumeAttributes:
        color: blue
        csi.storage.k8s.io/pod.name: impostor
      nodePublishSecretRef: {name: creds}
)";

constexpr char kCsiDriver[] = R"(apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec:
  attachRequired: false
  podInfoOnMount: POD_INFO
  volumeLifecycleModes: [MODES]
)";

constexpr char kSecret[] = R"(apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: NAMESPACE}
stringData: {password: hunter2}
)";

class PublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& d : {csi_dir_, reg_dir_, root_, objects_dir_}) {
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    }
    ASSERT_TRUE(WriteFile(pod_file_, kPod));
    WriteObjects(/*pod_info=*/true, "Ephemeral", "shop");
  }

  void WriteObjects(bool pod_info, const std::string& modes, const std::string& secret_ns) {
    ASSERT_TRUE(WriteFile(objects_dir_ + "/csidriver.yaml",
                          absl::StrReplaceAll(kCsiDriver, {{"POD_INFO", pod_info ? "true" : "false"},
                                                           {"MODES", modes}})));
    ASSERT_TRUE(WriteFile(objects_dir_ + "/secret.yaml",
                          absl::StrReplaceAll(kSecret, {{"NAMESPACE", secret_ns}})));
  }

  // The sample driver and our registrar, registered in reg_dir_.
  void StartDriverAndRegistrar(std::vector<std::string> registrar_flags = {},
                               std::vector<std::string> driver_flags = {}) {
    // --v=4: both log every call they get, which the tests of refusals read.
    std::vector<std::string> driver = {Runfile("test/csidriver/sample-csi-driver"),
                                       "--endpoint=" + csi_socket_, "--nodeid=node-1", "--v=4"};
    driver.insert(driver.end(), driver_flags.begin(), driver_flags.end());
    driver_ = std::make_unique<Subprocess>(driver, dir_.Join("driver.log"));
    std::vector<std::string> registrar = {Runfile("registrar/csi-node-driver-registrar"),
                                          "--csi-address=" + csi_socket_,
                                          "--kubelet-registration-path=" + csi_socket_,
                                          "--plugin-registration-path=" + reg_dir_, "--v=4"};
    registrar.insert(registrar.end(), registrar_flags.begin(), registrar_flags.end());
    registrar_ = std::make_unique<Subprocess>(registrar, dir_.Join("registrar.log"));
    ASSERT_TRUE(PollUntil([&] {
      struct stat st;
      return stat((reg_dir_ + "/" + kDriverName + "-reg.sock").c_str(), &st) == 0;
    })) << registrar_->Log();
  }

  // Runs kubeletclient `command`; returns its exit code and fills `output` (stdout and stderr).
  // Its handshake deadlines (kubelet's: 1 s and 5 s) are ones no busy machine reaches.
  int Run(const std::string& command, std::vector<std::string> extra, std::string* output) {
    std::vector<std::string> argv = {Runfile("kubeletclient/kubeletclient"), command,
                                     "--pod=" + pod_file_, "--plugin-registry-dir=" + reg_dir_,
                                     "--root-dir=" + root_, "--node-name=node-1",
                                     "--get-info-timeout=60s", "--notify-timeout=60s"};
    if (command == "publish") {
      argv.push_back("--objects=" + objects_dir_);
      argv.push_back(std::string("--allowed-inline-drivers=") + kDriverName);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string log = dir_.Join(absl::StrCat("run", runs_++, ".log"));
    Subprocess run(argv, log);
    std::optional<int> code = run.Wait();
    *output = run.Log();
    return code.value_or(-1);
  }

  // How many calls the driver and the registrar have got so far: at --v=4 each logs every call,
  // in the handler, before it answers.
  int Calls() {
    int calls = 0;
    for (const std::string& log : {driver_->Log(), registrar_->Log()}) {
      for (absl::string_view line : absl::StrSplit(log, '\n')) {
        for (const char* call :
             {"] GetPluginInfo", "] GetPluginCapabilities", "] Probe", "] NodeGetCapabilities",
              "] NodeGetInfo", "] NodePublishVolume volume_id=", "] NodeUnpublishVolume volume_id=",
              "] GetInfo from ", "] NotifyRegistrationStatus: ", "] GetCSIDriverInfo from "}) {
          calls += absl::StrContains(line, call);
        }
      }
    }
    return calls;
  }

  std::string VolumeDir() {
    return absl::StrCat(root_, "/pods/", kUid, "/volumes/kubernetes.io~csi/inline-vol");
  }
  std::string File(const std::string& name) {
    std::string contents;
    ReadFile(VolumeDir() + "/mount/" + name, &contents);
    return contents;
  }

  TempDir dir_{"pub"};
  const std::string csi_dir_ = dir_.Join("csi"), reg_dir_ = dir_.Join("reg");
  const std::string root_ = dir_.Join("root"), objects_dir_ = dir_.Join("objects");
  const std::string csi_socket_ = dir_.Join("csi/csi.sock"), pod_file_ = dir_.Join("pod.yaml");
  std::unique_ptr<Subprocess> driver_, registrar_;
  int runs_ = 0;
};

TEST_F(PublishTest, InlineVolumeWithPodInfoFromTheCsiDriverObject) {
  StartDriverAndRegistrar();
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  // One file per volume_context key, written by the driver; the spoofed name is overwritten.
  EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "web-0");
  EXPECT_EQ(File("csi.storage.k8s.io_pod.namespace"), "shop");
  EXPECT_EQ(File("csi.storage.k8s.io_pod.uid"), kUid);
  EXPECT_EQ(File("csi.storage.k8s.io_serviceAccount.name"), "web-sa");
  EXPECT_EQ(File("csi.storage.k8s.io_ephemeral"), "true");
  EXPECT_EQ(File("color"), "blue");
  // vol_data.json beside the mount dir, with kubelet's keys.
  std::string text;
  ASSERT_TRUE(ReadFile(VolumeDir() + "/vol_data.json", &text));
  const json vol_data = json::parse(text);
  EXPECT_EQ(vol_data["volumeHandle"],
            "csi-287c453d8f02517ab016c961cdb5d2a5edd36556703c66d4c73a680b36c38a69");
  EXPECT_EQ(vol_data["specVolID"], "inline-vol");
  EXPECT_EQ(vol_data["driverName"], kDriverName);
  EXPECT_EQ(vol_data["nodeName"], "node-1");
  EXPECT_EQ(vol_data["volumeLifecycleMode"], "Ephemeral");
  EXPECT_TRUE(vol_data["attachmentID"].is_string());
  // The output says what was sent, without the secret.
  EXPECT_THAT(out, HasSubstr("\"password\": \"(redacted)\""));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("hunter2")));

  // Publishing again is safe; unpublishing removes everything, and again is safe.
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  ASSERT_EQ(Run("unpublish", {}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("\"result\": \"unpublished\""));
  struct stat st;
  EXPECT_NE(stat(VolumeDir().c_str(), &st), 0);
  ASSERT_EQ(Run("unpublish", {}, &out), 0) << out;
}

// The pod-info design's switch, asked only with --ask-csi-registration.
TEST_F(PublishTest, PodInfoFromTheRegistrarsSwitchOnly) {
  WriteObjects(/*pod_info=*/false, "Ephemeral", "shop");
  StartDriverAndRegistrar({"--requires-publish-pod"});
  std::string out;
  ASSERT_EQ(Run("publish", {"--ask-csi-registration"}, &out), 0) << out;
  EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "web-0");
  EXPECT_EQ(File("csi.storage.k8s.io_serviceAccount.name"), "web-sa");
}

// By default as every kubelet release: the registrar's --requires-publish-pod is never asked, so
// a CSIDriver without podInfoOnMount gets the driver no pod information.
TEST_F(PublishTest, TheRegistrarsSwitchAloneGivesNoPodInfoByDefault) {
  WriteObjects(/*pod_info=*/false, "Ephemeral", "shop");
  StartDriverAndRegistrar({"--requires-publish-pod"});
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  EXPECT_EQ(File("csi.storage.k8s.io_pod.uid"), "");  // not sent
  EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "impostor");  // the pod's own attribute
}

TEST_F(PublishTest, NoPodInfoForDriversThatDidNotAsk) {
  WriteObjects(/*pod_info=*/false, "Ephemeral", "shop");
  StartDriverAndRegistrar();
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  EXPECT_EQ(File("color"), "blue");
  EXPECT_EQ(File("csi.storage.k8s.io_pod.uid"), "");  // not sent
  EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "impostor");  // the pod's own attribute
}

TEST_F(PublishTest, DriverRejectingPodInfoGetsInvalidArgument) {
  StartDriverAndRegistrar({}, {"--reject-pod-info"});
  std::string out;
  EXPECT_EQ(Run("publish", {}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("code = InvalidArgument"));
  EXPECT_THAT(out, HasSubstr("does not accept (--reject-pod-info)"));
}

TEST_F(PublishTest, RefusalsPublishNothing) {
  StartDriverAndRegistrar();
  struct Case {
    const char* name;
    std::function<void()> setup;
    std::vector<std::string> extra;
    const char* error;
  } cases[] = {
      {"no Ephemeral mode", [&] { WriteObjects(true, "Persistent", "shop"); }, {},
       "volume mode \"Ephemeral\" not supported by driver sample.csi.example.com (only supports "
       "[\"Persistent\"])"},
      {"no CSIDriver", [&] { unlink((objects_dir_ + "/csidriver.yaml").c_str()); }, {},
       "volume mode \"Ephemeral\" not supported by driver sample.csi.example.com (no CSIDriver "
       "object)"},
      {"not allowed by policy", [&] { WriteObjects(true, "Ephemeral", "shop"); },
       {"--allowed-inline-drivers=other.example.com"},
       "inline CSI volumes of driver sample.csi.example.com are not allowed on this node"},
      {"secret in another namespace", [&] { WriteObjects(true, "Ephemeral", "kube-system"); }, {},
       "secrets are looked up in the pod's namespace \"shop\" only"},
  };
  for (const Case& c : cases) {
    c.setup();
    std::string out;
    EXPECT_EQ(Run("publish", c.extra, &out), 1) << c.name;
    EXPECT_THAT(out, HasSubstr(c.error)) << c.name;
    EXPECT_THAT(out, HasSubstr("nothing was published")) << c.name;
    EXPECT_THAT(DirEntries(root_), ::testing::IsEmpty()) << c.name;
  }
}

TEST_F(PublishTest, MalformedObjectsAreRefusedWithNothingLeftBehind) {
  StartDriverAndRegistrar();
  struct Case {
    std::string file;
    std::string text;
    const char* error;
  } cases[] = {
      {"pod.yaml", "kind: Pod\n  - : [", "pod.yaml: line "},
      {"pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
       "metadata.uid: Required value"},
      {"pod.yaml",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\nspec: {volumes: [{name: v, "
       "csi: {}}]}\n",
       "spec.volumes[0].csi.driver: Required value"},
      {"objects/csidriver.yaml",
       "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: "
       "{podInfoOnMount: perhaps}\n",
       "csidriver.yaml: CSIDriver x: spec.podInfoOnMount: must be true or false"},
      {"objects/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: '!'}\n",
       "secret.yaml: Secret s: data.k: is not valid base64"},
      {"objects/extra.json", "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"s\"}}",
       "extra.json: Service s: kind \"Service\" is not supported"},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(WriteFile(pod_file_, kPod));
    WriteObjects(true, "Ephemeral", "shop");
    unlink((objects_dir_ + "/extra.json").c_str());
    ASSERT_TRUE(WriteFile(dir_.Join(c.file), c.text));
    std::string out;
    EXPECT_EQ(Run("publish", {}, &out), 1) << c.error;
    EXPECT_THAT(out, HasSubstr(c.error));
    EXPECT_THAT(DirEntries(root_), ::testing::IsEmpty()) << c.error;
  }
}

TEST_F(PublishTest, PersistentVolumeThroughItsClaim) {
  ASSERT_TRUE(WriteFile(pod_file_, R"(apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, uid: uid-db}
spec:
  containers: [{name: db, image: postgres, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data-db-0}
)"));
  ASSERT_TRUE(WriteFile(objects_dir_ + "/pv.yaml", R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0, namespace: shop}
spec: {volumeName: pv-42}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-42}
spec:
  claimRef: {namespace: shop, name: data-db-0}
  accessModes: [ReadWriteOnce]
  csi:
    driver: sample.csi.example.com
    volumeHandle: vol-42
    volumeAttributes: {tier: gold}
)"));
  WriteObjects(true, "Persistent, Ephemeral", "shop");
  StartDriverAndRegistrar();
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  const std::string dir = root_ + "/pods/uid-db/volumes/kubernetes.io~csi/pv-42";
  std::string contents;
  ASSERT_TRUE(ReadFile(dir + "/mount/tier", &contents));
  EXPECT_EQ(contents, "gold");
  ASSERT_TRUE(ReadFile(dir + "/mount/csi.storage.k8s.io_ephemeral", &contents));
  EXPECT_EQ(contents, "false");
  ASSERT_TRUE(ReadFile(dir + "/vol_data.json", &contents));
  EXPECT_EQ(json::parse(contents)["volumeHandle"], "vol-42");
  EXPECT_EQ(json::parse(contents)["volumeLifecycleMode"], "Persistent");
  ASSERT_EQ(Run("unpublish", {}, &out), 0) << out;
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0);
}

// The sample driver's --record holds exactly the calls `publish` and `unpublish` report they
// sent, in the same JSON: what test/e2e/real-node.sh relies on when it compares the real
// kubelet's requests (recorded by the driver) with kubeletclient's report.
TEST_F(PublishTest, TheDriversRecordIsWhatTheReportsSayWasSent) {
  ASSERT_TRUE(WriteFile(pod_file_, R"(apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, uid: uid-db}
spec:
  containers:
  - name: db
    image: postgres
    volumeMounts: [{name: data, mountPath: /data}, {name: inline-vol, mountPath: /info}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data-db-0}
  - name: inline-vol
    csi: {driver: sample.csi.example.com, volumeAttributes: {color: blue}}
)"));
  ASSERT_TRUE(WriteFile(objects_dir_ + "/pv.yaml", R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0, namespace: shop}
spec: {volumeName: pv-42}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-42}
spec:
  claimRef: {namespace: shop, name: data-db-0}
  accessModes: [ReadWriteOnce]
  mountOptions: [noatime]
  csi:
    driver: sample.csi.example.com
    volumeHandle: vol-42
    volumeAttributes: {tier: gold}
    nodeStageSecretRef: {name: creds, namespace: shop}
)"));
  WriteObjects(true, "Persistent, Ephemeral", "shop");
  const std::string record = dir_.Join("calls.jsonl");
  StartDriverAndRegistrar({}, {"--stage-unstage", "--record=" + record});

  json reported = json::array();
  for (const char* command : {"publish", "unpublish"}) {
    std::string out;
    ASSERT_EQ(Run(command, {}, &out), 0) << out;
    const json report = json::parse(out.substr(out.find('{'), out.rfind('}') - out.find('{') + 1));
    // In the order sent: every volume's calls, then (unpublish) every volume's device calls.
    for (const char* key : {"calls", "deviceCalls"}) {
      for (const json& volume : report["volumes"]) {
        for (const json& call : volume.value(key, json::array())) reported.push_back(call);
      }
    }
  }
  std::string text;
  ASSERT_TRUE(ReadFile(record, &text));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("hunter2")));
  json recorded = json::array();
  std::vector<std::string> others;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    json call = json::parse(line);
    // The registrar's GetPluginInfo and the registration's NodeGetInfo are not a volume's.
    if (call["method"] == "GetPluginInfo" || call["method"] == "NodeGetInfo") {
      others.push_back(call["method"]);
    } else {
      recorded.push_back(call);
    }
  }
  EXPECT_EQ(recorded, reported);
  EXPECT_GE(reported.size(), 8u) << "stage, publish twice, unpublish twice, unstage, capabilities";
  EXPECT_THAT(others, ::testing::Contains("NodeGetInfo"));
}

// Objects no API server would accept, each built to make a path leave --root-dir or to be used
// as one: refused with the object, the field and the rule named, before any call to the
// registrar or the driver, with nothing created anywhere in the test's tree or at the target the
// object aimed at. A valid pod still publishes afterwards.
TEST_F(PublishTest, HostileObjectsAreRefusedBeforeAnythingHappens) {
  StartDriverAndRegistrar();
  // Where the escapes aim: outside this test's directory, unique to this run.
  const std::string target = "ndr-escape-" + dir_.path().substr(dir_.path().rfind('-') + 1);
  const std::string up = "../../../../../../../../../../tmp/";
  auto pod_with = [&](const std::string& from, const std::string& to) {
    ASSERT_TRUE(WriteFile(pod_file_, absl::StrReplaceAll(kPod, {{from, to}})));
  };
  const std::string claim_pod = R"(apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, uid: uid-db}
spec:
  containers: [{name: db, image: postgres, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data-db-0}
)";
  auto pv_named = [&](const std::string& name, const std::string& handle) {
    ASSERT_TRUE(WriteFile(pod_file_, claim_pod));
    ASSERT_TRUE(WriteFile(objects_dir_ + "/pv.yaml", absl::StrCat(R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0, namespace: shop}
spec: {volumeName: ")", name, R"("}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: ")", name, R"("}
spec:
  claimRef: {namespace: shop, name: data-db-0}
  accessModes: [ReadWriteOnce]
  csi: {driver: sample.csi.example.com, volumeHandle: ")", handle, R"("}
)")));
  };
  struct Case {
    std::string name;
    std::function<void()> setup;
    std::vector<std::string> errors;
  } cases[] = {
      {"pod UID climbing out", [&] { pod_with(kUid, up + target); },
       {"pod.yaml: Pod shop/web-0: metadata.uid: Invalid value: \"" + up + target +
        "\": may not contain '/'"}},
      {"volume name climbing out", [&] { pod_with("name: inline-vol", "name: " + up + target); },
       {"pod.yaml: Pod shop/web-0: [spec.volumes[0].name: Invalid value: \"" + up + target,
        "a lowercase RFC 1123 label must consist of",
        "spec.containers[0].volumeMounts[0].name: Not found: \"" + up + target}},
      {"PV name climbing out", [&] { pv_named(up + target, "vol-1"); },
       {"pv.yaml: PersistentVolume " + up + target + ": metadata.name: Invalid value: \"" + up +
        target,
        "a lowercase RFC 1123 subdomain must consist of"}},
      {"volume handle too long", [&] { pv_named("pv-1", std::string(2000, 'h')); },
       {"pv.yaml: PersistentVolume pv-1: spec.csi.volumeHandle: Too long: must have at most "
        "1024 bytes"}},
      {"driver name climbing out",
       [&] { pod_with("driver: sample.csi.example.com", "driver: ../../" + target); },
       {"spec.volumes[0].csi.driver: Invalid value: \"../../" + target}},
      {"secret name climbing out", [&] { pod_with("name: creds}", "name: ../creds}"); },
       {"spec.volumes[0].csi.nodePublishSecretRef.name: Invalid value: \"../creds\""}},
      {"pod name and namespace", [&] { pod_with("namespace: shop", "namespace: Shop_1"); },
       {"pod.yaml: Pod Shop_1/web-0: metadata.namespace: Invalid value: \"Shop_1\""}},
      {"CSIDriver name climbing out",
       [&] {
         ASSERT_TRUE(WriteFile(objects_dir_ + "/csidriver.yaml",
                               absl::StrReplaceAll(kCsiDriver, {{"{name: sample.csi.example.com}",
                                                                 "{name: ../../" + target + "}"},
                                                                {"POD_INFO", "true"},
                                                                {"MODES", "Ephemeral"}})));
       },
       {"csidriver.yaml: CSIDriver ../../" + target + ": metadata.name: Invalid value"}},
      {"secret key climbing out",
       [&] {
         ASSERT_TRUE(WriteFile(objects_dir_ + "/secret.yaml",
                               "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: "
                               "shop}\nstringData: {../password: hunter2}\n"));
       },
       {"secret.yaml: Secret shop/creds: [data[../password]: Invalid value: \"../password\"",
        "must not start with '..'"}},
  };
  const int calls = Calls();
  const std::set<std::string> tree = Tree(dir_.path());
  for (const Case& c : cases) {
    ASSERT_TRUE(WriteFile(pod_file_, kPod));
    WriteObjects(/*pod_info=*/true, "Ephemeral", "shop");
    unlink((objects_dir_ + "/pv.yaml").c_str());
    c.setup();
    std::string out;
    EXPECT_EQ(Run("publish", {}, &out), 1) << c.name << "\n" << out;
    for (const std::string& error : c.errors) EXPECT_THAT(out, HasSubstr(error)) << c.name;
    EXPECT_EQ(Calls(), calls) << c.name << ": the registrar or the driver was called";
    struct stat st;
    EXPECT_NE(lstat(("/tmp/" + target).c_str(), &st), 0) << c.name << ": /tmp/" << target;
    std::set<std::string> now = Tree(dir_.path());
    now.erase(objects_dir_ + "/pv.yaml");
    EXPECT_EQ(now, tree) << c.name;
    EXPECT_THAT(DirEntries(root_), ::testing::IsEmpty()) << c.name;
  }
  ASSERT_TRUE(WriteFile(pod_file_, kPod));
  WriteObjects(/*pod_info=*/true, "Ephemeral", "shop");
  unlink((objects_dir_ + "/pv.yaml").c_str());
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "web-0");
}

// Names the API server accepts are accepted: a generated pod name with a dot, the longest
// namespace, a static pod's UID.
TEST_F(PublishTest, RealisticNamesArePublished) {
  const std::string ns(63, 'n');
  ASSERT_TRUE(WriteFile(
      pod_file_, absl::StrReplaceAll(kPod, {{"name: web-0", "name: web.v2-7d9c5b8f4-x2x9k"},
                                            {"namespace: shop", "namespace: " + ns},
                                            {kUid, "8d3f0b1e2c7a4b19a1f0c3d2e5b6a7f8"}})));
  WriteObjects(/*pod_info=*/true, "Ephemeral", ns);
  StartDriverAndRegistrar();
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  std::string name;
  ASSERT_TRUE(ReadFile(root_ + "/pods/8d3f0b1e2c7a4b19a1f0c3d2e5b6a7f8/volumes/kubernetes.io~csi/"
                               "inline-vol/mount/csi.storage.k8s.io_pod.namespace",
                       &name));
  EXPECT_EQ(name, ns);
  ASSERT_EQ(Run("unpublish", {}, &out), 0) << out;
}

// A symbolic link planted in the root, leading out of it, is not followed.
TEST_F(PublishTest, ALinkOutOfTheRootIsNotFollowed) {
  StartDriverAndRegistrar();
  const std::string outside = dir_.Join("outside");
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/pods").c_str(), 0755), 0);
  ASSERT_EQ(symlink(outside.c_str(), (root_ + "/pods/" + kUid).c_str()), 0);
  std::string out;
  EXPECT_EQ(Run("publish", {}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("goes through \"" + root_ + "/pods/" + kUid +
                             "\", which resolves to \"" + outside +
                             "\", outside the root directory"));
  EXPECT_THAT(out, HasSubstr("nothing was published"));
  EXPECT_THAT(DirEntries(outside), ::testing::IsEmpty());
  EXPECT_THAT(driver_->Log(), ::testing::Not(HasSubstr("NodePublishVolume")));
}

// vol_data.json is read back from disk: as hostile as any object. A bad one stops unpublish
// before any call, names the file, the field and the rule, and loses nothing.
TEST_F(PublishTest, HostileVolDataIsRefusedBeforeAnyCall) {
  StartDriverAndRegistrar();
  std::string out;
  ASSERT_EQ(Run("publish", {}, &out), 0) << out;
  const std::string vol_data = VolumeDir() + "/vol_data.json";
  std::string original;
  ASSERT_TRUE(ReadFile(vol_data, &original));
  struct Case {
    std::string contents;
    std::string error;
  } cases[] = {
      {R"({"driverName": "../../x", "volumeHandle": "h"})",
       vol_data + ": driverName: Invalid value: \"../../x\": a lowercase RFC 1123 subdomain"},
      {absl::StrCat(R"({"driverName": "sample.csi.example.com", "volumeHandle": ")",
                    std::string(1025, 'h'), R"("})"),
       vol_data + ": volumeHandle: Too long: must have at most 1024 bytes"},
      {R"({"driverName": "sample.csi.example.com", "volumeHandle": ""})",
       vol_data + ": volumeHandle: Required value"},
      {"not json", vol_data + ": malformed"},
      {std::string(100 * 1024, ' '), vol_data + ": larger than 65536 bytes"},
  };
  const int calls = Calls();
  for (const Case& c : cases) {
    ASSERT_TRUE(WriteFile(vol_data, c.contents));
    EXPECT_EQ(Run("unpublish", {}, &out), 1) << c.error << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.error));
    EXPECT_THAT(out, HasSubstr("nothing was unpublished"));
    EXPECT_EQ(Calls(), calls) << c.error << ": the registrar or the driver was called";
    EXPECT_EQ(File("csi.storage.k8s.io_pod.name"), "web-0") << c.error;  // lost nothing
  }
  ASSERT_TRUE(WriteFile(vol_data, original));
  ASSERT_EQ(Run("unpublish", {}, &out), 0) << out;
  struct stat st;
  EXPECT_NE(stat(VolumeDir().c_str(), &st), 0);
}

TEST_F(PublishTest, UnregisteredDriverIsAClearError) {
  std::string out;  // No registrar: nothing is registered.
  EXPECT_EQ(Run("publish", {}, &out), 1);
  EXPECT_THAT(out, HasSubstr("driver name sample.csi.example.com not found in the list of "
                             "registered CSI drivers"));
}

}  // namespace
}  // namespace ndr

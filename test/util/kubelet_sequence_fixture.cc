#include "test/util/kubelet_sequence_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "test/util/subprocess.h"

namespace ndr::testing {

RecordingDriver::RecordingDriver(const std::string& socket, std::string root)
    : root_(std::move(root)) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(static_cast<csi::v1::Identity::Service*>(this));
  builder.RegisterService(static_cast<csi::v1::Node::Service*>(this));
  server_ = builder.BuildAndStart();
}

RecordingDriver::~RecordingDriver() { server_->Shutdown(std::chrono::system_clock::now()); }

void RecordingDriver::Configure(Config config) {
  std::lock_guard<std::mutex> lock(mu_);
  config_ = std::move(config);
}

std::vector<std::string> RecordingDriver::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(calls_, {});
}

std::vector<std::string> RecordingDriver::TakeTokens() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(tokens_, {});
}

std::vector<std::string> RecordingDriver::TakeMethods() {
  std::vector<std::string> names;
  for (const std::string& call : Take()) names.push_back(call.substr(0, call.find(' ')));
  return names;
}

grpc::Status RecordingDriver::GetPluginInfo(grpc::ServerContext*,
                                            const csi::v1::GetPluginInfoRequest*,
                                            csi::v1::GetPluginInfoResponse* response) {
  response->set_name(kDriver);
  return grpc::Status::OK;
}

grpc::Status RecordingDriver::NodeGetInfo(grpc::ServerContext*,
                                          const csi::v1::NodeGetInfoRequest* request,
                                          csi::v1::NodeGetInfoResponse* response) {
  response->set_node_id("node-1");
  return Record("NodeGetInfo", *request);
}

grpc::Status RecordingDriver::NodeGetCapabilities(
    grpc::ServerContext*, const csi::v1::NodeGetCapabilitiesRequest* request,
    csi::v1::NodeGetCapabilitiesResponse* response) {
  using Rpc = csi::v1::NodeServiceCapability::RPC;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto [on, type] : {std::pair{config_.stage, Rpc::STAGE_UNSTAGE_VOLUME},
                          std::pair{config_.stats, Rpc::GET_VOLUME_STATS},
                          std::pair{config_.expand, Rpc::EXPAND_VOLUME},
                          std::pair{config_.condition, Rpc::VOLUME_CONDITION},
                          std::pair{config_.mount_group, Rpc::VOLUME_MOUNT_GROUP},
                          std::pair{config_.multi_writer, Rpc::SINGLE_NODE_MULTI_WRITER},
                          std::pair{config_.volume_health, Rpc::GET_VOLUME_HEALTH},
                          std::pair{config_.storage_health, Rpc::GET_STORAGE_HEALTH}}) {
    if (on) response->add_capabilities()->mutable_rpc()->set_type(type);
  }
  return RecordLocked("NodeGetCapabilities", *request);
}

grpc::Status RecordingDriver::NodeStageVolume(grpc::ServerContext*,
                                              const csi::v1::NodeStageVolumeRequest* request,
                                              csi::v1::NodeStageVolumeResponse*) {
  return Record("NodeStageVolume", *request);
}

grpc::Status RecordingDriver::NodeUnstageVolume(grpc::ServerContext*,
                                                const csi::v1::NodeUnstageVolumeRequest* request,
                                                csi::v1::NodeUnstageVolumeResponse*) {
  return Record("NodeUnstageVolume", *request);
}

grpc::Status RecordingDriver::NodePublishVolume(grpc::ServerContext*,
                                                const csi::v1::NodePublishVolumeRequest* request,
                                                csi::v1::NodePublishVolumeResponse*) {
  csi::v1::NodePublishVolumeRequest recorded = *request;
  // Tokens travel in the volume context, or from kubelet 1.35 in the secrets.
  for (auto* map : {recorded.mutable_volume_context(), recorded.mutable_secrets()}) {
    auto tokens = map->find("csi.storage.k8s.io/serviceAccount.tokens");
    if (tokens != map->end()) {
      std::lock_guard<std::mutex> lock(mu_);
      tokens_.push_back(tokens->second);
      tokens->second = "<tokens>";
    }
  }
  grpc::Status status = Record("NodePublishVolume", recorded);
  std::lock_guard<std::mutex> lock(mu_);
  if (!config_.make_targets) return status;
  // A directory for a mounted volume, a file for a block volume (a real driver binds a device
  // there; an empty file is enough for kubelet's mapping without host changes).
  if (status.ok() && request->volume_capability().has_block()) {
    close(open(request->target_path().c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0640));
  } else if (status.ok()) {
    mkdir(request->target_path().c_str(), 0750);
  }
  return status;
}

grpc::Status RecordingDriver::NodeUnpublishVolume(
    grpc::ServerContext*, const csi::v1::NodeUnpublishVolumeRequest* request,
    csi::v1::NodeUnpublishVolumeResponse*) {
  grpc::Status status = Record("NodeUnpublishVolume", *request);
  std::lock_guard<std::mutex> lock(mu_);
  if (status.ok() && config_.make_targets && rmdir(request->target_path().c_str()) != 0 && errno == ENOTDIR) {
    unlink(request->target_path().c_str());
  }
  return status;
}

grpc::Status RecordingDriver::NodeExpandVolume(grpc::ServerContext*,
                                               const csi::v1::NodeExpandVolumeRequest* request,
                                               csi::v1::NodeExpandVolumeResponse* response) {
  response->set_capacity_bytes(request->capacity_range().required_bytes());
  return Record("NodeExpandVolume", *request);
}

grpc::Status RecordingDriver::NodeGetVolumeStats(
    grpc::ServerContext*, const csi::v1::NodeGetVolumeStatsRequest* request,
    csi::v1::NodeGetVolumeStatsResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  *response = config_.stats_response;
  return RecordLocked("NodeGetVolumeStats", *request);
}

grpc::Status RecordingDriver::NodeGetVolumeHealth(
    grpc::ServerContext*, const csi::v1::NodeGetVolumeHealthRequest* request,
    csi::v1::NodeGetVolumeHealthResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  *response = config_.volume_health_response;
  return RecordLocked("NodeGetVolumeHealth", *request);
}

grpc::Status RecordingDriver::NodeGetStorageHealth(
    grpc::ServerContext*, const csi::v1::NodeGetStorageHealthRequest* request,
    csi::v1::NodeGetStorageHealthResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  *response = config_.storage_health_response;
  return RecordLocked("NodeGetStorageHealth", *request);
}

grpc::Status RecordingDriver::Record(const std::string& method,
                                     const google::protobuf::Message& request) {
  std::lock_guard<std::mutex> lock(mu_);
  return RecordLocked(method, request);
}

grpc::Status RecordingDriver::RecordLocked(const std::string& method,
                                           const google::protobuf::Message& request) {
  const std::string text = absl::StrReplaceAll(request.ShortDebugString(), {{root_, "<root>"}});
  calls_.push_back(text.empty() ? method : absl::StrCat(method, " ", text));
  auto failure = config_.fail.find(method);
  return failure == config_.fail.end() ? grpc::Status::OK : failure->second;
}

FakeRegistrar::FakeRegistrar(const std::string& socket, std::string endpoint, std::string name)
    : endpoint_(std::move(endpoint)), name_(std::move(name)) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
}

FakeRegistrar::~FakeRegistrar() { server_->Shutdown(std::chrono::system_clock::now()); }

grpc::Status FakeRegistrar::GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                                    pluginregistration::PluginInfo* info) {
  info->set_type("CSIPlugin");
  info->set_name(name_);
  info->set_endpoint(endpoint_);
  info->add_supported_versions("1.0.0");
  return grpc::Status::OK;
}

grpc::Status FakeRegistrar::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus*,
    pluginregistration::RegistrationStatusResponse*) {
  return grpc::Status::OK;
}

namespace {

// The name in a volume's YAML, "{name: data, ...}".
std::string VolumeName(const std::string& volume) {
  const size_t start = volume.find("name: ") + 6;
  return volume.substr(start, volume.find_first_of(",}", start) - start);
}

}  // namespace

std::string PodYaml(const std::string& name, const std::string& uid, const std::string& volume,
                    const std::string& extra_spec, bool block) {
  return absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: ", name,
                      ", namespace: shop, uid: ", uid, "}\nspec:\n", extra_spec,
                      "  containers:\n  - name: app\n    image: busybox\n",
                      block ? "    volumeDevices: [{name: " : "    volumeMounts: [{name: ",
                      VolumeName(volume),
                      block ? ", devicePath: /dev/xvda}]\n" : ", mountPath: /data}]\n",
                      "  volumes:\n  - ", volume, "\n");
}

std::string ClaimAndVolume(const std::string& access_modes, const std::string& csi_extra,
                           const std::string& spec_extra, const std::string& claim) {
  return absl::StrCat(R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: )", claim, R"(, namespace: shop, uid: claim-uid-1}
spec: {volumeName: pv-1}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  claimRef: {namespace: shop, name: )", claim, R"(, uid: claim-uid-1}
  accessModes: )", access_modes, R"(
  mountOptions: [noatime]
)", spec_extra, R"(  csi:
    driver: rec.csi.example.com
    volumeHandle: vol-1
    fsType: ext4
    volumeAttributes: {tier: gold}
)", csi_extra);
}

std::string BlockClaimAndVolume(const std::string& access_modes, const std::string& csi_extra) {
  return ClaimAndVolume(access_modes, csi_extra, "  volumeMode: Block\n");
}

std::string CsiDriverYaml(const std::string& spec) {
  return absl::StrCat("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: ", kDriver,
                      "}\nspec: ", spec, "\n");
}

std::string AttachmentYaml(const std::string& status) {
  return absl::StrCat("apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: ",
                      kVol1Attachment, "}\nspec: {attacher: ", kDriver,
                      ", nodeName: node-1, source: {persistentVolumeName: pv-1}}\nstatus: ",
                      status, "\n");
}

const std::vector<std::string>& PublishedPvFiles() {
  static const auto* files = new std::vector<std::string>{
      "plugins/",
      "plugins/kubernetes.io/",
      "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/rec.csi.example.com/",
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha, "/"),
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha, "/globalmount/"),
      absl::StrCat("plugins/kubernetes.io/csi/rec.csi.example.com/", kVol1Sha,
                   "/vol_data.json = {\"driverName\":\"rec.csi.example.com\","
                   "\"volumeHandle\":\"vol-1\"}\n"),
      "pods/",
      "pods/uid-a/",
      "pods/uid-a/volumes/",
      "pods/uid-a/volumes/kubernetes.io~csi/",
      "pods/uid-a/volumes/kubernetes.io~csi/pv-1/",
      "pods/uid-a/volumes/kubernetes.io~csi/pv-1/mount/",
      absl::StrCat("pods/uid-a/volumes/kubernetes.io~csi/pv-1/vol_data.json = {\"attachmentID\":\"",
                   kVol1Attachment,
                   "\",\"driverName\":\"rec.csi.example.com\",\"nodeName\":\"node-1\","
                   "\"specVolID\":\"pv-1\",\"volumeHandle\":\"vol-1\","
                   "\"volumeLifecycleMode\":\"Persistent\"}\n"),
  };
  return *files;
}

const std::vector<std::string>& TornDownFiles() {
  static const auto* files = new std::vector<std::string>{
      "plugins/",
      "plugins/kubernetes.io/",
      "plugins/kubernetes.io/csi/",
      "plugins/kubernetes.io/csi/rec.csi.example.com/",
      "pods/",
      "pods/uid-a/",
      "pods/uid-a/volumes/",
      "pods/uid-a/volumes/kubernetes.io~csi/",
  };
  return *files;
}

const char kPvTarget[] = "<root>/pods/uid-a/volumes/kubernetes.io~csi/pv-1/mount";
const char kStagingPath[] =
    "<root>/plugins/kubernetes.io/csi/rec.csi.example.com/"
    "d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount";

void KubeletSequenceTest::SetUp() {
  for (const std::string& d : {reg_, root_, objects_}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  registrar_ = std::make_unique<FakeRegistrar>(reg_ + "/rec-reg.sock", dir_.Join("csi.sock"));
}

void KubeletSequenceTest::Objects(const std::map<std::string, std::string>& files) {
  for (const std::string& name : DirEntries(objects_)) unlink((objects_ + "/" + name).c_str());
  for (const auto& [name, text] : files) ASSERT_TRUE(WriteFile(objects_ + "/" + name, text));
}

int KubeletSequenceTest::Run(const std::string& command, const std::string& pod,
                             std::string* output, const std::vector<std::string>& flags) {
  return RunCommand(command, pod, output, nullptr, flags);
}

int KubeletSequenceTest::RunReport(const std::string& command, const std::string& pod,
                                   std::string* log, nlohmann::json* report,
                                   const std::vector<std::string>& flags,
                                   std::string* stdout_text) {
  std::string text;
  const int code = RunCommand(command, pod, log, &text, flags);
  *report = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (report->is_discarded()) *report = nullptr;
  if (stdout_text != nullptr) *stdout_text = text;
  return code;
}

int KubeletSequenceTest::RunCommand(const std::string& command, const std::string& pod,
                                    std::string* output, std::string* stdout_text,
                                    const std::vector<std::string>& flags) {
  const std::string pod_file = dir_.Join(absl::StrCat("pod", runs_, ".yaml"));
  EXPECT_TRUE(WriteFile(pod_file, pod));
  std::vector<std::string> argv = {Runfile("kubeletclient/kubeletclient"), command,
                                   "--pod=" + pod_file, "--plugin-registry-dir=" + reg_,
                                   "--root-dir=" + root_, "--node-name=node-1",
                                   "--get-info-timeout=60s", "--notify-timeout=60s",
                                   "--block-host-ops=skip"};
  if (command != "unpublish") {
    argv.push_back("--objects=" + objects_);
    argv.push_back(absl::StrCat("--allowed-inline-drivers=", kDriver));
  }
  // The release these goldens were written from: kubelet v1.26 with the three gates a kubelet
  // has had on since (ReadWriteOncePod, SELinuxMountReadWriteOncePod, CSINodeExpandSecret),
  // unless the test names a release; a test's --feature-gates are applied over them.
  bool release_given = false;
  for (const std::string& flag : flags) {
    if (absl::StartsWith(flag, "--kubelet-version=")) release_given = true;
  }
  std::vector<std::string> gates;
  if (!release_given) {
    argv.push_back("--kubelet-version=1.26");
    gates.push_back(
        "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSINodeExpandSecret=true");
  }
  for (const std::string& flag : flags) {
    absl::string_view value = flag;
    if (absl::ConsumePrefix(&value, "--feature-gates=")) {
      gates.emplace_back(value);
    } else {
      argv.push_back(flag);
    }
  }
  if (!gates.empty()) argv.push_back("--feature-gates=" + absl::StrJoin(gates, ","));
  const std::string out_path = dir_.Join(absl::StrCat("run", runs_, ".out"));
  Subprocess run(argv, dir_.Join(absl::StrCat("run", runs_++, ".log")),
                 stdout_text != nullptr ? out_path : "");
  const std::optional<int> code = run.Wait();
  *output = run.Log();
  if (stdout_text != nullptr) ReadFile(out_path, stdout_text);
  return code.value_or(-1);
}

std::vector<std::string> KubeletSequenceTest::Files() {
  // nftw's callback cannot carry state.
  static std::vector<std::string>* found;
  static const std::string* root;
  std::vector<std::string> files;
  found = &files;
  root = &root_;
  nftw(
      root_.c_str(),
      [](const char* path, const struct stat* st, int, struct FTW*) {
        std::string relative = std::string(path).substr(std::min(root->size() + 1, strlen(path)));
        if (relative.empty()) return 0;
        if (S_ISDIR(st->st_mode)) {
          found->push_back(relative + "/");
        } else if (S_ISLNK(st->st_mode)) {
          char target[PATH_MAX] = {};
          if (readlink(path, target, sizeof(target) - 1) < 0) target[0] = '\0';
          found->push_back(relative + " -> " + absl::StrReplaceAll(target, {{*root, "<root>"}}));
        } else {
          std::string contents;
          ReadFile(path, &contents);
          found->push_back(relative + " = " + contents);
        }
        return 0;
      },
      16, FTW_PHYS);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ndr::testing

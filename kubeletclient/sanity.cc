#include "kubeletclient/sanity.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <functional>
#include <optional>
#include <random>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kubeletclient/csi/publisher.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/pluginmanager/plugin_watcher.h"
#include "kubeletclient/volume_command.h"

namespace ndr::kubelet {
namespace {

using Verdict = CheckResult::Verdict;

constexpr char kNamespace[] = "kubeletclient-sanity";

// The checks of each volume mode, in the order they run.
constexpr const char* kVolumeChecks[] = {
    "publish",  "target", "restart-replay",  "second-pod", "read-only", "stats", "expand",
    "unpublish-twice", "teardown", "unpublish-removed-target", "unstage-repeated", "clean"};

// A random UUID (version 4), as the API server gives pods and claims.
std::string RandomUid() {
  static std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng(), b = rng();
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                         0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

// Whether SIGINT or SIGTERM is pending (the caller blocks both).
bool SignalPending() {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
}

// The mount points at or below `dir`, from /proc/self/mountinfo (its fifth field, with the
// kernel's octal escapes of space, tab, newline and backslash undone).
std::vector<std::string> MountsUnder(const std::string& dir) {
  std::vector<std::string> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 5) continue;
    std::string path;
    const std::string& raw = fields[4];
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 3 < raw.size()) {
        path += static_cast<char>(std::stoi(raw.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        path += raw[i];
      }
    }
    if (path == dir || absl::StartsWith(path, dir + "/")) mounts.push_back(path);
  }
  return mounts;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// What a SentCall's request says, for a FAIL's details.
std::string Describe(const SentCall& call) {
  return absl::StrCat(call.method, " ", call.request_json);
}

// The calls of an outcome, one line: methods and the paths they named.
std::string CallSummary(const std::vector<SentCall>& calls) {
  std::vector<std::string> parts;
  for (const SentCall& call : calls) {
    if (call.method == "NodeGetCapabilities") continue;
    parts.push_back(call.method);
  }
  return parts.empty() ? "no call" : absl::StrJoin(parts, ", ");
}

// The last call of `method` among `calls`, if any.
const SentCall* LastCall(const std::vector<SentCall>& calls, const std::string& method) {
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if (it->method == method) return &*it;
  }
  return nullptr;
}

// One pod of a scenario: what was published for it.
struct PodRun {
  Pod pod;
  std::optional<VolumePlan> plan;
  VolumeOutcome publish;  // the calls of its publish
  bool published = false;  // and not torn down yet
};

class Judge {
 public:
  Judge(const SanityOptions& options, std::ostream& out) : options_(options), out_(out) {
    if (!options.only.empty()) only_.emplace(options.only, std::regex::ECMAScript);
    if (!options.skip.empty()) skip_.emplace(options.skip, std::regex::ECMAScript);
  }

  SanityReport Run();

 private:
  // Whether `name` is one of the checks asked for.
  bool Selected(const std::string& name) const {
    if (only_.has_value() && !std::regex_search(name, *only_)) return false;
    if (skip_.has_value() && std::regex_search(name, *skip_)) return false;
    return true;
  }
  void Record(CheckResult result);
  void Pass(const std::string& name, const std::string& kubelet, const std::string& summary) {
    Record({name, Verdict::kPass, summary, {}, kubelet});
  }
  void Fail(const std::string& name, const std::string& kubelet, const std::string& summary,
            std::vector<std::string> details) {
    Record({name, Verdict::kFail, summary, std::move(details), kubelet});
  }
  void Skip(const std::string& name, const std::string& kubelet, const std::string& summary) {
    Record({name, Verdict::kSkip, summary, {}, kubelet});
  }
  bool Interrupted() {
    if (!report_.interrupted && SignalPending()) {
      report_.interrupted = true;
      out_ << "Interrupted: skipping the remaining checks and cleaning up" << std::endl;
    }
    return report_.interrupted;
  }

  bool Register();
  void JudgeNodeInfo(const DriverInfo& info);
  void ReadCapabilities();
  void RunScenario(const std::string& mode, const std::string& handle, int index);
  // Skips the volume checks from kVolumeChecks[from] on, for `why`.
  void SkipScenario(const std::string& prefix, const std::string& why, size_t from = 0);

  ObjectSet ScenarioObjects(const std::string& mode, const std::string& handle,
                            const std::string& pv_name, std::vector<std::string>* notes);
  Pod MakePod(const std::string& name, const std::string& claim, bool block, bool read_only);
  // Plans and publishes `run.pod`: OK, or why it could not be planned or published.
  absl::Status Publish(const ObjectSet& objects, PodRun* run);
  // Tears down `run.pod` as `kubeletclient unpublish` would; the calls go to `calls`.
  absl::Status TearDown(PodRun* run, std::vector<SentCall>* calls);
  // Removes what is left of the pods' directories, when no mount is below them.
  void CleanUp(std::vector<PodRun*> runs);

  const SanityOptions& options_;
  std::ostream& out_;
  std::optional<std::regex> only_, skip_;
  SanityReport report_;
  ObjectSet given_;
  DriverRegistry registry_;
  DriverInfo driver_;
  bool stages_ = false, expands_ = false, stats_ = false;
};

void Judge::Record(CheckResult result) {
  if (!Selected(result.name)) return;
  const char* word = result.verdict == Verdict::kPass   ? "PASS"
                     : result.verdict == Verdict::kFail ? "FAIL"
                                                        : "SKIP";
  out_ << word << "  " << result.name << ": " << result.summary << "\n";
  for (const std::string& detail : result.details) out_ << "      " << detail << "\n";
  if (result.verdict == Verdict::kFail && !result.kubelet.empty()) {
    out_ << "      kubelet: " << result.kubelet << "\n";
  }
  out_.flush();
  // A test's hook (sanity_process_test): stop here, as if the machine were slow, so that a
  // signal can be sent at a known point. Not an option: nothing a user needs.
  if (const char* stop = getenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
      stop != nullptr && result.name == stop) {
    raise(SIGSTOP);
  }
  (result.verdict == Verdict::kPass   ? report_.passed
   : result.verdict == Verdict::kFail ? report_.failed
                                      : report_.skipped)++;
  report_.checks.push_back(std::move(result));
}

bool Judge::Register() {
  const std::string check = "registration/handshake";
  const std::string kubelet =
      "pluginmanager operation_generator.go GenerateRegisterPluginFunc: GetInfo, "
      "csi_plugin.go ValidatePlugin and RegisterPlugin (NodeGetInfo), NotifyRegistrationStatus";
  std::vector<std::string> sockets;
  if (!options_.registration_socket.empty()) {
    sockets.push_back(options_.registration_socket);
  } else {
    absl::StatusOr<std::unique_ptr<PluginWatcher>> scan = PluginWatcher::Start(
        options_.plugin_registry_dir, [&sockets](const std::string& s) { sockets.push_back(s); },
        [](const std::string&) {});
    if (!scan.ok()) {
      Fail(check, kubelet, std::string(scan.status().message()), {});
      return false;
    }
  }
  CsiHandler csi(&registry_, options_.csi);
  std::vector<std::string> errors, names;
  for (const std::string& socket : sockets) {
    HandshakeResult result =
        RegisterSocket(socket, {{kCsiPluginType, &csi}}, options_.handshake, /*calls=*/nullptr);
    if (result.status.ok() && result.info.has_value()) {
      names.push_back(result.info->name());
    } else {
      errors.push_back(absl::StrCat(socket, ": ", result.status.message()));
    }
  }
  if (names.size() != 1) {
    std::vector<std::string> details = errors;
    const std::string summary =
        names.empty()
            ? (sockets.empty() ? absl::StrCat("no registration socket in ",
                                              options_.plugin_registry_dir)
                               : "no CSI driver registered")
            : absl::StrCat(names.size(), " CSI drivers registered (", absl::StrJoin(names, ", "),
                           "); give --registration-socket to judge one");
    Fail(check, kubelet, summary, details);
    return false;
  }
  std::optional<DriverInfo> info = registry_.Get(names[0]);
  driver_ = *info;
  report_.driver = driver_.name;
  Pass(check, kubelet,
       absl::StrCat("driver ", driver_.name, " registered, CSI version ", driver_.version,
                    ", endpoint ", driver_.endpoint,
                    errors.empty() ? "" : absl::StrCat(" (", errors.size(), " other sockets failed)")));
  JudgeNodeInfo(driver_);
  return true;
}

void Judge::JudgeNodeInfo(const DriverInfo& info) {
  const std::string kubelet =
      "csi_plugin.go RegisterPlugin and nodeinfomanager.go InstallCSIDriver: the node ID goes to "
      "the node's annotation and CSINode, topology keys become node labels, the limit the "
      "CSINode's allocatable count";
  std::vector<std::string> problems;
  if (info.node_id.empty()) problems.push_back("node_id is empty");
  for (const auto& [key, value] : info.topology) {
    for (const std::string& m : IsQualifiedName(key)) {
      problems.push_back(absl::StrCat("topology key \"", key, "\" is not a valid label key: ", m));
    }
  }
  if (info.max_volumes_per_node < 0) {
    problems.push_back(
        absl::StrCat("max_volumes_per_node is negative (", info.max_volumes_per_node, ")"));
  }
  if (!problems.empty()) {
    Fail("registration/node-info", kubelet, "NodeGetInfo's answer cannot be used", problems);
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, value] : info.topology) keys.push_back(key);
  Pass("registration/node-info", kubelet,
       absl::StrCat("node ID \"", info.node_id, "\", topology keys [", absl::StrJoin(keys, ", "),
                    "], max volumes ", info.max_volumes_per_node));
}

void Judge::ReadCapabilities() {
  const std::string kubelet =
      "csi_client.go nodeSupportsStageUnstage, nodeSupportsNodeExpand, nodeSupportsVolumeStats: "
      "a NodeGetCapabilities before each decision";
  CsiNodeClient client(driver_.endpoint, options_.node.timeout);
  absl::StatusOr<bool> stage = client.NodeSupportsStageUnstage();
  absl::StatusOr<bool> expand = client.NodeSupportsNodeExpand();
  absl::StatusOr<bool> stats = client.NodeSupportsVolumeStats();
  for (const absl::StatusOr<bool>* answer : {&stage, &expand, &stats}) {
    if (!answer->ok()) {
      Fail("registration/capabilities", kubelet, "NodeGetCapabilities failed",
           {std::string(answer->status().message())});
      return;
    }
  }
  stages_ = *stage;
  expands_ = *expand;
  stats_ = *stats;
  std::vector<std::string> have;
  if (stages_) have.push_back("STAGE_UNSTAGE_VOLUME");
  if (expands_) have.push_back("EXPAND_VOLUME");
  if (stats_) have.push_back("GET_VOLUME_STATS");
  Pass("registration/capabilities", kubelet,
       have.empty() ? "none of STAGE_UNSTAGE_VOLUME, EXPAND_VOLUME, GET_VOLUME_STATS"
                    : absl::StrJoin(have, ", "));
}

ObjectSet Judge::ScenarioObjects(const std::string& mode, const std::string& handle,
                                 const std::string& pv_name, std::vector<std::string>* notes) {
  ObjectSet objects = given_;
  PersistentVolume pv;
  // A PV among --objects with this handle lends what the driver needs to see.
  for (const auto& [name, given] : given_.volumes) {
    if (given.csi.has_value() && given.csi->driver == driver_.name &&
        given.csi->volume_handle == handle) {
      pv = given;
      notes->push_back(absl::StrCat("attributes, secrets and mount options of PV ", name));
      break;
    }
  }
  pv.name = pv_name;
  pv.volume_mode = mode == "block" ? "Block" : "Filesystem";
  if (pv.access_modes.empty()) pv.access_modes = {"ReadWriteOnce"};
  pv.capacity = Quantity::FromValue(int64_t{1} << 30, Quantity::Format::kBinarySi);
  if (!pv.csi.has_value()) pv.csi.emplace();
  pv.csi->driver = driver_.name;
  pv.csi->volume_handle = handle;
  pv.csi->read_only = false;
  PersistentVolumeClaim claim;
  claim.ns = kNamespace;
  claim.name = pv_name;
  claim.uid = RandomUid();
  claim.volume_name = pv_name;
  claim.requested = pv.capacity;
  claim.phase = "Bound";
  claim.capacity = pv.capacity;
  pv.claim_ref = ClaimReference{claim.ns, claim.name, claim.uid};
  objects.volumes[pv.name] = pv;
  objects.claims[{claim.ns, claim.name}] = claim;
  if (objects.csi_drivers.count(driver_.name) == 0) {
    CsiDriverObject csi_driver;
    csi_driver.name = driver_.name;
    csi_driver.attach_required = false;
    csi_driver.pod_info_on_mount = false;
    csi_driver.volume_lifecycle_modes = {"Persistent"};  // the API server's default
    objects.csi_drivers[driver_.name] = csi_driver;
    notes->push_back("no CSIDriver object given: attachRequired false, podInfoOnMount false");
  }
  const CsiDriverObject& csi_driver = objects.csi_drivers[driver_.name];
  if (csi_driver.attach_required.value_or(true)) {
    const std::string name = AttachmentName(handle, driver_.name, options_.node.node_name);
    if (objects.attachments.count(name) == 0) {
      VolumeAttachment attachment;
      attachment.name = name;
      attachment.attacher = driver_.name;
      attachment.node_name = options_.node.node_name;
      attachment.persistent_volume_name = pv_name;
      attachment.attached = true;
      objects.attachments[name] = attachment;
      notes->push_back("the CSIDriver requires attach: an attached VolumeAttachment without "
                       "metadata is assumed (no controller was asked)");
    }
  }
  return objects;
}

Pod Judge::MakePod(const std::string& name, const std::string& claim, bool block,
                   bool read_only) {
  Pod pod;
  pod.name = name;
  pod.ns = kNamespace;
  pod.uid = RandomUid();
  Container container;
  container.field = "spec.containers[0]";
  container.name = "c";
  (block ? container.volume_devices : container.volume_mounts).push_back("data");
  pod.containers.push_back(container);
  PodVolume volume;
  volume.name = "data";
  volume.source_types = {"persistentVolumeClaim"};
  volume.claim_name = claim;
  volume.claim_read_only = read_only;
  pod.volumes.push_back(volume);
  return pod;
}

absl::Status Judge::Publish(const ObjectSet& objects, PodRun* run) {
  PodPlan plan = PlanVolumes(run->pod, objects, registry_.All(), options_.node);
  CheckNodeState(options_.node, &plan);
  WaitForAttachments(objects, options_.node.node_name, &plan);
  if (absl::Status s = plan.FirstError(); !s.ok()) return s;
  std::vector<VolumePlan*> volumes = plan.ToPublish();
  if (volumes.size() != 1) return absl::InternalError("the pod's volume was not planned");
  run->plan = *volumes[0];
  run->publish = PublishVolume(*run->plan, objects, run->pod.ns, options_.node);
  // What the driver may have published is torn down at the end, whatever the answer.
  run->published = true;
  return run->publish.status;
}

absl::Status Judge::TearDown(PodRun* run, std::vector<SentCall>* calls) {
  absl::StatusOr<std::vector<UnpublishPlan>> plans =
      PlanUnpublish(options_.node.root_dir, run->pod.uid);
  if (!plans.ok()) return plans.status();
  absl::Status status;
  for (const UnpublishPlan& plan : *plans) {
    VolumeOutcome outcome = UnpublishVolume(plan, registry_.All(), options_.node);
    calls->insert(calls->end(), outcome.calls.begin(), outcome.calls.end());
    if (!outcome.status.ok() && status.ok()) status = outcome.status;
  }
  if (status.ok()) run->published = false;
  return status;
}

void Judge::CleanUp(std::vector<PodRun*> runs) {
  for (PodRun* run : runs) {
    if (!run->published) continue;
    std::vector<SentCall> calls;
    if (absl::Status s = TearDown(run, &calls); !s.ok()) {
      out_ << "Cleanup: pod " << run->pod.name << " could not be torn down: " << s.message()
           << "\n";
    }
  }
}

void Judge::SkipScenario(const std::string& prefix, const std::string& why, size_t from) {
  for (size_t i = from; i < std::size(kVolumeChecks); ++i) Skip(prefix + kVolumeChecks[i], "", why);
}

void Judge::RunScenario(const std::string& mode, const std::string& handle, int index) {
  const bool block = mode == "block";
  const std::string prefix =
      options_.volume_handles.size() > 1 ? absl::StrCat(mode, "/", handle, "/") : mode + "/";
  if (Interrupted()) {
    SkipScenario(prefix, "interrupted");
    return;
  }
  const std::string pv_name = absl::StrCat("sanity-", block ? "block" : "fs", "-", index);
  std::vector<std::string> notes;
  ObjectSet objects = ScenarioObjects(mode, handle, pv_name, &notes);
  PodRun a{MakePod("sanity-a", pv_name, block, false)};
  PodRun b{MakePod("sanity-b", pv_name, block, false)};
  PodRun c{MakePod("sanity-c", pv_name, block, true)};
  const std::string publish_ref =
      block ? "operation_generator.go GenerateMapVolumeFunc: csi_block.go SetUpDevice "
              "(NodeStageVolume at volumeDevices/staging/<pv>), MapPodDevice (NodePublishVolume "
              "at volumeDevices/publish/<pv>/<pod uid>)"
            : "operation_generator.go GenerateMountVolumeFunc: csi_attacher.go MountDevice "
              "(NodeStageVolume at .../globalmount), csi_mounter.go SetUpAt (NodePublishVolume "
              "at pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount)";

  // 1. Publish, as kubelet publishes for a pod.
  const bool explicit_mode = !options_.volume_modes.empty();
  if (absl::Status s = Publish(objects, &a); !s.ok()) {
    const SentCall* last = a.publish.calls.empty() ? nullptr : &a.publish.calls.back();
    const bool refused = s.code() == absl::StatusCode::kInvalidArgument ||
                         s.code() == absl::StatusCode::kUnimplemented ||
                         s.code() == absl::StatusCode::kFailedPrecondition;
    CleanUp({&a});
    if (!a.plan.has_value()) {
      // Not the driver's doing: the objects given (a CSIDriver, secrets) stop kubelet first.
      SkipScenario(prefix, absl::StrCat("kubelet would not publish this volume with the objects "
                                        "given: ",
                                        s.message()));
      return;
    }
    if (refused && !explicit_mode) {
      SkipScenario(prefix, absl::StrCat("the driver refuses ", mode, " volumes: ", s.message()));
      return;
    }
    std::vector<std::string> details = {absl::StrCat("answer: ", s.message())};
    if (last != nullptr) details.insert(details.begin(), "request: " + Describe(*last));
    details.push_back(absl::StrCat("kubelet needs it to succeed to start the pod; notes: ",
                                   notes.empty() ? "none" : absl::StrJoin(notes, "; ")));
    Fail(prefix + "publish", publish_ref, "the pod's volume could not be published", details);
    SkipScenario(prefix, "not published", /*from=*/1);
    return;
  }
  Pass(prefix + "publish", publish_ref,
       absl::StrCat(CallSummary(a.publish.calls),
                    notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(notes, "; "), ")")));

  // 2. The target is what kubelet needs there.
  const std::string target = block ? a.plan->block->publish : a.plan->paths.mount;
  {
    struct stat st;
    const bool exists = lstat(target.c_str(), &st) == 0;
    if (block) {
      const std::string ref =
          "csi_block.go MapPodDevice: the driver creates the file target_path (a device, or a "
          "bind mount of one), which kubelet maps into the pod (MapBlockVolume)";
      if (!exists || S_ISDIR(st.st_mode)) {
        Fail(prefix + "target", ref,
             absl::StrCat("target_path ", target, exists ? " is a directory" : " does not exist"),
             {"kubelet needs a file there: a block device, or a file with one bind-mounted on it"});
      } else {
        Pass(prefix + "target", ref,
             absl::StrCat(target, " is a ", S_ISBLK(st.st_mode) ? "block device" : "file"));
      }
    } else {
      const std::string ref =
          "csi_mounter.go SetUpAt: kubelet makes the parent directory, the driver the target "
          "directory, which kubelet bind-mounts into the containers";
      if (!exists || !S_ISDIR(st.st_mode)) {
        Fail(prefix + "target", ref,
             absl::StrCat("target_path ", target,
                          exists ? " is not a directory" : " does not exist"),
             {"kubelet needs a directory there"});
      } else {
        Pass(prefix + "target", ref, absl::StrCat(target, " is a directory"));
      }
    }
  }

  // 3. A kubelet restart: the same NodeStageVolume and NodePublishVolume again.
  const std::string replay_ref =
      "reconciler.go reconstructVolumes after a kubelet restart: MountDevice and SetUp run "
      "again for the volumes found on disk, with the same arguments (csi_attacher.go "
      "MountDevice, csi_mounter.go SetUpAt)";
  if (Interrupted()) {
    Skip(prefix + "restart-replay", replay_ref, "interrupted");
  } else if (Selected(prefix + "restart-replay")) {
    const std::string& ref = replay_ref;
    struct stat before = {};
    const bool existed = lstat(target.c_str(), &before) == 0;
    std::vector<SentCall> replay;
    CsiNodeClient client(driver_.endpoint, options_.node.timeout, &replay);
    std::vector<std::string> failures;
    for (const char* method : {"NodeStageVolume", "NodePublishVolume"}) {
      const SentCall* call = LastCall(a.publish.calls, method);
      if (call == nullptr) continue;
      if (absl::Status s = client.Resend(*call); !s.ok()) {
        failures.push_back(absl::StrCat("request: ", Describe(*call)));
        failures.push_back(absl::StrCat("answer: ", s.message()));
      }
    }
    if (!failures.empty()) {
      failures.push_back("kubelet needs OK: the volume is already set up just so (CSI: these "
                         "calls are idempotent)");
      Fail(prefix + "restart-replay", ref, "a repeated call with identical arguments failed",
           failures);
    } else {
      // The same result: the target as it was (what it should be is the target check's).
      struct stat after = {};
      const bool exists = lstat(target.c_str(), &after) == 0;
      if (exists != existed || (exists && (after.st_mode & S_IFMT) != (before.st_mode & S_IFMT))) {
        Fail(prefix + "restart-replay", ref, "the repeated calls changed the target",
             {exists && existed
                  ? absl::StrCat("target_path ", target, " is of another file type than before")
                  : absl::StrCat("target_path ", target, existed ? " is gone" : " appeared"),
              "kubelet needs the same result: the volume was set up already"});
      } else {
        Pass(prefix + "restart-replay", ref,
             absl::StrCat(CallSummary(replay), " again: OK, target unchanged"));
      }
    }
  }

  // 4. A second pod on the same volume, and a read-only one.
  auto publish_other = [&](PodRun* run, const std::string& name, const std::string& ref) {
    if (Interrupted()) {
      Skip(name, ref, "interrupted");
      return;
    }
    if (absl::Status s = Publish(objects, run); !s.ok()) {
      std::vector<std::string> details = {absl::StrCat("answer: ", s.message())};
      if (!run->publish.calls.empty()) {
        details.insert(details.begin(), "request: " + Describe(run->publish.calls.back()));
      }
      Fail(name, ref, "publishing for another pod failed", details);
      return;
    }
    const std::string other = block ? run->plan->block->publish : run->plan->paths.mount;
    Pass(name, ref, absl::StrCat(CallSummary(run->publish.calls), " at ", other));
  };
  publish_other(&b, prefix + "second-pod",
                "desired_state_of_world.go: one device for every pod on the node that uses the "
                "volume: MountDevice once, SetUp (NodePublishVolume) per pod");
  publish_other(&c, prefix + "read-only",
                "csi_mounter.go SetUpAt: NodePublishVolume.readonly from the pod's "
                "persistentVolumeClaim.readOnly");

  // 5. Stats of a published volume, with the paths kubelet passes.
  const std::string stats_name = prefix + "stats";
  const std::string stats_ref =
      "csi_metrics.go GetMetrics, csi_client.go NodeGetVolumeStats: the pod's mount directory, "
      "for block volumeDevices/<pv>/dev/<pod uid>; no staging path";
  const std::string stats_path = block ? a.plan->block->global_map_pod : a.plan->paths.mount;
  if (Interrupted()) {
    Skip(stats_name, stats_ref, "interrupted");
  } else if (!stats_) {
    Skip(stats_name, stats_ref, "the driver lacks the GET_VOLUME_STATS node capability");
  } else if (block && !Exists(stats_path)) {
    Skip(stats_name, stats_ref,
         absl::StrCat(stats_path, " does not exist: kubelet's MapBlockVolume (a bind mount) was "
                      "skipped, ",
                      options_.node.host_skip_reason.empty() ? "not root"
                                                             : options_.node.host_skip_reason));
  } else if (Selected(stats_name)) {
    CsiNodeClient client(driver_.endpoint, options_.node.timeout);
    absl::StatusOr<VolumeStats> stats = client.NodeGetVolumeStats(a.plan->handle, stats_path, false);
    if (!stats.ok()) {
      Fail(stats_name, stats_ref, "NodeGetVolumeStats failed",
           {absl::StrCat("request: volume_id ", a.plan->handle, ", volume_path ", stats_path),
            absl::StrCat("answer: ", stats.status().message())});
    } else {
      std::vector<std::string> problems;
      auto negative = [&](const char* what, int64_t v) {
        if (v < 0) problems.push_back(absl::StrCat(what, " is negative (", v, ")"));
      };
      negative("capacity", stats->capacity);
      negative("available", stats->available);
      negative("used", stats->used);
      negative("inodes", stats->inodes);
      negative("inodes free", stats->inodes_free);
      negative("inodes used", stats->inodes_used);
      if (stats->capacity > 0 && stats->used > stats->capacity) {
        problems.push_back(absl::StrCat("used (", stats->used, " bytes) is more than capacity (",
                                        stats->capacity, " bytes)"));
      }
      if (stats->capacity > 0 && stats->available > stats->capacity) {
        problems.push_back(absl::StrCat("available (", stats->available,
                                        " bytes) is more than capacity (", stats->capacity,
                                        " bytes)"));
      }
      if (stats->inodes > 0 && stats->inodes_used > stats->inodes) {
        problems.push_back(absl::StrCat("inodes used (", stats->inodes_used,
                                        ") is more than inodes (", stats->inodes, ")"));
      }
      const std::string numbers =
          absl::StrCat("capacity ", stats->capacity, ", available ", stats->available, ", used ",
                       stats->used, " bytes; inodes ", stats->inodes, ", free ",
                       stats->inodes_free, ", used ", stats->inodes_used);
      if (!problems.empty()) {
        problems.insert(problems.begin(), absl::StrCat("answer: ", numbers));
        problems.push_back(
            "kubelet exports these as kubelet_volume_stats_* and evicts and alerts on them");
        Fail(stats_name, stats_ref, "the volume's statistics contradict themselves", problems);
      } else {
        Pass(stats_name, stats_ref, numbers);
      }
    }
  }

  // 6. Online expansion, as kubelet expands a volume in use whose PV has grown.
  const std::string expand_name = prefix + "expand";
  const std::string expand_ref =
      "operation_generator.go GenerateExpandInUseVolumeFunc, expander.go NodeExpand: "
      "NodeExpandVolume with the volume path and the staging path";
  if (Interrupted()) {
    Skip(expand_name, expand_ref, "interrupted");
  } else if (!expands_) {
    Skip(expand_name, expand_ref, "the driver lacks the EXPAND_VOLUME node capability");
  } else if (Selected(expand_name)) {
    ObjectSet grown = objects;
    PersistentVolume& pv = grown.volumes[pv_name];
    pv.capacity = Quantity::FromValue(int64_t{2} << 30, Quantity::Format::kBinarySi);
    NodeOptions node = options_.node;
    node.publishes = false;
    PodPlan plan = PlanVolumes(a.pod, grown, registry_.All(), node);
    std::vector<VolumePlan*> volumes = plan.ToPublish();
    if (volumes.size() != 1) {
      Fail(expand_name, expand_ref, "kubelet would not expand this volume",
           {std::string(plan.FirstError().message())});
    } else {
      std::vector<SentCall> calls;
      CsiNodeClient client(driver_.endpoint, options_.node.timeout, &calls);
      ExpansionOutcome expansion =
          ExpandInUseVolume(*volumes[0], grown, node, a.pod.ns, &client);
      const SentCall* sent = LastCall(calls, "NodeExpandVolume");
      if (!expansion.status.ok()) {
        std::vector<std::string> details;
        if (sent != nullptr) details.push_back("request: " + Describe(*sent));
        details.push_back(absl::StrCat("answer: ", expansion.status.message()));
        details.push_back("kubelet needs OK (or FAILED_PRECONDITION: not while in use)");
        Fail(expand_name, expand_ref, "online expansion failed", details);
      } else if (!expansion.not_expanded.empty()) {
        Pass(expand_name, expand_ref,
             absl::StrCat("not expanded, which kubelet accepts: ", expansion.not_expanded));
      } else {
        Pass(expand_name, expand_ref, "NodeExpandVolume to 2Gi answered OK");
      }
    }
  }

  // 7. Teardown, with the repeated calls a retried teardown makes.
  const std::string teardown_ref =
      block ? "operation_generator.go GenerateUnmapVolumeFunc (UnmapPodDevice: "
              "NodeUnpublishVolume), GenerateUnmapDeviceFunc (TearDownDevice: NodeUnstageVolume "
              "after the last pod)"
            : "operation_generator.go GenerateUnmountVolumeFunc (csi_mounter.go TearDownAt: "
              "NodeUnpublishVolume), GenerateUnmountDeviceFunc (csi_attacher.go UnmountDevice: "
              "NodeUnstageVolume after the last pod)";
  // Pod B: its NodeUnpublishVolume sent twice before kubelet's own teardown sends it again.
  const std::string twice_ref =
      "csi_mounter.go TearDownAt after a kubelet restart or a failed teardown: "
      "NodeUnpublishVolume again for a volume the driver has already unpublished";
  if (!b.published) {
    Skip(prefix + "unpublish-twice", twice_ref, "pod sanity-b was not published");
  } else if (Interrupted()) {
    Skip(prefix + "unpublish-twice", twice_ref, "interrupted");
  } else if (Selected(prefix + "unpublish-twice")) {
    const std::string& ref = twice_ref;
    const std::string b_target = block ? b.plan->block->publish : b.plan->paths.mount;
    std::vector<SentCall> calls;
    CsiNodeClient client(driver_.endpoint, options_.node.timeout, &calls);
    absl::Status first = client.NodeUnpublishVolume(b.plan->handle, b_target);
    absl::Status second = first.ok() ? client.Resend(calls.back()) : first;
    if (!first.ok() || !second.ok()) {
      Fail(prefix + "unpublish-twice", ref,
           first.ok() ? "the second NodeUnpublishVolume failed"
                      : "NodeUnpublishVolume failed",
           {"request: " + Describe(calls.back()),
            absl::StrCat("answer: ", (first.ok() ? second : first).message()),
            "kubelet needs OK: the volume is already unpublished (CSI: idempotent)"});
    } else {
      Pass(prefix + "unpublish-twice", ref, "NodeUnpublishVolume twice: OK both times");
    }
  }
  std::vector<std::string> teardown_failures;
  std::vector<SentCall> c_calls, all_calls;
  for (PodRun* run : {&b, &c, &a}) {
    if (!run->published) continue;
    std::vector<SentCall> calls;
    if (absl::Status s = TearDown(run, &calls); !s.ok()) {
      if (!calls.empty()) teardown_failures.push_back("request: " + Describe(calls.back()));
      teardown_failures.push_back(
          absl::StrCat("answer (pod ", run->pod.name, "): ", s.message()));
    }
    if (run == &c) c_calls = calls;
    all_calls.insert(all_calls.end(), calls.begin(), calls.end());
  }
  if (!teardown_failures.empty()) {
    teardown_failures.push_back("kubelet retries the teardown until it succeeds; the pod's "
                                "volume stays in use meanwhile");
    Fail(prefix + "teardown", teardown_ref, "tearing the pods' volume down failed",
         teardown_failures);
  } else {
    Pass(prefix + "teardown", teardown_ref, CallSummary(all_calls));
  }
  // Pod C's NodeUnpublishVolume again, now that kubelet has removed its target.
  const std::string removed_ref =
      "csi_mounter.go TearDownAt when the target is already gone (a kubelet restart after "
      "removeMountDir): NodeUnpublishVolume all the same";
  const SentCall* c_unpublish = LastCall(c_calls, "NodeUnpublishVolume");
  if (c_unpublish == nullptr) {
    Skip(prefix + "unpublish-removed-target", removed_ref, "pod sanity-c was not torn down");
  } else if (Interrupted()) {
    Skip(prefix + "unpublish-removed-target", removed_ref, "interrupted");
  } else if (Selected(prefix + "unpublish-removed-target")) {
    const SentCall* call = c_unpublish;
    CsiNodeClient client(driver_.endpoint, options_.node.timeout);
    if (absl::Status s = client.Resend(*call); !s.ok()) {
      Fail(prefix + "unpublish-removed-target", removed_ref,
           "NodeUnpublishVolume of a target that is gone failed",
           {"request: " + Describe(*call), absl::StrCat("answer: ", s.message()),
            "kubelet needs OK: there is nothing left to unpublish (CSI: NOT_FOUND is only for "
            "an unknown volume)"});
    } else {
      Pass(prefix + "unpublish-removed-target", removed_ref, "OK");
    }
  }
  const std::string unstage_ref =
      "csi_attacher.go UnmountDevice after a kubelet restart or a failed teardown: "
      "NodeUnstageVolume again";
  const SentCall* unstage = LastCall(all_calls, "NodeUnstageVolume");
  if (!stages_) {
    Skip(prefix + "unstage-repeated", unstage_ref,
         "the driver lacks the STAGE_UNSTAGE_VOLUME node capability");
  } else if (unstage == nullptr) {
    Skip(prefix + "unstage-repeated", unstage_ref, "the volume was not unstaged");
  } else if (Interrupted()) {
    Skip(prefix + "unstage-repeated", unstage_ref, "interrupted");
  } else if (Selected(prefix + "unstage-repeated")) {
    CsiNodeClient client(driver_.endpoint, options_.node.timeout);
    if (absl::Status s = client.Resend(*unstage); !s.ok()) {
      Fail(prefix + "unstage-repeated", unstage_ref, "a repeated NodeUnstageVolume failed",
           {"request: " + Describe(*unstage), absl::StrCat("answer: ", s.message()),
            "kubelet needs OK: the volume is already unstaged (CSI: idempotent)"});
    } else {
      Pass(prefix + "unstage-repeated", unstage_ref, "OK");
    }
  }
  CleanUp({&b, &c, &a});

  // 8. Nothing left behind.
  std::vector<std::string> left;
  for (PodRun* run : {&a, &b, &c}) {
    if (!run->plan.has_value()) continue;
    const VolumePlan& plan = *run->plan;
    // The target, kubelet's files for the pod's volume, and the volume's staging directory.
    std::vector<std::string> paths =
        block ? std::vector<std::string>{plan.block->publish, plan.block->pod_map,
                                         plan.block->staging, plan.block->volume_dir}
              : std::vector<std::string>{plan.paths.mount, plan.paths.dir};
    if (!block && plan.device.has_value()) paths.push_back(plan.device->dir);
    for (const std::string& path : paths) {
      if (Exists(path) && std::find(left.begin(), left.end(), path + " still exists") == left.end()) {
        left.push_back(path + " still exists");
      }
    }
  }
  for (const std::string& mount : MountsUnder(options_.node.root_dir)) {
    left.push_back(absl::StrCat(mount, " is still mounted"));
  }
  const std::string clean_ref =
      "csi_mounter.go TearDownAt and csi_attacher.go UnmountDevice (removeMountDir), "
      "csi_block.go TearDownDevice: nothing mounted, no target, staging directory or volume "
      "file left once the last pod is gone";
  if (!left.empty()) {
    Fail(prefix + "clean", clean_ref, "the teardown left things behind", left);
  } else {
    Pass(prefix + "clean", clean_ref,
         absl::StrCat("no target, staging directory or volume file left, nothing mounted under ",
                      options_.node.root_dir));
  }
}

SanityReport Judge::Run() {
  for (const std::string& path : options_.object_paths) {
    if (absl::Status s = ReadObjects(path, &given_); !s.ok()) {
      report_.error = std::string(s.message());
      return report_;
    }
  }
  std::vector<std::string> modes = options_.volume_modes;
  if (modes.empty()) modes = {"filesystem", "block"};
  if (!Register()) {
    for (const char* check : {"registration/node-info", "registration/capabilities"}) {
      Skip(check, "", "not registered");
    }
    for (const std::string& handle : options_.volume_handles) {
      for (const std::string& mode : modes) {
        SkipScenario(options_.volume_handles.size() > 1 ? absl::StrCat(mode, "/", handle, "/")
                                                        : mode + "/",
                     "the driver is not registered");
      }
    }
  } else {
    ReadCapabilities();
    int index = 0;
    for (const std::string& handle : options_.volume_handles) {
      ++index;
      for (const std::string& mode : modes) RunScenario(mode, handle, index);
    }
  }
  out_ << report_.passed << " passed, " << report_.failed << " failed, " << report_.skipped
       << " skipped" << std::endl;
  return report_;
}

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no place for other control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

SanityReport RunSanity(const SanityOptions& options, std::ostream& out) {
  Judge judge(options, out);
  return judge.Run();
}

std::string JunitXml(const SanityReport& report) {
  const int tests = report.passed + report.failed + report.skipped;
  std::string xml = absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"", tests,
      "\" failures=\"", report.failed, "\" skipped=\"", report.skipped, "\">\n",
      "  <testsuite name=\"kubeletclient sanity", report.driver.empty() ? "" : ": ",
      XmlEscape(report.driver), "\" tests=\"", tests, "\" failures=\"", report.failed,
      "\" skipped=\"", report.skipped, "\">\n");
  for (const CheckResult& check : report.checks) {
    const size_t slash = check.name.rfind('/');
    const std::string group = slash == std::string::npos ? "" : check.name.substr(0, slash);
    absl::StrAppend(&xml, "    <testcase classname=\"sanity.", XmlEscape(group), "\" name=\"",
                    XmlEscape(check.name), "\">");
    if (check.verdict == Verdict::kFail) {
      std::vector<std::string> body = check.details;
      if (!check.kubelet.empty()) body.push_back("kubelet: " + check.kubelet);
      absl::StrAppend(&xml, "<failure message=\"", XmlEscape(check.summary), "\">",
                      XmlEscape(absl::StrJoin(body, "\n")), "</failure>");
    } else if (check.verdict == Verdict::kSkip) {
      absl::StrAppend(&xml, "<skipped message=\"", XmlEscape(check.summary), "\"/>");
    }
    absl::StrAppend(&xml, "</testcase>\n");
  }
  absl::StrAppend(&xml, "  </testsuite>\n</testsuites>\n");
  return xml;
}

}  // namespace ndr::kubelet

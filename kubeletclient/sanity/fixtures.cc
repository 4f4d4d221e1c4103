// The fixtures every group of checks shares (judge.h).
#include "kubeletclient/sanity/judge.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/publisher.h"
#include "kubeletclient/sanity/report.h"

namespace ndr::kubelet::sanity {

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

// The mount points below `dir`, from /proc/self/mountinfo (its fifth field, with the kernel's
// octal escapes of space, tab, newline and backslash undone); `dir` itself is not one of them (it
// is a mount point of its own when kubelet has made it shared).
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

std::string PublishRequest(const PodRun& run) {
  const SentCall* publish = LastCall(run.publish.calls, "NodePublishVolume");
  return publish == nullptr ? "" : "request: " + Describe(*publish);
}

const SentCall* FailedPublishCall(const std::vector<SentCall>& calls) {
  // Where the undoing starts: its first NodeUnpublishVolume or NodeUnstageVolume, and the
  // NodeGetCapabilities it asked right before.
  size_t undo = calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].method == "NodeUnpublishVolume" || calls[i].method == "NodeUnstageVolume") {
      undo = i;
      break;
    }
  }
  if (undo == calls.size()) return calls.empty() ? nullptr : &calls.back();
  while (undo > 0 && calls[undo - 1].method == "NodeGetCapabilities") --undo;
  return undo == 0 ? nullptr : &calls[undo - 1];
}

void Judge::Record(CheckResult result) {
  const absl::Time now = absl::Now();
  result.seconds = absl::ToDoubleSeconds(now - last_verdict_);
  last_verdict_ = now;
  if (!Selected(result.name)) return;
  WriteCheck(out_, result);
  // A test's hook (sanity_process_test): stop here, as if the machine were slow, so that a
  // signal can be sent at a known point. Not an option: nothing a user needs.
  if (const char* stop = getenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
      stop != nullptr && result.name == stop) {
    raise(SIGSTOP);
  }
  (result.verdict == Verdict::kPass        ? report_.passed
   : result.verdict == Verdict::kFail      ? report_.failed
   : result.verdict == Verdict::kNotJudged ? report_.not_judged
                                           : report_.skipped)++;
  report_.checks.push_back(std::move(result));
}

ObjectSet Judge::ScenarioObjects(const std::string& mode, const Provisioned& volume,
                                 const std::string& pv_name, const std::string& claim_name,
                                 std::vector<std::string>* notes) {
  const std::string& handle = volume.handle;
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
  pv.capacity = Quantity::FromValue(volume.capacity, Quantity::Format::kBinarySi);
  if (!pv.csi.has_value()) pv.csi.emplace();
  pv.csi->driver = driver_.name;
  pv.csi->volume_handle = handle;
  pv.csi->read_only = false;
  // The external-provisioner's PV: the created volume's context as its attributes, and what the
  // StorageClass gave it.
  if (volume.created) {
    pv.csi->volume_attributes = volume.attributes;
    if (!volume.fs_type.empty()) pv.csi->fs_type = volume.fs_type;
    if (!volume.mount_options.empty()) pv.mount_options = volume.mount_options;
    if (volume.node_expand_secret.has_value()) pv.csi->node_expand_secret = volume.node_expand_secret;
  }
  // Node secrets (the StorageClass's, or the secrets file's) where the PV has none of its own.
  if (!pv.csi->node_stage_secret.has_value()) pv.csi->node_stage_secret = volume.node_stage_secret;
  if (!pv.csi->node_publish_secret.has_value()) {
    pv.csi->node_publish_secret = volume.node_publish_secret;
  }
  PersistentVolumeClaim claim;
  claim.ns = kNamespace;
  claim.name = claim_name;
  claim.uid = RandomUid();
  claim.volume_name = pv_name;
  claim.requested = pv.capacity;
  claim.phase = "Bound";
  claim.capacity = pv.capacity;
  pv.claim_ref = ClaimReference{claim.ns, claim.name, claim.uid};
  objects.volumes[pv.name] = pv;
  objects.claims[{claim.ns, claim.name}] = claim;
  if (objects.csi_drivers.count(driver_.name) == 0) {
    // Attachments only where the driver's controller makes them.
    const bool attach = volume.created && controller_.publish_unpublish;
    CsiDriverObject csi_driver;
    csi_driver.name = driver_.name;
    csi_driver.attach_required = attach;
    csi_driver.pod_info_on_mount = false;
    csi_driver.volume_lifecycle_modes = {"Persistent"};  // the API server's default
    objects.csi_drivers[driver_.name] = csi_driver;
    notes->push_back(absl::StrCat("no CSIDriver object given: attachRequired ",
                                  attach ? "true" : "false", ", podInfoOnMount false"));
  }
  if (objects.service_accounts.count({kNamespace, "default"}) == 0) {
    ServiceAccount account;
    account.ns = kNamespace;
    account.name = "default";
    account.uid = RandomUid();
    objects.service_accounts[{kNamespace, "default"}] = account;
  }
  const CsiDriverObject& csi_driver = objects.csi_drivers[driver_.name];
  if (csi_driver.attach_required.value_or(true) &&
      !(volume.created && controller_.publish_unpublish)) {
    const std::string name = AttachmentName(handle, driver_.name, node_.node_name);
    if (objects.attachments.count(name) == 0) {
      VolumeAttachment attachment;
      attachment.name = name;
      attachment.attacher = driver_.name;
      attachment.node_name = node_.node_name;
      attachment.persistent_volume_name = pv_name;
      attachment.attached = true;
      objects.attachments[name] = attachment;
      notes->push_back(
          "the CSIDriver requires attach: an attached VolumeAttachment without "
          "metadata is assumed (no controller was asked)");
    }
  }
  return objects;
}

Pod Judge::MakePod(const std::string& name, const std::string& claim, bool block, bool read_only) {
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

std::optional<TokenSource> Judge::StartTokens(const ObjectSet& objects) {
  node_.tokens = nullptr;
  if (options_.service_account_key_file.empty()) return std::nullopt;
  PublishCommand command;
  command.service_account_key_file = options_.service_account_key_file;
  command.service_account_issuer = options_.service_account_issuer;
  absl::StatusOr<TokenSource> source =
      StartTokenSource(command, objects, [] { return absl::Now(); });
  if (!source.ok()) return std::nullopt;  // read once before the checks: it was good then
  node_.tokens = source->manager.get();
  return *std::move(source);
}

absl::Status Judge::Plan(const ObjectSet& objects, PodRun* run) {
  PodPlan plan = PlanVolumes(run->pod, objects, registry_.All(), node_);
  CheckNodeState(node_, &plan);
  WaitForAttachments(objects, node_.node_name, &plan);
  if (absl::Status s = plan.FirstError(); !s.ok()) return s;
  std::vector<VolumePlan*> volumes = plan.ToPublish();
  if (volumes.size() != 1) return absl::InternalError("the pod's volume was not planned");
  run->plan = *volumes[0];
  return absl::OkStatus();
}

absl::Status Judge::Publish(const ObjectSet& objects, PodRun* run) {
  if (!run->plan.has_value()) {
    if (absl::Status s = Plan(objects, run); !s.ok()) return s;
  }
  run->publish = PublishVolume(*run->plan, objects, run->pod.ns, node_);
  // What the driver may have published is torn down at the end, whatever the answer.
  run->published = true;
  run->ever_published = run->ever_published || run->publish.status.ok();
  return run->publish.status;
}

absl::Status Judge::TearDown(PodRun* run, std::vector<SentCall>* calls) {
  absl::StatusOr<std::vector<UnpublishPlan>> plans = PlanUnpublish(node_.root_dir, run->pod.uid);
  if (!plans.ok()) return plans.status();
  absl::Status status;
  for (const UnpublishPlan& plan : *plans) {
    VolumeOutcome outcome = UnpublishVolume(plan, registry_.All(), node_);
    calls->insert(calls->end(), outcome.calls.begin(), outcome.calls.end());
    if (!outcome.status.ok() && status.ok()) status = outcome.status;
  }
  if (status.ok()) {
    run->published = false;
    RemovePodDirs(run->pod.uid);
  }
  return status;
}

// Once a pod's volumes are gone kubelet removes its directory (kubelet_volumes.go
// cleanupOrphanedPodDirs: the emptied volume directories, then pods/<uid>); so does the judge for
// its made-up pods. Only empty directories go: whatever is left is the clean check's to report.
void Judge::RemovePodDirs(const std::string& pod_uid) {
  const std::string pod = absl::StrCat(node_.root_dir, "/pods/", pod_uid);
  for (const char* dir : {"/volumes/kubernetes.io~csi", "/volumes",
                          "/volumeDevices/kubernetes.io~csi", "/volumeDevices", ""}) {
    rmdir(absl::StrCat(pod, dir).c_str());
  }
}

void Judge::CleanUp(std::vector<PodRun*> runs) {
  ReleaseNonDeviceMaps(runs);
  for (PodRun* run : runs) {
    if (!run->published) continue;
    std::vector<SentCall> calls;
    if (absl::Status s = TearDown(run, &calls); !s.ok()) {
      out_ << "Cleanup: pod " << run->pod.name << " could not be torn down: " << s.message()
           << "\n";
    }
  }
}

void Judge::SkipChecks(const std::string& prefix, const std::vector<std::string>& checks,
                       const std::string& why, size_t from) {
  for (size_t i = from; i < checks.size(); ++i) Skip(prefix + checks[i], "", why);
}

void Judge::NotJudgedChecks(const std::string& prefix, const std::vector<std::string>& checks,
                            const std::string& why) {
  for (const std::string& check : checks) {
    Record({prefix + check, Verdict::kNotJudged, why, {}, ""});
  }
}

}  // namespace ndr::kubelet::sanity

// <mode>/publish ... <mode>/clean: a persistent volume through kubelet's sequence (judge.h).
#include "kubeletclient/sanity/judge.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/publisher.h"

namespace ndr::kubelet::sanity {

void Judge::RunScenario(const std::string& mode, const std::string& handle, int index) {
  const std::string prefix =
      HandlesFor(mode).size() > 1 ? absl::StrCat(mode, "/", handle, "/") : mode + "/";
  if (Interrupted()) {
    SkipChecks(prefix, CheckNames(CheckGroup::kVolume), "interrupted");
    return;
  }
  const std::string pv_name = ClaimName(mode, index);
  Provisioned volume;
  if (!Provision(prefix, mode, handle, pv_name, CheckNames(CheckGroup::kVolume), &volume)) return;
  expansion_allowed_ = !(volume.created && storage_class_ != nullptr &&
                         !storage_class_->allow_volume_expansion.value_or(false));
  std::vector<std::string> notes;
  ObjectSet objects = ScenarioObjects(mode, volume, pv_name, pv_name, &notes);
  Attach(prefix, pv_name, &volume, &objects);
  RunVolumeChecks(mode, prefix, pv_name, objects, notes);
  Deprovision(prefix, volume);
}

void Judge::RunVolumeChecks(const std::string& mode, const std::string& prefix,
                            const std::string& pv_name, const ObjectSet& objects,
                            const std::vector<std::string>& notes) {
  const bool block = mode == "block";
  const std::optional<TokenSource> tokens = StartTokens(objects);
  const CsiDriverObject& csi_driver = objects.csi_drivers.at(driver_.name);
  PodRun a{MakePod("sanity-a", pv_name, block, false)};
  PodRun b{MakePod("sanity-b", pv_name, block, false)};
  PodRun c{MakePod("sanity-c", pv_name, block, true)};

  // 1. Publish, as kubelet publishes for a pod, and what the driver made at the target.
  if (!JudgePublish(prefix, CheckNames(CheckGroup::kVolume), mode + " volumes", objects, notes,
                    /*may_refuse=*/options_.volume_modes.empty(), &a,
                    block ? "operation_generator.go GenerateMapVolumeFunc: csi_block.go "
                            "SetUpDevice (NodeStageVolume at volumeDevices/staging/<pv>), "
                            "MapPodDevice (NodePublishVolume at "
                            "volumeDevices/publish/<pv>/<pod uid>)"
                          : "operation_generator.go GenerateMountVolumeFunc: csi_attacher.go "
                            "MountDevice (NodeStageVolume at .../globalmount), csi_mounter.go "
                            "SetUpAt (NodePublishVolume at "
                            "pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount)")) {
    return;
  }
  const std::string target = block ? a.plan->block->publish : a.plan->paths.mount;
  JudgeTarget(prefix + "target", a, target, block);
  // 2. Service-account tokens, when the CSIDriver asks for them.
  JudgeTokens(prefix + "tokens", csi_driver, block, a);
  // 3. A kubelet restart: the same NodeStageVolume and NodePublishVolume again.
  JudgeReplay(prefix + "restart-replay", a, target);
  // 4. The periodic remount of a requiresRepublish driver: SetUp again, fresh tokens.
  JudgeRepublish(prefix + "republish", csi_driver, block, a);
  // 5. A second pod on the same volume, and a read-only one.
  JudgeOtherPods(prefix, objects, block, &b, &c);
  // 6. Stats of a published volume, with the paths kubelet passes.
  const PersistentVolume& pv = objects.volumes.at(pv_name);
  JudgeStats(prefix + "stats", a, block, pv.capacity.has_value() ? pv.capacity->value() : 0);
  JudgeVolumeHealth(prefix + "volume-health", a, block);
  // 7. Online expansion, as kubelet expands a volume in use whose PV has grown.
  JudgeExpand(prefix + "expand", a, pv_name, objects);
  // 8. Teardown, with the repeated calls a retried teardown makes.
  JudgeUnpublishTwice(prefix, block, b);
  JudgeVolumeTeardown(prefix, block, &a, &b, &c);
  CleanUp({&b, &c, &a});
  // 9. Nothing left behind.
  JudgeClean(prefix + "clean", {&a, &b, &c}, block);
}

void Judge::JudgeOtherPods(const std::string& prefix, const ObjectSet& objects, bool block,
                           PodRun* b, PodRun* c) {
  auto publish_other = [&](PodRun* run, const std::string& name, const std::string& ref) {
    if (Interrupted()) {
      Skip(name, ref, "interrupted");
      return;
    }
    if (absl::Status s = Publish(objects, run); !s.ok()) {
      std::vector<std::string> details = {absl::StrCat("answer: ", s.message())};
      if (const SentCall* failed = FailedPublishCall(run->publish.calls); failed != nullptr) {
        details.insert(details.begin(), "request: " + Describe(*failed));
      }
      Fail(name, ref, "publishing for another pod failed", details);
      return;
    }
    const std::string other = block ? run->plan->block->publish : run->plan->paths.mount;
    Pass(name, ref, absl::StrCat(CallSummary(run->publish.calls), " at ", other));
  };
  publish_other(b, prefix + "second-pod",
                "desired_state_of_world.go: one device for every pod on the node that uses the "
                "volume: MountDevice once, SetUp (NodePublishVolume) per pod");
  publish_other(c, prefix + "read-only",
                "csi_mounter.go SetUpAt: NodePublishVolume.readonly from the pod's "
                "persistentVolumeClaim.readOnly");
}

// Pod B's NodeUnpublishVolume is sent twice before kubelet's own teardown sends it again.
void Judge::JudgeUnpublishTwice(const std::string& prefix, bool block, const PodRun& b) {
  const std::string twice_ref =
      "csi_mounter.go TearDownAt after a kubelet restart or a failed teardown: "
      "NodeUnpublishVolume again for a volume the driver has already unpublished";
  if (!b.published) {
    Skip(prefix + "unpublish-twice", twice_ref, "pod sanity-b was not published");
    return;
  }
  if (Interrupted()) {
    Skip(prefix + "unpublish-twice", twice_ref, "interrupted");
    return;
  }
  if (!Selected(prefix + "unpublish-twice")) return;
  const std::string b_target = block ? b.plan->block->publish : b.plan->paths.mount;
  std::vector<SentCall> calls;
  CsiNodeClient client(driver_.endpoint, node_.timeout, &calls);
  absl::Status first = client.NodeUnpublishVolume(b.plan->handle, b_target);
  absl::Status second = first.ok() ? client.Resend(calls.back()) : first;
  if (!first.ok() || !second.ok()) {
    Fail(prefix + "unpublish-twice", twice_ref,
         first.ok() ? "the second NodeUnpublishVolume failed" : "NodeUnpublishVolume failed",
         {"request: " + Describe(calls.back()),
          absl::StrCat("answer: ", (first.ok() ? second : first).message()),
          "kubelet needs OK: the volume is already unpublished (CSI: idempotent)"});
  } else {
    Pass(prefix + "unpublish-twice", twice_ref, "NodeUnpublishVolume twice: OK both times");
  }
}

void Judge::JudgeVolumeTeardown(const std::string& prefix, bool block, PodRun* a, PodRun* b,
                                PodRun* c) {
  std::vector<SentCall> teardown;
  JudgeTeardown(prefix + "teardown", {b, c, a},
                block ? "operation_generator.go GenerateUnmapVolumeFunc (UnmapPodDevice: "
                        "NodeUnpublishVolume), GenerateUnmapDeviceFunc (TearDownDevice: "
                        "NodeUnstageVolume after the last pod)"
                      : "operation_generator.go GenerateUnmountVolumeFunc (csi_mounter.go "
                        "TearDownAt: NodeUnpublishVolume), GenerateUnmountDeviceFunc "
                        "(csi_attacher.go UnmountDevice: NodeUnstageVolume after the last pod)",
                &teardown);
  // Pod C's NodeUnpublishVolume again, now that kubelet has removed its target.
  const std::string c_target = !c->plan.has_value() ? ""
                               : block              ? c->plan->block->publish
                                                    : c->plan->paths.mount;
  const SentCall* c_unpublish = nullptr;
  for (const SentCall& call : teardown) {
    const auto* request =
        dynamic_cast<const csi::v1::NodeUnpublishVolumeRequest*>(call.request.get());
    if (request != nullptr && request->target_path() == c_target) c_unpublish = &call;
  }
  if (c_unpublish == nullptr && !c->ever_published && !report_.interrupted) {
    // Not the teardown's doing: pod C's publish was refused or failed.
    Skip(prefix + "unpublish-removed-target", kRemovedTargetRef,
         "pod sanity-c was never published (see the read-only check), so there is no "
         "NodeUnpublishVolume of it to repeat");
  } else {
    JudgeRepeat(prefix + "unpublish-removed-target", c_unpublish, kRemovedTargetRef,
                kRemovedTargetOk);
  }
  const std::string unstage_ref =
      "csi_attacher.go UnmountDevice after a kubelet restart or a failed teardown: "
      "NodeUnstageVolume again";
  if (!stages_) {
    Skip(prefix + "unstage-repeated", unstage_ref,
         "the driver lacks the STAGE_UNSTAGE_VOLUME node capability");
  } else {
    JudgeRepeat(prefix + "unstage-repeated", LastCall(teardown, "NodeUnstageVolume"), unstage_ref,
                "the volume is already unstaged (CSI: idempotent)");
  }
}

bool Judge::JudgePublish(const std::string& prefix, const std::vector<std::string>& checks,
                         const std::string& what, const ObjectSet& objects,
                         const std::vector<std::string>& notes, bool may_refuse, PodRun* run,
                         const std::string& ref) {
  if (absl::Status s = Plan(objects, run); !s.ok()) {
    // Not the driver's doing: the objects given (a CSIDriver, secrets, no key) stop kubelet first.
    SkipChecks(prefix, checks,
               absl::StrCat("kubelet would not publish this volume with the objects given: ",
                            s.message()));
    return false;
  }
  // What an earlier scenario on the same volume could not tear down would be taken for this
  // one's (the staging directory is the volume's): that teardown was judged there; these checks
  // cannot be carried out, and are not judged, never passed over as skipped.
  const VolumePlan& plan = *run->plan;
  for (const std::string& path :
       plan.block.has_value()
           ? std::vector<std::string>{plan.block->staging, plan.block->volume_dir}
       : plan.device.has_value() ? std::vector<std::string>{plan.device->dir}
                                 : std::vector<std::string>{}) {
    if (Exists(path)) {
      NotJudgedChecks(prefix, checks,
                      absl::StrCat(path, " is left from an earlier check of this run whose "
                                   "teardown failed; judge this scenario in a run of its own "
                                   "(--only) once that teardown passes"));
      return false;
    }
  }
  absl::Status s = Publish(objects, run);
  if (s.ok()) {
    Pass(prefix + "publish", ref,
         absl::StrCat(CallSummary(run->publish.calls),
                      notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(notes, "; "), ")")));
    return true;
  }
  CleanUp({run});
  const bool refused = s.code() == absl::StatusCode::kInvalidArgument ||
                       s.code() == absl::StatusCode::kUnimplemented ||
                       s.code() == absl::StatusCode::kFailedPrecondition;
  if (refused && may_refuse) {
    SkipChecks(prefix, checks, absl::StrCat("the driver refuses ", what, ": ", s.message()));
    return false;
  }
  std::vector<std::string> details;
  if (const SentCall* failed = FailedPublishCall(run->publish.calls); failed != nullptr) {
    details.push_back("request: " + Describe(*failed));
  }
  details.push_back(absl::StrCat("answer: ", s.message()));
  details.push_back(absl::StrCat("kubelet needs it to succeed to start the pod; assumed: ",
                                 notes.empty() ? "nothing" : absl::StrJoin(notes, "; ")));
  Fail(prefix + "publish", ref, "the pod's volume could not be published", details);
  // Nothing else can be judged, but what the failed publish and kubelet's undoing of it left.
  std::vector<std::string> rest(checks.begin() + 1, checks.end());
  const bool clean = !rest.empty() && rest.back() == "clean";
  if (clean) rest.pop_back();
  SkipChecks(prefix, rest, "not published");
  if (clean) JudgeClean(prefix + "clean", {run}, run->plan->block.has_value());
  return false;
}

void Judge::JudgeTarget(const std::string& name, const PodRun& run, const std::string& target,
                        bool block) {
  const std::string request = PublishRequest(run);
  if (block) {
    JudgeBlockTarget(name, target, request);
    return;
  }
  struct stat st;
  const bool exists = lstat(target.c_str(), &st) == 0;
  const std::string ref =
      "csi_mounter.go SetUpAt: kubelet makes the parent directory, the driver the target "
      "directory, which kubelet bind-mounts into the containers";
  if (!exists || !S_ISDIR(st.st_mode)) {
    // Kubelet itself goes on; the container runtime then fails to bind-mount a non-directory,
    // or (containerd, CRI-O) makes the missing one on the node's disk, where the pod's data
    // would go instead of the volume.
    Fail(name, ref,
         absl::StrCat("target_path ", target, exists ? " is not a directory" : " does not exist"),
         {request,
          exists ? "kubelet needs the volume's directory there"
                 : "kubelet needs the volume's directory there (CSI: \"Creation of target_path is "
                   "the responsibility of the SP\"); without it the container runtime makes an "
                   "empty directory on the node's disk, and the pod's data never reaches the "
                   "volume"});
  } else {
    Pass(name, ref, absl::StrCat(target, " is a directory"));
  }
}

void Judge::JudgeReplay(const std::string& name, const PodRun& run, const std::string& target) {
  if (Interrupted()) {
    Skip(name, kReplayRef, "interrupted");
    return;
  }
  if (!Selected(name)) return;
  struct stat before = {};
  const bool existed = lstat(target.c_str(), &before) == 0;
  std::vector<SentCall> replay;
  CsiNodeClient client(driver_.endpoint, node_.timeout, &replay);
  std::vector<std::string> failures;
  for (const char* method : {"NodeStageVolume", "NodePublishVolume"}) {
    const SentCall* call = LastCall(run.publish.calls, method);
    if (call == nullptr) continue;
    if (absl::Status s = client.Resend(*call); !s.ok()) {
      failures.push_back(absl::StrCat("request: ", Describe(*call)));
      failures.push_back(absl::StrCat("answer: ", s.message()));
    }
  }
  if (!failures.empty()) {
    failures.push_back(
        "kubelet needs OK: the volume is already set up just so (CSI: these "
        "calls are idempotent)");
    Fail(name, kReplayRef, "a repeated call with identical arguments failed", failures);
    return;
  }
  // The same result: the target as it was (what it should be is the target check's).
  struct stat after = {};
  const bool exists = lstat(target.c_str(), &after) == 0;
  if (exists != existed || (exists && (after.st_mode & S_IFMT) != (before.st_mode & S_IFMT))) {
    Fail(name, kReplayRef, "the repeated calls changed the target",
         {exists && existed
              ? absl::StrCat("target_path ", target, " is of another file type than before")
              : absl::StrCat("target_path ", target, existed ? " is gone" : " appeared"),
          "kubelet needs the same result: the volume was set up already"});
    return;
  }
  Pass(name, kReplayRef, absl::StrCat(CallSummary(replay), " again: OK, target unchanged"));
}

void Judge::JudgeTeardown(const std::string& name, const std::vector<PodRun*>& runs,
                          const std::string& ref, std::vector<SentCall>* calls) {
  const std::vector<std::string> released = ReleaseNonDeviceMaps(runs);
  std::vector<std::string> failures;
  std::vector<SentCall> all;
  for (PodRun* run : runs) {
    if (!run->published) continue;
    std::vector<SentCall> sent;
    if (absl::Status s = TearDown(run, &sent); !s.ok()) {
      if (!sent.empty()) failures.push_back("request: " + Describe(sent.back()));
      failures.push_back(absl::StrCat("answer (pod ", run->pod.name, "): ", s.message()));
    }
    all.insert(all.end(), sent.begin(), sent.end());
  }
  if (!failures.empty()) {
    failures.push_back(
        "kubelet retries the teardown until it succeeds; the pod's volume stays "
        "in use meanwhile");
    Fail(name, ref, "tearing the pods' volume down failed", failures);
  } else if (!released.empty()) {
    // Not kubelet's teardown: it could not have unmounted those (the target check says why).
    Skip(name, ref,
         absl::StrCat("cannot be judged: kubelet cannot tear down a block volume whose target is not a "
                      "device (see the target check): its UnmapBlockVolume fails with \"device or "
                      "resource busy\" at each retry. The judge unmounted kubelet's bind mounts "
                      "itself (", absl::StrJoin(released, ", "), "), then: ", CallSummary(all)));
  } else {
    Pass(name, ref, CallSummary(all));
  }
  *calls = std::move(all);
}

void Judge::JudgeRepeat(const std::string& name, const SentCall* call, const std::string& ref,
                        const std::string& why_ok) {
  if (call == nullptr) {
    Skip(name, ref, "nothing to repeat: the teardown did not get that far");
    return;
  }
  if (Interrupted()) {
    Skip(name, ref, "interrupted");
    return;
  }
  if (!Selected(name)) return;
  CsiNodeClient client(driver_.endpoint, node_.timeout);
  if (absl::Status s = client.Resend(*call); !s.ok()) {
    Fail(name, ref, absl::StrCat("a repeated ", call->method, " failed"),
         {"request: " + Describe(*call), absl::StrCat("answer: ", s.message()),
          "kubelet needs OK: " + why_ok});
  } else {
    Pass(name, ref, absl::StrCat(call->method, " again: OK"));
  }
}

void Judge::JudgeClean(const std::string& name, const std::vector<PodRun*>& runs, bool block) {
  std::vector<std::string> left, kubelets_own;
  auto note = [&left](const std::string& path) {
    const std::string line = path + " still exists";
    if (Exists(path) && std::find(left.begin(), left.end(), line) == left.end()) {
      left.push_back(line);
    }
  };
  for (PodRun* run : runs) {
    if (!run->plan.has_value()) continue;
    const VolumePlan& plan = *run->plan;
    // The target, kubelet's files for the pod's volume, and the volume's staging directory.
    if (block) {
      for (const std::string& path : {plan.block->publish, plan.block->pod_map, plan.block->staging,
                                      plan.block->volume_dir}) {
        note(path);
      }
    } else {
      note(plan.paths.mount);
      note(plan.paths.dir);
      if (plan.device.has_value()) {
        // kubelet 1.34+ (ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers): MountDevice
        // makes <device dir>/globalmount for a driver that does not stage but writes no
        // vol_data.json there, so UnmountDevice skips it and the empty directories stay. That
        // is kubelet's leftover, not the driver's: said, and removed here.
        const std::string& dir = plan.device->dir;
        if (!stages_ && node_.release.Has(ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers) &&
            // rmdir removes only empty directories: nothing of the driver's can go.
            rmdir(plan.device->globalmount.c_str()) == 0 && rmdir(dir.c_str()) == 0) {
          kubelets_own.push_back(dir);
        }
        note(dir);
      }
    }
  }
  for (const std::string& mount : MountsUnder(node_.root_dir)) {
    left.push_back(absl::StrCat(mount, " is still mounted"));
  }
  if (!left.empty()) {
    Fail(name, kCleanRef, "the teardown left things behind", left);
  } else {
    Pass(name, kCleanRef,
         absl::StrCat("no target, staging directory or volume file left, nothing mounted under ",
                      node_.root_dir,
                      kubelets_own.empty()
                          ? ""
                          : absl::StrCat(" (but for ", absl::StrJoin(kubelets_own, ", "),
                                         " with an empty globalmount/, which kubelet ",
                                         node_.release.Name(),
                                         " itself leaves for a driver that does not stage: "
                                         "removed by the judge)")));
  }
}

}  // namespace ndr::kubelet::sanity

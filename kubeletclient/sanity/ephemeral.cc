// inline/... and generic-ephemeral/...: the ephemeral kinds of volume (judge.h).
#include "kubeletclient/sanity/judge.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ndr::kubelet::sanity {

void Judge::RunEphemeral(const std::string& kind) {
  const std::string prefix = kind + "/";
  const bool inline_volume = kind == "inline";
  if (Interrupted()) {
    SkipChecks(prefix, CheckNames(CheckGroup::kEphemeral), "interrupted");
    return;
  }
  PodRun run;
  run.pod = MakePod("sanity-e", "", /*block=*/false, /*read_only=*/false);
  PodVolume& volume = run.pod.volumes.front();
  volume.claim_name.reset();
  std::vector<std::string> notes;
  // The generic ephemeral volume's claim, as the ephemeral volume controller makes it: named
  // <pod>-<volume>, controlled by the pod, bound to a PV of the first handle (or one created).
  const std::string claim = run.pod.name + "-" + volume.name;
  Provisioned provisioned;
  if (inline_volume) {
    provisioned.handle = "unused";  // kubelet makes an inline volume's handle
  } else if (const std::vector<std::string>& handles = HandlesFor(kind);
             !Provision(prefix, "filesystem", handles.empty() ? "" : handles.front(), claim,
                        CheckNames(CheckGroup::kEphemeral), &provisioned)) {
    return;
  }
  ObjectSet objects =
      ScenarioObjects("filesystem", provisioned, "sanity-ephemeral-1", claim, &notes);
  if (!inline_volume) Attach(prefix, "sanity-ephemeral-1", &provisioned, &objects);
  const std::optional<TokenSource> tokens = StartTokens(objects);
  std::string ref;
  if (inline_volume) {
    notes.clear();  // about the PV and its attachment, which an inline volume has not
    const std::vector<std::string>& modes =
        objects.csi_drivers.at(driver_.name).volume_lifecycle_modes;
    if (std::find(modes.begin(), modes.end(), "Ephemeral") == modes.end()) {
      SkipChecks(prefix, CheckNames(CheckGroup::kEphemeral),
                 "the CSIDriver does not list Ephemeral in volumeLifecycleModes (give one that "
                 "does with --objects to judge inline volumes)");
      return;
    }
    volume.source_types = {"csi"};
    volume.csi.emplace();
    volume.csi->driver = driver_.name;
    volume.csi->read_only = options_.inline_volume.read_only;
    volume.csi->fs_type = options_.inline_volume.fs_type;
    volume.csi->volume_attributes = options_.inline_volume.attributes;
    if (!options_.inline_volume.publish_secret.empty()) {
      volume.csi->node_publish_secret_name = options_.inline_volume.publish_secret;
    } else if (secrets_.Find("NodePublishVolumeSecret") != nullptr) {
      volume.csi->node_publish_secret_name = kFileNodePublishSecret;
    }
    ref =
        "csi_mounter.go SetUpAt for an inline volume: NodePublishVolume with a handle kubelet "
        "makes (csi-<sha256>), csi.storage.k8s.io/ephemeral \"true\", no NodeStageVolume";
  } else {
    volume.source_types = {"ephemeral"};
    volume.ephemeral_claim_template = true;
    PersistentVolumeClaim& pvc = objects.claims.at({kNamespace, claim});
    OwnerReference owner;
    owner.api_version = "v1";
    owner.kind = "Pod";
    owner.name = run.pod.name;
    owner.uid = run.pod.uid;
    owner.controller = true;
    pvc.owner_references.push_back(owner);
    ref =
        "desired_state_of_world_populator.go createVolumeSpec (ephemeral.VolumeIsForPod), then "
        "the persistent volume's MountDevice and SetUp";
  }
  if (!JudgePublish(prefix, CheckNames(CheckGroup::kEphemeral), kind + " volumes", objects, notes,
                    /*may_refuse=*/true, &run, ref)) {
    Deprovision(prefix, provisioned);  // a volume made for the scenario goes all the same
    return;
  }
  JudgeTarget(prefix + "target", run, run.plan->paths.mount, /*block=*/false);
  JudgeReplay(prefix + "restart-replay", run, run.plan->paths.mount);
  std::vector<SentCall> teardown;
  JudgeTeardown(prefix + "teardown", {&run},
                "operation_generator.go GenerateUnmountVolumeFunc (csi_mounter.go TearDownAt: "
                "NodeUnpublishVolume), then for a persistent volume GenerateUnmountDeviceFunc",
                &teardown);
  JudgeRepeat(prefix + "unpublish-removed-target", LastCall(teardown, "NodeUnpublishVolume"),
              kRemovedTargetRef,
              kRemovedTargetOk);
  CleanUp({&run});
  JudgeClean(prefix + "clean", {&run}, /*block=*/false);
  Deprovision(prefix, provisioned);
}

}  // namespace ndr::kubelet::sanity

// The judge's shared context: one Judge per run holds the options, the registered driver, what
// it can do, and the report; the fixtures every group of checks uses (the scenario's objects,
// made-up pods, publish and teardown as kubelet does them, the clean-up that leaves nothing
// behind) are its members too. Each group of checks is defined in a file of its own:
//
//   registration.cc  registration/...            the handshake, NodeGetInfo, capabilities
//   volume.cc        <mode>/publish ... clean    a persistent volume through kubelet's sequence
//   block.cc         block/target, and the teardown of block targets kubelet cannot unmap
//   after_mount.cc   <mode>/tokens, republish, stats, expand
//   ephemeral.cc     inline/..., generic-ephemeral/...
//   controller.cc    controller/..., <mode>/create-volume ... delete-volume
//   fixtures.cc      the shared fixtures
//   sanity.cc        the order of it all (Judge::Run)
//
// checks.h names every check; report.h formats the results. Internal to kubeletclient/sanity.
// Thread-compatible.
#ifndef NDR_KUBELETCLIENT_SANITY_JUDGE_H_
#define NDR_KUBELETCLIENT_SANITY_JUDGE_H_

#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/csi/publisher.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/sanity/checks.h"
#include "kubeletclient/sanity/controller_client.h"
#include "kubeletclient/sanity/provisioning.h"
#include "kubeletclient/sanity/root_dir.h"
#include "kubeletclient/sanity/sanity.h"
#include "kubeletclient/sanity/secrets_file.h"
#include "kubeletclient/volume_command.h"

namespace ndr::kubelet::sanity {

inline constexpr char kNamespace[] = "kubeletclient-sanity";
// The Secrets the secrets file's node secrets become, in kNamespace, so that kubelet's own code
// hands them over from the PV's (or the inline volume's) references, as in a cluster.
inline constexpr char kFileNodeStageSecret[] = "kubeletclient-sanity-node-stage-secret";
inline constexpr char kFileNodePublishSecret[] = "kubeletclient-sanity-node-publish-secret";

// The kubelet functions several checks stand for.
inline constexpr char kReplayRef[] =
    "reconciler.go reconstructVolumes after a kubelet restart: MountDevice and SetUp run again "
    "for the volumes found on disk, with the same arguments (csi_attacher.go MountDevice, "
    "csi_mounter.go SetUpAt)";
inline constexpr char kRemovedTargetRef[] =
    "csi_mounter.go TearDownAt when the target is already gone (a kubelet restart after "
    "removeMountDir): NodeUnpublishVolume all the same";
// Why a NodeUnpublishVolume of a target already gone must be OK, whatever the error: kubelet's
// TearDownAt (csi_mounter.go, v1.26.15 to v1.37.2) returns any error of NodeUnpublishVolume,
// NOT_FOUND included, as a failed teardown and retries it, so only OK ends the teardown.
inline constexpr char kRemovedTargetOk[] =
    "there is nothing left to unpublish (CSI: idempotent); TearDownAt takes any error, NOT_FOUND "
    "included, as a failed teardown and retries it";
inline constexpr char kCleanRef[] =
    "csi_mounter.go TearDownAt and csi_attacher.go UnmountDevice (removeMountDir), csi_block.go "
    "TearDownDevice: nothing mounted, no target, staging directory or volume file left once the "
    "last pod is gone";

// A random UUID (version 4), as the API server gives pods and claims.
std::string RandomUid();
// Whether SIGINT or SIGTERM is pending (the caller blocks both).
bool SignalPending();
bool Exists(const std::string& path);
// What a SentCall's request says, for a FAIL's details.
std::string Describe(const SentCall& call);
// The calls of an outcome, one line: methods and the paths they named.
std::string CallSummary(const std::vector<SentCall>& calls);
// The last call of `method` among `calls`, if any.
const SentCall* LastCall(const std::vector<SentCall>& calls, const std::string& method);
// The call a failed publish is judged by: its last call before the teardown that undid it (a
// publish sends NodeUnpublishVolume or NodeUnstageVolume only to undo itself, after the
// NodeGetCapabilities that teardown asks first); the last call when nothing was undone.
const SentCall* FailedPublishCall(const std::vector<SentCall>& calls);

// One pod of a scenario: what was published for it.
struct PodRun {
  Pod pod;
  std::optional<VolumePlan> plan;
  VolumeOutcome publish;   // the calls of its publish
  bool published = false;  // and not torn down yet
  bool ever_published = false;  // its publish succeeded, torn down since or not
};

// "request: <the last NodePublishVolume of `run`>" for a FAIL's details ("" if none was sent).
std::string PublishRequest(const PodRun& run);

class Judge {
 public:
  Judge(const SanityOptions& options, std::ostream& out)
      : options_(options), out_(out), node_(options.node) {
    if (!options.only.empty()) only_.emplace(options.only, std::regex::ECMAScript);
    if (!options.skip.empty()) skip_.emplace(options.skip, std::regex::ECMAScript);
  }

  SanityReport Run();

 private:
  using Verdict = CheckResult::Verdict;

  // Whether `name` is one of the checks asked for.
  bool Selected(const std::string& name) const {
    if (only_.has_value() && !std::regex_search(name, *only_)) return false;
    if (skip_.has_value() && std::regex_search(name, *skip_)) return false;
    return true;
  }
  void Record(CheckResult result);
  void Pass(const std::string& name, const std::string& kubelet, const std::string& summary,
            std::vector<std::string> details = {}) {
    Record({name, Verdict::kPass, summary, std::move(details), kubelet});
  }
  void Fail(const std::string& name, const std::string& kubelet, const std::string& summary,
            std::vector<std::string> details) {
    Record({name, Verdict::kFail, summary, std::move(details), kubelet});
  }
  void Skip(const std::string& name, const std::string& kubelet, const std::string& summary) {
    Record({name, Verdict::kSkip, summary, {}, kubelet});
  }
  // A SKIP because this run makes no host changes (not root there, or --block-host-ops=skip):
  // counted for the summary line, so that such a run never looks like a full judgement.
  void SkipNeedsRoot(const std::string& name, const std::string& kubelet,
                     const std::string& summary) {
    const int before = report_.skipped;
    Skip(name, kubelet, summary);
    report_.skipped_not_root += report_.skipped - before;
  }
  bool Interrupted() {
    if (!report_.interrupted && SignalPending()) {
      report_.interrupted = true;
      out_ << "Interrupted: skipping the remaining checks and cleaning up" << std::endl;
    }
    return report_.interrupted;
  }
  // Skips `checks` from the `from`th on, under `prefix`, for `why`.
  void SkipChecks(const std::string& prefix, const std::vector<std::string>& checks,
                  const std::string& why, size_t from = 0);
  // Records `checks`, under `prefix`, as not judged: what an earlier check of this run left
  // (`why`) stands in their way. Counted as failures in the exit status.
  void NotJudgedChecks(const std::string& prefix, const std::vector<std::string>& checks,
                       const std::string& why);

  // sanity.cc
  // The handles given for `scenario` (a mode, or "generic-ephemeral"): its own, or the common
  // ones; empty: a volume the driver's controller creates.
  const std::vector<std::string>& HandlesFor(const std::string& scenario) const;
  // Whether the driver serves persistent volumes: its CSIDriver, if given, lists Persistent.
  bool PersistentVolumesServed() const;
  // Skips the persistent-volume checks of `mode` (of each handle given for it).
  void SkipPersistent(const std::string& mode, const std::string& why);
  // The persistent volumes in `modes` and the ephemeral ones: false when nothing could be judged
  // (report_.error says why).
  bool RunVolumes(const std::vector<std::string>& modes, bool ephemeral);

  // registration.cc
  bool Register();
  // Where the Controller service is: --controller-address, or the node plugin's socket.
  std::string ControllerEndpoint() const;
  void JudgeNodeInfo(const DriverInfo& info);
  void ReadCapabilities();
  // registration/storage-health (kubelet 1.37+).
  void JudgeStorageHealth();

  // volume.cc: a persistent volume in `mode`; `handle` empty: a volume the driver's controller
  // creates.
  void RunScenario(const std::string& mode, const std::string& handle, int index);
  void RunVolumeChecks(const std::string& mode, const std::string& prefix,
                       const std::string& pv_name, const ObjectSet& objects,
                       const std::vector<std::string>& notes);
  // Records `<prefix>publish` for the first publish of a scenario; false when the scenario cannot
  // go on (the other checks are then skipped).
  bool JudgePublish(const std::string& prefix, const std::vector<std::string>& checks,
                    const std::string& what, const ObjectSet& objects,
                    const std::vector<std::string>& notes, bool may_refuse, PodRun* run,
                    const std::string& ref);
  // The target `run`'s publish made is what kubelet needs there: a directory, or for block a
  // device (block.cc). A FAIL names the NodePublishVolume that made it.
  void JudgeTarget(const std::string& name, const PodRun& run, const std::string& target,
                   bool block);
  // The same NodeStageVolume and NodePublishVolume as `run`'s publish again: OK, target unchanged.
  void JudgeReplay(const std::string& name, const PodRun& run, const std::string& target);
  // Pods B (a second pod) and C (read-only) published on the volume A published.
  void JudgeOtherPods(const std::string& prefix, const ObjectSet& objects, bool block, PodRun* b,
                      PodRun* c);
  // Pod B's NodeUnpublishVolume twice, before kubelet's own teardown.
  void JudgeUnpublishTwice(const std::string& prefix, bool block, const PodRun& b);
  // Pods B, C, A torn down as kubelet does, then the calls a retried teardown repeats.
  void JudgeVolumeTeardown(const std::string& prefix, bool block, PodRun* a, PodRun* b,
                           PodRun* c);
  // Tears `runs` down in order, recorded as `name`; the calls made go to `calls`.
  void JudgeTeardown(const std::string& name, const std::vector<PodRun*>& runs,
                     const std::string& ref, std::vector<SentCall>* calls);
  // `call` (a NodeUnpublishVolume or NodeUnstageVolume already answered) sent again: OK.
  void JudgeRepeat(const std::string& name, const SentCall* call, const std::string& ref,
                   const std::string& why_ok);
  // Nothing of `runs` left, nothing mounted under the root.
  void JudgeClean(const std::string& name, const std::vector<PodRun*>& runs, bool block);

  // block.cc
  void JudgeBlockTarget(const std::string& name, const std::string& target,
                        const std::string& request);
  // Kubelet's bind mounts of block targets that are not devices, which kubelet cannot unmount,
  // unmounted by the judge; the paths it unmounted.
  std::vector<std::string> ReleaseNonDeviceMaps(const std::vector<PodRun*>& runs);

  // after_mount.cc
  void JudgeTokens(const std::string& name, const CsiDriverObject& csi_driver, bool block,
                   const PodRun& a);
  void JudgeRepublish(const std::string& name, const CsiDriverObject& csi_driver, bool block,
                      const PodRun& a);
  // NodeGetVolumeStats of `a`'s published volume, at kubelet's path: sane numbers, a block
  // volume's capacity its device's size; a filesystem volume's capacity other than `pv_bytes`
  // (its PV's) is said, not failed (a file system's overhead, or a share without quotas).
  void JudgeStats(const std::string& name, const PodRun& a, bool block, int64_t pv_bytes);
  // <mode>/volume-health (kubelet 1.37+).
  void JudgeVolumeHealth(const std::string& name, const PodRun& a, bool block);
  // NodeExpandVolume of `a`'s published volume, its PV (`pv_name` in `objects`) grown twice.
  void JudgeExpand(const std::string& name, const PodRun& a, const std::string& pv_name,
                   const ObjectSet& objects);

  // ephemeral.cc: the inline or generic ephemeral volume (`kind`).
  void RunEphemeral(const std::string& kind);

  // controller.cc
  // A scenario's volume: the handle given, or one created through the driver's Controller
  // service (and attached to this node when the CSIDriver wants attachments).
  struct Provisioned {
    std::string handle;
    bool created = false;   // by CreateVolume: DeleteVolume at the end
    bool attached = false;  // by ControllerPublishVolume: ControllerUnpublishVolume at the end
    bool retained = false;  // created from a StorageClass whose reclaimPolicy is Retain
    StringMap attributes;   // the created volume's volume_context: the PV's volumeAttributes
    int64_t capacity = int64_t{1} << 30;
    CapabilityArgs capability;
    // What the PV carries besides (from the StorageClass, or the secrets file's node secrets).
    std::string fs_type;
    std::vector<std::string> mount_options;
    std::optional<SecretRef> node_stage_secret, node_publish_secret, node_expand_secret;
    // The secrets of the Controller calls after CreateVolume.
    StringMap delete_secrets, publish_secrets, unpublish_secrets;
  };
  // The StorageClass volumes are made from (--storage-class, or the driver's only one), checked
  // for each scenario in `scenarios` that will make one before any volume is made: false on bad
  // input (report_.error says what and what to do).
  bool PrepareProvisioning(const std::vector<std::string>& scenarios);
  // The claim (and PV) name of a scenario's volume: "sanity-fs-<index>", "sanity-block-<index>",
  // or the generic ephemeral volume's claim.
  static std::string ClaimName(const std::string& scenario, int index);
  // The secret data of `ref` among the objects given; NotFound naming it otherwise.
  absl::StatusOr<StringMap> SecretData(const SecretRef& ref) const;
  // The external-provisioner's request for a volume of `claim_name` (provisioning.h).
  absl::StatusOr<ProvisionPlan> PlanFromClass(const std::string& volume_name,
                                              const std::string& claim_name,
                                              const Provisioned& volume) const;
  // The controller's capabilities, when no handle is given: false when it cannot create volumes
  // (then report_.error says so).
  // `without_handle`: the scenarios that need it, for the error.
  bool ReadControllerCapabilities(const std::vector<std::string>& without_handle);
  // Creates the volume when no handle was given (`<prefix>create-volume`), for the claim
  // `claim_name`; false when it could not be, and then the scenario's `checks` are skipped.
  bool Provision(const std::string& prefix, const std::string& mode, const std::string& handle,
                 const std::string& claim_name, const std::vector<std::string>& checks,
                 Provisioned* volume);
  // Attaches a created volume when the CSIDriver of `objects` wants attachments and the driver
  // can (`<prefix>controller-publish`): its publish context becomes the VolumeAttachment's
  // metadata in `objects`.
  void Attach(const std::string& prefix, const std::string& pv_name, Provisioned* volume,
              ObjectSet* objects);
  // Detaches and deletes what Provision and Attach made (`controller-unpublish`,
  // `delete-volume`).
  void Deprovision(const std::string& prefix, const Provisioned& volume);

  // fixtures.cc
  // The objects of a scenario: those given, plus a PV `pv_name` in `mode` of `volume`, bound to
  // the claim `claim_name`, a CSIDriver and a ServiceAccount if none was given, an attachment if
  // the CSIDriver wants one (assumed, unless the driver's controller will make it). What was
  // assumed goes to `notes`.
  ObjectSet ScenarioObjects(const std::string& mode, const Provisioned& volume,
                            const std::string& pv_name, const std::string& claim_name,
                            std::vector<std::string>* notes);
  Pod MakePod(const std::string& name, const std::string& claim, bool block, bool read_only);
  // Service-account tokens over `objects`, when a key was given (node_.tokens points into it).
  std::optional<TokenSource> StartTokens(const ObjectSet& objects);
  // Plans `run.pod`'s volume as kubelet would (run.plan): OK, or kubelet's refusal.
  absl::Status Plan(const ObjectSet& objects, PodRun* run);
  // Publishes `run.pod`, planned first if it is not yet: OK, or why not.
  absl::Status Publish(const ObjectSet& objects, PodRun* run);
  // Tears down `run.pod` as `kubeletclient unpublish` would; the calls go to `calls`.
  absl::Status TearDown(PodRun* run, std::vector<SentCall>* calls);
  // Tears down what is still published of `runs`, saying what could not be.
  void CleanUp(std::vector<PodRun*> runs);
  // The made-up pod's directories under the root, once its volumes are gone, as kubelet removes
  // a deleted pod's; only empty ones.
  void RemovePodDirs(const std::string& pod_uid);

  const SanityOptions& options_;
  std::ostream& out_;
  // The node as the checks see it: the options', with the driver's inline volumes allowed and,
  // per scenario, its token source.
  NodeOptions node_;
  std::optional<std::regex> only_, skip_;
  SanityReport report_;
  absl::Time last_verdict_ = absl::Now();  // for each check's time (Record)
  ObjectSet given_;
  DriverRegistry registry_;
  DriverInfo driver_;
  bool stages_ = false, expands_ = false, stats_ = false;
  ControllerCapabilities controller_;  // read only when volumes are to be created
  const StorageClass* storage_class_ = nullptr;  // in given_, when volumes come from one
  SecretsFile secrets_;                          // --secrets-file, when given
  // The scenario's volume may be expanded: not when a StorageClass without allowVolumeExpansion
  // made it (the API server refuses to grow its claim, so kubelet never expands it).
  bool expansion_allowed_ = true;
};

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_JUDGE_H_

#include "kubeletclient/csi/volume_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/operation_error.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/sha256.h"

namespace ndr::kubelet {
namespace {

// kubelet's supportsVolumeLifecycleMode, with its texts.
absl::Status SupportsMode(const std::string& driver, const std::string& mode,
                          const CsiDriverObject* object) {
  if (object == nullptr) {
    if (mode == "Persistent") return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "volume mode ", GoQuote(mode), " not supported by driver ", driver,
        " (no CSIDriver object)"));
  }
  const auto& modes = object->volume_lifecycle_modes;
  if (std::find(modes.begin(), modes.end(), mode) != modes.end()) return absl::OkStatus();
  std::vector<std::string> quoted;
  for (const std::string& m : modes) quoted.push_back(GoQuote(m));
  return absl::FailedPreconditionError(absl::StrCat("volume mode ", GoQuote(mode),
                                                    " not supported by driver ", driver,
                                                    " (only supports [", absl::StrJoin(quoted, " "),
                                                    "])"));
}

absl::Status Prefixed(const std::string& prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// The in-tree volume types kubelet v1.26 mounts through a CSI driver by default (CSI migration,
// GA by then; k8s.io/csi-translation-lib), and the driver.
std::string MigratedTo(const std::string& type) {
  static const auto* drivers = new std::map<std::string, std::string>{
      {"awsElasticBlockStore", "ebs.csi.aws.com"},
      {"gcePersistentDisk", "pd.csi.storage.gke.io"},
      {"azureDisk", "disk.csi.azure.com"},
      {"azureFile", "file.csi.azure.com"},
      {"cinder", "cinder.csi.openstack.org"},
      {"vsphereVolume", "csi.vsphere.vmware.com"},
  };
  auto it = drivers->find(type);
  return it == drivers->end() ? "" : it->second;
}

// Why kubelet's CSI plugin leaves a volume of `type` to another plugin.
std::string NotCsi(const std::string& type, const std::string& where = "") {
  std::string why = absl::StrCat(type, ": not a CSI volume", where);
  if (std::string driver = MigratedTo(type); !driver.empty()) {
    absl::StrAppend(&why, " (kubelet v1.26 migrates it to the CSI driver ", driver,
                    "; kubeletclient does not translate in-tree volumes)");
  }
  return why;
}

// util.GetPodVolumeNames: the volumes each kind of container use lists, and the SELinux options
// of the containers that mount each (securitycontext.DetermineEffectiveSecurityContext: a
// container's seLinuxOptions replace the pod's whole).
struct PodVolumeUse {
  std::set<std::string> mounts;
  std::set<std::string> devices;
  std::map<std::string, std::vector<std::optional<SeLinuxOptions>>> selinux_contexts;
};

PodVolumeUse VolumeUse(const Pod& pod, const FeatureGates& gates) {
  PodVolumeUse use;
  for (const Container& container : pod.containers) {
    const std::optional<SeLinuxOptions>& options =
        container.se_linux.has_value() ? container.se_linux : pod.se_linux;
    for (const std::string& name : container.volume_mounts) {
      use.mounts.insert(name);
      if (gates.selinux_mount_read_write_once_pod && options.has_value()) {
        use.selinux_contexts[name].push_back(options);
      }
    }
    use.devices.insert(container.volume_devices.begin(), container.volume_devices.end());
  }
  return use;
}

// metav1.IsControlledBy: the owner reference that says controller: true names `uid`.
bool IsControlledBy(const PersistentVolumeClaim& claim, const std::string& uid) {
  for (const OwnerReference& owner : claim.owner_references) {
    if (owner.controller) return owner.uid == uid;
  }
  return false;
}

// desired_state_of_world_populator.go createVolumeSpec for a claim (a persistentVolumeClaim
// volume, or the claim of a generic ephemeral one): getPVCExtractPV, ephemeral.VolumeIsForPod,
// getPVSpec and the volume-mode checks, with their texts. The PV, or why not.
absl::StatusOr<const PersistentVolume*> ClaimedVolume(const Pod& pod, const PodVolume& volume,
                                                      const std::string& claim_name,
                                                      bool ephemeral, const ObjectSet& objects,
                                                      const PodVolumeUse& use) {
  const std::string processing = absl::StrCat("error processing PVC ", pod.ns, "/", claim_name, ": ");
  auto found = objects.claims.find({pod.ns, claim_name});
  if (found == objects.claims.end()) {
    return absl::NotFoundError(absl::StrCat(
        processing, "failed to fetch PVC from API server: persistentvolumeclaims ",
        GoQuote(claim_name), " not found (it is not among the --objects)"));
  }
  const PersistentVolumeClaim& claim = found->second;
  if (claim.being_deleted) {
    return absl::FailedPreconditionError(processing + "PVC is being deleted");
  }
  if (claim.phase != "Bound") {
    return absl::FailedPreconditionError(
        absl::StrCat(processing, "PVC is not bound (status.phase is ", GoQuote(claim.phase), ")"));
  }
  if (claim.volume_name.empty()) {
    return absl::FailedPreconditionError(processing + "PVC has empty pvc.Spec.VolumeName");
  }
  if (ephemeral && !IsControlledBy(claim, pod.uid)) {
    return absl::FailedPreconditionError(absl::StrCat("PVC ", claim.ns, "/", claim.name,
                                                      " was not created for pod ", pod.ns, "/",
                                                      pod.name, " (pod is not owner)"));
  }
  auto pv = objects.volumes.find(claim.volume_name);
  if (pv == objects.volumes.end()) {
    return absl::NotFoundError(absl::StrCat(processing, "failed to fetch PV ", claim.volume_name,
                                            " from API server: persistentvolumes ",
                                            GoQuote(claim.volume_name),
                                            " not found (it is not among the --objects)"));
  }
  const std::optional<ClaimReference>& ref = pv->second.claim_ref;
  if (!ref.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(processing, "found PV object ", pv->first,
                     " but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the "
                     "claim"));
  }
  if (ref->uid != claim.uid) {
    return absl::FailedPreconditionError(
        absl::StrCat(processing, "found PV object ", pv->first, " but its pv.Spec.ClaimRef.UID ",
                     ref->uid, " does not point to claim.UID ", claim.uid));
  }
  // Ours: kubelet compares only the UIDs, which hand-written objects often leave out.
  if (ref->name != claim.name || (!ref->ns.empty() && ref->ns != claim.ns)) {
    return absl::FailedPreconditionError(absl::StrCat(
        processing, "found PV object ", pv->first, " but its pv.Spec.ClaimRef names claim ",
        ref->ns.empty() ? "" : ref->ns + "/", ref->name,
        " (kubelet compares only the claim's UID; an API server binds a PV to one claim)"));
  }
  const std::string& mode = pv->second.volume_mode;
  if (use.mounts.count(volume.name) > 0 && mode != "Filesystem") {
    return absl::FailedPreconditionError(absl::StrCat(
        "volume ", volume.name, " has volumeMode ", mode, ", but is specified in volumeMounts"));
  }
  if (use.devices.count(volume.name) > 0 && mode != "Block") {
    return absl::FailedPreconditionError(absl::StrCat(
        "volume ", volume.name, " has volumeMode ", mode, ", but is specified in volumeDevices"));
  }
  return &pv->second;
}

// desired_state_of_world.go getSELinuxLabel and AddPodToVolume: the label a volume is mounted
// with, or why the pod cannot be admitted.
absl::StatusOr<std::string> SeLinuxLabel(const Pod& pod, const VolumePlan& plan,
                                         const CsiDriverObject* csi_driver,
                                         const std::vector<std::optional<SeLinuxOptions>>& contexts,
                                         const NodeOptions& options, std::vector<std::string>* notes,
                                         bool* conflict_is_error) {
  const FeatureGates& gates = options.feature_gates;
  // csi_plugin.go SupportsSELinuxContextMount.
  const bool plugin_supports = gates.selinux_mount_read_write_once_pod && csi_driver != nullptr &&
                               csi_driver->se_linux_mount.value_or(false);
  if (!plugin_supports) return std::string();
  if (!options.selinux.enabled) {
    notes->push_back(absl::StrCat("SELinux mount: not used, the host has no SELinux (",
                                  options.selinux.source, ")"));
    return std::string();
  }
  const bool supported =
      VolumeSupportsSeLinuxMount(gates, plan.mode == "Persistent", plan.access_modes);
  *conflict_is_error = supported;
  std::string label;
  for (const std::optional<SeLinuxOptions>& context : contexts) {
    const std::string next = SeLinuxOptionsToFileLabel(context, options.selinux);
    if (label.empty()) {
      label = next;
      continue;
    }
    // handleSELinuxMetricError: an error only for a volume that supports SELinux mounts.
    if (label != next && supported) {
      return absl::FailedPreconditionError(
          absl::StrCat("volume ", plan.spec_name,
                       " is used with two different SELinux contexts in the same pod: ",
                       GoQuote(label), ", ", GoQuote(next)));
    }
  }
  if (label.empty()) {
    notes->push_back(
        "SELinux mount: not used, no container that mounts the volume has seLinuxOptions");
    return std::string();
  }
  // GetMountSELinuxLabel (v1.32+, SELinuxChangePolicy): the pod opted out of mount labels.
  if (gates.selinux_change_policy && pod.se_linux_change_policy == "Recursive") {
    notes->push_back(
        "SELinux mount: not used, the pod's securityContext.seLinuxChangePolicy is Recursive "
        "(the container runtime relabels the volume's files instead)");
    return std::string();
  }
  if (!supported) {
    notes->push_back(absl::StrCat(
        "SELinux mount: not used, ",
        gates.selinux_mount ? "an inline volume is never mounted with -o context"
                            : "only a PersistentVolume whose only access mode is "
                              "ReadWriteOncePod is mounted with -o context (SELinuxMount is off; "
                              "on by default from kubelet 1.37)"));
    return std::string();
  }
  notes->push_back(absl::StrCat("SELinux mount: context=", GoQuote(label), " (",
                                options.selinux.source, ")"));
  return label;
}

// Everything after the volume is known to be a CSI volume: csi_plugin.go and csi_mounter.go's
// checks, the paths, the secrets, the volume context.
absl::Status PlanCsiVolume(const Pod& pod, const ObjectSet& objects,
                           const DriverRegistry::Snapshot& drivers, const NodeOptions& options,
                           const PodVolumeUse& use, const std::optional<SecretRef>& publish_secret,
                           StringMap attributes, VolumePlan* plan) {
  auto object = objects.csi_drivers.find(plan->driver);
  const CsiDriverObject* csi_driver =
      object == objects.csi_drivers.end() ? nullptr : &object->second;
  // The desired state of world first (AddPodToVolume: the SELinux label), then what the mount
  // operation checks (csi_mounter.go SetUpAt: the lifecycle mode; the node's inline policy).
  auto contexts = use.selinux_contexts.find(plan->pod_volume);
  absl::StatusOr<std::string> label =
      SeLinuxLabel(pod, *plan, csi_driver,
                   contexts == use.selinux_contexts.end()
                       ? std::vector<std::optional<SeLinuxOptions>>()
                       : contexts->second,
                   options, &plan->notes, &plan->selinux_conflict_is_error);
  if (!label.ok()) return label.status();
  plan->selinux_label = *label;
  if (absl::Status s = SupportsMode(plan->driver, plan->mode, csi_driver); !s.ok()) return s;
  if (plan->mode == "Ephemeral" && options.allowed_inline_drivers.count(plan->driver) == 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "inline CSI volumes of driver ", plan->driver,
        " are not allowed on this node (allowed: [",
        absl::StrJoin(options.allowed_inline_drivers, " "), "]; see --allowed-inline-drivers)"));
  }
  auto registered = drivers.find(plan->driver);
  if (registered == drivers.end()) {
    return absl::NotFoundError(absl::StrCat("driver name ", plan->driver,
                                            " not found in the list of registered CSI drivers"));
  }
  plan->endpoint = registered->second.endpoint;
  if (csi_driver != nullptr) {
    plan->fs_group_policy = csi_driver->fs_group_policy;
    plan->token_requests = csi_driver->token_requests;
    plan->requires_republish = csi_driver->requires_republish;
    plan->tokens_in_secrets =
        options.release.Has(ReleaseBehaviour::kTokensInSecretsField) &&
        csi_driver->service_account_token_in_secrets;
  }
  plan->pod_name = pod.name;
  plan->pod_namespace = pod.ns;
  plan->service_account = pod.service_account;
  // csi_mounter.go podServiceAccountTokenAttrs, checked before anything is sent: the tokens can
  // be minted (a key was given) for a service account that exists. Block volumes get none.
  if (options.publishes && !plan->token_requests.empty() && !plan->capability.block) {
    std::string missing;
    if (options.tokens == nullptr) {
      missing = absl::StrCat(
          "no service-account signing key: CSIDriver ", plan->driver,
          " has tokenRequests, whose tokens kubelet gets from the API server; give "
          "--service-account-key-file=PEM (and --service-account-issuer) to sign them as the API "
          "server does");
    } else if (objects.service_accounts.count({pod.ns, pod.service_account}) == 0) {
      missing = absl::StrCat("serviceaccounts \"", pod.service_account,
                             "\" not found (no ServiceAccount ", pod.ns, "/",
                             pod.service_account, " among the --objects)");
    }
    if (!missing.empty()) {
      return OperationFailed(
          "MountVolume.SetUp", plan->spec_name,
          absl::FailedPreconditionError(
              absl::StrCat("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount "
                           "token attributes: failed to fetch token: ",
                           missing)));
    }
  }
  // skipAttach: no CSIDriver object means attach is required; inline volumes never are.
  plan->attach_required = plan->mode == "Persistent" &&
                          (csi_driver == nullptr || csi_driver->attach_required.value_or(true));

  if (plan->capability.block) {
    absl::StatusOr<BlockPaths> block = BlockPathsFor(options.root_dir, pod.uid, plan->spec_name);
    if (!block.ok()) return block.status();
    plan->block = *std::move(block);
  } else {
    absl::StatusOr<PodVolumePaths> paths =
        PodVolumePathsFor(options.root_dir, pod.uid, plan->spec_name);
    if (!paths.ok()) return paths.status();
    plan->paths = *std::move(paths);
    if (plan->mode == "Persistent") {
      absl::StatusOr<DevicePaths> device =
          DevicePathsFor(options.root_dir, plan->driver, plan->handle);
      if (!device.ok()) return device.status();
      plan->device = *std::move(device);
    }
  }
  if (publish_secret.has_value()) {
    if (plan->capability.block) {
      // csi_block.go publishVolumeForBlock.
      absl::StatusOr<StringMap> data = CredentialsFromSecret(objects, *publish_secret, pod.ns);
      if (!data.ok()) {
        return OperationFailed(
            "MapVolume.MapPodDevice", plan->spec_name,
            absl::Status(data.status().code(),
                         absl::StrCat("kubernetes.io/csi: blockMapper.publishVolumeForBlock failed "
                                      "to get NodePublishSecretRef ",
                                      publish_secret->first, "/", publish_secret->second, ": ",
                                      data.status().message())));
      }
      plan->publish_secrets = *std::move(data);
    } else {
      absl::StatusOr<StringMap> data =
          SecretData(objects, *publish_secret, "NodePublishSecretRef", pod.ns);
      if (!data.ok()) return OperationFailed("MountVolume.SetUp", plan->spec_name, data.status());
      plan->publish_secrets = *std::move(data);
    }
  }
  plan->volume_context = std::move(attributes);
  const bool wants_pod_info =
      (csi_driver != nullptr && csi_driver->pod_info_on_mount.value_or(false)) ||
      registered->second.requires_publish_pod.value_or(false);
  if (wants_pod_info) {
    // Overwrites whatever the pod put there: a pod can never claim another pod's identity.
    plan->volume_context[kPodNameKey] = pod.name;
    plan->volume_context[kPodNamespaceKey] = pod.ns;
    plan->volume_context[kPodUidKey] = pod.uid;
    plan->volume_context[kServiceAccountKey] = pod.service_account;
    plan->volume_context[kEphemeralKey] = plan->mode == "Ephemeral" ? "true" : "false";
  }
  const std::string attachment_id = AttachmentName(plan->handle, plan->driver, options.node_name);
  if (plan->capability.block) {
    // csi_plugin.go NewBlockVolumeMapper: no lifecycle mode, no SELinux context.
    plan->vol_data = {{kVolDataSpecVolId, plan->spec_name},
                      {kVolDataVolumeHandle, plan->handle},
                      {kVolDataDriverName, plan->driver},
                      {kVolDataNodeName, options.node_name},
                      {kVolDataAttachmentId, attachment_id}};
  } else {
    // csi_mounter.go SetUpAt.
    plan->vol_data = {{kVolDataSpecVolId, plan->spec_name},
                      {kVolDataVolumeHandle, plan->handle},
                      {kVolDataDriverName, plan->driver},
                      {kVolDataNodeName, options.node_name},
                      {kVolDataAttachmentId, attachment_id},
                      {kVolDataLifecycleMode, plan->mode}};
    if (!plan->selinux_label.empty()) plan->vol_data[kVolDataSeLinuxMountContext] = plan->selinux_label;
  }
  return absl::OkStatus();
}

}  // namespace

std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name) {
  return "csi-" + Sha256Hex(pod_uid + volume_name);
}

std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node) {
  return "csi-" + Sha256Hex(handle + driver + node);
}

absl::StatusOr<StringMap> CredentialsFromSecret(const ObjectSet& objects, const SecretRef& ref,
                                                const std::string& pod_ns) {
  const auto& [ns, name] = ref;
  auto it = objects.secrets.find({ns, name});
  if (it != objects.secrets.end()) return it->second.data;
  std::string hint;
  for (const auto& [key, secret] : objects.secrets) {
    if (key.second == name && key.first != ns) {
      hint = absl::StrCat(" (a Secret of that name exists in namespace \"", key.first,
                          "\", but secrets are looked up in the pod's namespace \"", pod_ns,
                          "\" only)");
    }
  }
  return absl::NotFoundError(absl::StrCat("kubernetes.io/csi: failed to find the secret ", name,
                                          " in the namespace ", ns, " with error: secrets ",
                                          GoQuote(name), " not found", hint));
}

absl::StatusOr<StringMap> SecretData(const ObjectSet& objects, const SecretRef& ref,
                                     const std::string& what, const std::string& pod_ns) {
  absl::StatusOr<StringMap> data = CredentialsFromSecret(objects, ref, pod_ns);
  if (data.ok()) return data;
  return absl::Status(data.status().code(),
                      absl::StrCat("fetching ", what, " ", ref.first, "/", ref.second,
                                   " failed: ", data.status().message()));
}

absl::Status PodPlan::FirstError() const {
  for (const PlannedVolume& volume : volumes) {
    if (!volume.status.ok()) {
      return Prefixed(absl::StrCat("volume \"", volume.name, "\": "), volume.status);
    }
  }
  return absl::OkStatus();
}

std::vector<VolumePlan*> PodPlan::ToPublish() {
  std::vector<VolumePlan*> plans;
  for (PlannedVolume& volume : volumes) {
    if (volume.plan.has_value() && volume.status.ok()) plans.push_back(&*volume.plan);
  }
  return plans;
}

PodPlan PlanVolumes(const Pod& pod, const ObjectSet& objects,
                    const DriverRegistry::Snapshot& drivers, const NodeOptions& options) {
  PodPlan pod_plan;
  const PodVolumeUse use = VolumeUse(pod, options.feature_gates);
  for (const PodVolume& volume : pod.volumes) {
    PlannedVolume planned;
    planned.name = volume.name;
    auto done = [&] { pod_plan.volumes.push_back(std::move(planned)); };
    if (use.mounts.count(volume.name) == 0 && use.devices.count(volume.name) == 0) {
      planned.skipped =
          "no container lists it in volumeMounts or volumeDevices: kubelet ignores it "
          "(desired_state_of_world_populator.go processPodVolumes)";
      done();
      continue;
    }
    const bool ephemeral = !volume.claim_name.has_value() && volume.ephemeral_claim_template;
    if (!volume.csi.has_value() && !volume.claim_name.has_value() && !ephemeral) {
      planned.skipped = NotCsi(volume.source_type());
      done();
      continue;
    }
    VolumePlan plan;
    plan.release = options.release;
    plan.pod_volume = volume.name;
    plan.pod_uid = pod.uid;
    plan.fs_group = pod.fs_group;
    StringMap attributes;
    std::optional<SecretRef> publish_secret;
    if (volume.csi.has_value()) {
      // Inline: csi_mounter.go SetUpAt's ephemeral branch. Always ReadWriteOnce.
      plan.mode = "Ephemeral";
      plan.driver = volume.csi->driver;
      plan.spec_name = volume.name;
      plan.handle = EphemeralVolumeHandle(pod.uid, volume.name);
      plan.capability.fs_type = volume.csi->fs_type;
      plan.read_only = volume.csi->read_only;
      plan.access_modes_include_rwo = true;
      attributes = volume.csi->volume_attributes;
      if (volume.csi->node_publish_secret_name.has_value()) {
        publish_secret = SecretRef(pod.ns, *volume.csi->node_publish_secret_name);
      }
    } else {
      // A claim: the pod's own, or the one the ephemeral volume controller made for it
      // (ephemeral.VolumeClaimName).
      const std::string claim_name =
          ephemeral ? absl::StrCat(pod.name, "-", volume.name) : *volume.claim_name;
      absl::StatusOr<const PersistentVolume*> pv =
          ClaimedVolume(pod, volume, claim_name, ephemeral, objects, use);
      if (!pv.ok()) {
        planned.status = pv.status();
        done();
        continue;
      }
      if (!(*pv)->csi.has_value()) {
        planned.skipped = NotCsi((*pv)->source_type.empty() ? "PersistentVolume" : (*pv)->source_type,
                                 absl::StrCat(" (PersistentVolume ", (*pv)->name, " of claim ",
                                              pod.ns, "/", claim_name, ")"));
        done();
        continue;
      }
      const PersistentVolume::Csi& csi = *(*pv)->csi;
      plan.mode = "Persistent";
      plan.driver = csi.driver;
      plan.spec_name = (*pv)->name;  // kubelet names a PV's directories after the PV
      plan.claim = absl::StrCat(pod.ns, "/", claim_name);
      if (ephemeral) {
        plan.notes.push_back(absl::StrCat("generic ephemeral volume: claim ", plan.claim,
                                          ", controlled by this pod, bound to PersistentVolume ",
                                          plan.spec_name));
      }
      plan.handle = csi.volume_handle;
      plan.capability.fs_type = csi.fs_type;
      plan.capability.block = (*pv)->volume_mode == "Block";
      // Block volumes get no mount options (csi_block.go: nil at stage, none at publish).
      if (!plan.capability.block) plan.capability.mount_flags = (*pv)->mount_options;
      plan.access_modes = (*pv)->access_modes;
      // The PV's first access mode, ReadWriteOnce without one (csi_mounter.go SetUpAt).
      if (!plan.access_modes.empty()) plan.capability.access_mode = plan.access_modes[0];
      // csi_util.go hasReadWriteOnce: ReadWriteOncePod counts too from v1.32.
      auto has_mode = [&](const char* mode) {
        return std::find(plan.access_modes.begin(), plan.access_modes.end(), mode) !=
               plan.access_modes.end();
      };
      plan.access_modes_include_rwo =
          has_mode("ReadWriteOnce") ||
          (options.release.Has(ReleaseBehaviour::kFsGroupForReadWriteOncePod) &&
           has_mode("ReadWriteOncePod"));
      // Read-only only when the pod's claim says so: kubelet builds the spec with
      // NewSpecFromPersistentVolume(pv, pvcSource.ReadOnly) and ignores spec.csi.readOnly (a
      // generic ephemeral volume's claim source is never read-only).
      plan.read_only = volume.claim_read_only;
      attributes = csi.volume_attributes;
      plan.volume_attributes = csi.volume_attributes;
      publish_secret = csi.node_publish_secret;
      plan.stage_secret_ref = csi.node_stage_secret;
      plan.expand_secret_ref = csi.node_expand_secret;
      plan.pv_capacity = (*pv)->capacity;
      plan.pv_mount_options = (*pv)->mount_options;
      plan.claim_object = objects.claims.at({pod.ns, claim_name});
    }
    if (absl::Status s = PlanCsiVolume(pod, objects, drivers, options, use, publish_secret,
                                       std::move(attributes), &plan);
        !s.ok()) {
      planned.status = s;
    } else {
      if (!plan.selinux_label.empty()) {
        // csi_attacher.go MountDevice and csi_mounter.go SetUpAt add the mount option.
        plan.capability.mount_flags =
            AddSeLinuxMountOption(plan.capability.mount_flags, plan.selinux_label);
      }
      planned.plan = std::move(plan);
    }
    done();
  }
  return pod_plan;
}

}  // namespace ndr::kubelet

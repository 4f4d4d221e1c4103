#include "kubeletclient/csi/volume_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

}  // namespace

std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name) {
  return "csi-" + Sha256Hex(pod_uid + volume_name);
}

std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node) {
  return "csi-" + Sha256Hex(handle + driver + node);
}

absl::StatusOr<StringMap> SecretData(const ObjectSet& objects, const SecretRef& ref,
                                     const std::string& what, const std::string& pod_ns) {
  const auto& [ns, name] = ref;
  auto it = objects.secrets.find({ns, name});
  if (it != objects.secrets.end()) return it->second.data;
  // csi_util.go getCredentialsFromSecret, wrapped as csi_mounter.go and csi_attacher.go do.
  std::string hint;
  for (const auto& [key, secret] : objects.secrets) {
    if (key.second == name && key.first != ns) {
      hint = absl::StrCat(" (a Secret of that name exists in namespace \"", key.first,
                          "\", but secrets are looked up in the pod's namespace \"", pod_ns,
                          "\" only)");
    }
  }
  return absl::NotFoundError(absl::StrCat("fetching ", what, " ", ns, "/", name,
                                          " failed: kubernetes.io/csi: failed to find the secret ",
                                          name, " in the namespace ", ns, " with error: secrets ",
                                          GoQuote(name), " not found", hint));
}

absl::StatusOr<std::vector<VolumePlan>> PlanVolumes(const Pod& pod, const ObjectSet& objects,
                                                    const DriverRegistry::Snapshot& drivers,
                                                    const NodeOptions& options) {
  std::vector<VolumePlan> plans;
  for (const PodVolume& volume : pod.volumes) {
    if (!volume.csi.has_value() && !volume.claim_name.has_value()) continue;
    const std::string where = absl::StrCat("volume \"", volume.name, "\": ");
    VolumePlan plan;
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
      auto claim = objects.claims.find({pod.ns, *volume.claim_name});
      if (claim == objects.claims.end()) {
        return absl::NotFoundError(absl::StrCat(where, "PersistentVolumeClaim ", pod.ns, "/",
                                                *volume.claim_name,
                                                " is not among the --objects"));
      }
      if (claim->second.volume_name.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, "PersistentVolumeClaim ", pod.ns, "/", *volume.claim_name,
            " is not bound (spec.volumeName is empty)"));
      }
      auto pv = objects.volumes.find(claim->second.volume_name);
      if (pv == objects.volumes.end()) {
        return absl::NotFoundError(absl::StrCat(where, "PersistentVolume ",
                                                claim->second.volume_name,
                                                " is not among the --objects"));
      }
      if (!pv->second.csi.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "PersistentVolume ", pv->first, " has no spec.csi: not a CSI volume"));
      }
      const PersistentVolume::Csi& csi = *pv->second.csi;
      plan.mode = "Persistent";
      plan.driver = csi.driver;
      plan.spec_name = pv->first;  // kubelet names a PV's directory after the PV
      plan.handle = csi.volume_handle;
      plan.capability.fs_type = csi.fs_type;
      plan.capability.mount_flags = pv->second.mount_options;
      plan.capability.block = pv->second.volume_mode == "Block";
      // The PV's first access mode, ReadWriteOnce without one (csi_mounter.go SetUpAt).
      if (!pv->second.access_modes.empty()) plan.capability.access_mode = pv->second.access_modes[0];
      const auto& modes = pv->second.access_modes;
      plan.access_modes_include_rwo =
          std::find(modes.begin(), modes.end(), "ReadWriteOnce") != modes.end();
      // Read-only only when the pod's claim says so: kubelet builds the spec with
      // NewSpecFromPersistentVolume(pv, pvcSource.ReadOnly) and ignores spec.csi.readOnly.
      plan.read_only = volume.claim_read_only;
      attributes = csi.volume_attributes;
      plan.volume_attributes = csi.volume_attributes;
      publish_secret = csi.node_publish_secret;
      plan.stage_secret_ref = csi.node_stage_secret;
    }
    if (plan.capability.block) {
      return absl::UnimplementedError(absl::StrCat(
          where, "PersistentVolume ", plan.spec_name,
          " has volumeMode: Block, which kubeletclient does not publish"));
    }

    auto object = objects.csi_drivers.find(plan.driver);
    const CsiDriverObject* csi_driver =
        object == objects.csi_drivers.end() ? nullptr : &object->second;
    if (absl::Status s = SupportsMode(plan.driver, plan.mode, csi_driver); !s.ok()) {
      return Prefixed(where, s);
    }
    if (plan.mode == "Ephemeral" && options.allowed_inline_drivers.count(plan.driver) == 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          where, "inline CSI volumes of driver ", plan.driver,
          " are not allowed on this node (allowed: [",
          absl::StrJoin(options.allowed_inline_drivers, " "), "]; see --allowed-inline-drivers)"));
    }
    auto registered = drivers.find(plan.driver);
    if (registered == drivers.end()) {
      return absl::NotFoundError(absl::StrCat(where, "driver name ", plan.driver,
                                              " not found in the list of registered CSI "
                                              "drivers"));
    }
    plan.endpoint = registered->second.endpoint;
    if (csi_driver != nullptr) plan.fs_group_policy = csi_driver->fs_group_policy;
    // skipAttach: no CSIDriver object means attach is required; inline volumes never are.
    plan.attach_required = plan.mode == "Persistent" &&
                           (csi_driver == nullptr || csi_driver->attach_required.value_or(true));

    absl::StatusOr<PodVolumePaths> paths =
        PodVolumePathsFor(options.root_dir, pod.uid, plan.spec_name);
    if (!paths.ok()) return Prefixed(where, paths.status());
    plan.paths = *std::move(paths);
    if (plan.mode == "Persistent") {
      absl::StatusOr<DevicePaths> device = DevicePathsFor(options.root_dir, plan.driver, plan.handle);
      if (!device.ok()) return Prefixed(where, device.status());
      plan.device = *std::move(device);
    }
    if (publish_secret.has_value()) {
      absl::StatusOr<StringMap> data =
          SecretData(objects, *publish_secret, "NodePublishSecretRef", pod.ns);
      if (!data.ok()) return Prefixed(where, data.status());
      plan.publish_secrets = *std::move(data);
    }
    plan.volume_context = attributes;
    const bool wants_pod_info =
        (csi_driver != nullptr && csi_driver->pod_info_on_mount.value_or(false)) ||
        registered->second.requires_publish_pod.value_or(false);
    if (wants_pod_info) {
      // Overwrites whatever the pod put there: a pod can never claim another pod's identity.
      plan.volume_context[kPodNameKey] = pod.name;
      plan.volume_context[kPodNamespaceKey] = pod.ns;
      plan.volume_context[kPodUidKey] = pod.uid;
      plan.volume_context[kServiceAccountKey] = pod.service_account;
      plan.volume_context[kEphemeralKey] = plan.mode == "Ephemeral" ? "true" : "false";
    }
    plan.vol_data = {
        {kVolDataSpecVolId, plan.spec_name},
        {kVolDataVolumeHandle, plan.handle},
        {kVolDataDriverName, plan.driver},
        {kVolDataNodeName, options.node_name},
        {kVolDataAttachmentId, AttachmentName(plan.handle, plan.driver, options.node_name)},
        {kVolDataLifecycleMode, plan.mode}};
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace ndr::kubelet

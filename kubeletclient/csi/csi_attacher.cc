#include "kubeletclient/csi/csi_attacher.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/operation_error.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
absl::Status WaitForAttach(const ObjectSet& objects, const std::string& node_name,
                           VolumePlan* plan) {
  if (!plan->attach_required) return absl::OkStatus();
  const std::string name = AttachmentName(plan->handle, plan->driver, node_name);
  auto fail = [&](const std::string& why) {
    return OperationFailed(
        plan->block.has_value() ? "MapVolume.WaitForAttach" : "MountVolume.WaitForAttach",
        plan->spec_name, absl::FailedPreconditionError(why));
  };
  auto it = objects.attachments.find(name);
  if (it == objects.attachments.end()) {
    // waitForVolumeAttachmentWithLister's GET error, as the API server words NotFound.
    return fail(absl::StrCat("volume ", plan->handle, " has GET error for volume attachment ",
                             name, ": volumeattachments.storage.k8s.io ", GoQuote(name),
                             " not found"));
  }
  const VolumeAttachment& attachment = it->second;
  // verifyAttachmentStatus (kubelet v1.26.15 pkg/volume/csi/csi_attacher.go) judges the object
  // found under the name alone: its deletion, status.attached, then the attach error. The
  // attacher, node and PV its spec names are not compared (the name is already the hash of
  // handle, driver and node), so one attachment serves every PV of that handle on the node.
  if (attachment.being_deleted) return fail("volume attachment is being deleted");
  // Attached wins; else an attachError is the error, bare.
  if (attachment.attached) {
    plan->publish_context = attachment.attachment_metadata;
    return absl::OkStatus();
  }
  if (attachment.attach_error.has_value()) return fail(*attachment.attach_error);
  return fail(absl::StrCat("attachdetachment timeout for volume ", plan->handle,
                           " (status.attached of VolumeAttachment ", name,
                           " is not true; kubelet waits up to 10m for it)"));
}

absl::Status MountDevice(const VolumePlan& plan, const ObjectSet& objects, const std::string& pod_ns,
                         CsiNodeClient* client) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("MountVolume.MountDevice", plan.spec_name, status);
  };
  const DevicePaths& device = *plan.device;
  absl::StatusOr<bool> stage = client->NodeSupportsStageUnstage();
  if (!stage.ok()) return failed(stage.status());
  StringMap secrets;
  if (*stage && plan.stage_secret_ref.has_value()) {
    absl::StatusOr<StringMap> data =
        SecretData(objects, *plan.stage_secret_ref, "NodeStageSecretRef", pod_ns);
    if (!data.ok()) return failed(data.status());
    secrets = *std::move(data);
  }
  if (absl::Status s = MakeDirsUnder(device.root, device.globalmount, 0750); !s.ok()) {
    return failed(s);
  }
  VolData data = {{kVolDataDriverName, plan.driver}, {kVolDataVolumeHandle, plan.handle}};
  if (!plan.selinux_label.empty()) data[kVolDataSeLinuxMountContext] = plan.selinux_label;
  // v1.26 to v1.33 save vol_data.json before the staging check, for every driver; from v1.34
  // (ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers) only for a staging driver, after its
  // VOLUME_MOUNT_GROUP check, and a driver that does not stage gets an empty globalmount/.
  const bool late_vol_data =
      plan.release.Has(ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers);
  absl::Status status =
      late_vol_data ? absl::OkStatus() : SaveVolData(device.root, device.vol_data, data);
  if (status.ok() && !*stage) {
    // "STAGE_UNSTAGE_VOLUME capability not set. Skipping MountDevice..." Before v1.34 the
    // directory and its vol_data.json stay for UnmountDevice to read.
    return absl::OkStatus();
  }
  CapabilityArgs capability = plan.capability;
  if (status.ok()) {
    absl::StatusOr<bool> mount_group = client->NodeSupportsVolumeMountGroup();
    if (!mount_group.ok()) {
      // v1.34+: nothing saved yet, nothing to clean up; the operation is retried.
      status = absl::Status(mount_group.status().code(),
                            absl::StrCat("attacher.MountDevice failed to determine if the node "
                                         "service has VOLUME_MOUNT_GROUP capability: ",
                                         mount_group.status().message()));
      if (late_vol_data) return failed(status);
    } else if (*mount_group) {
      capability.mount_group = plan.fs_group;
    }
  }
  if (status.ok() && late_vol_data) {
    status = SaveVolData(device.root, device.vol_data, data);
    if (!status.ok()) {
      // "failed to save volume info data", and the directory goes (removeMountDir).
      if (absl::Status cleanup = RemoveMountDir(device.globalmount); !cleanup.ok()) {
        return failed(absl::Status(status.code(), absl::StrCat(status.message(),
                                                               "; cleaning up: ",
                                                               cleanup.message())));
      }
      return failed(status);
    }
  }
  if (status.ok()) {
    csi::v1::NodeStageVolumeRequest sent;
    status = client->NodeStageVolume(plan.handle, plan.publish_context, device.globalmount,
                                     capability, secrets, plan.volume_attributes, &sent);
  }
  if (status.ok()) return absl::OkStatus();
  if (!IsFinalError(status)) {
    return failed(absl::Status(status.code(),
                               absl::StrCat(status.message(), " (the driver's state is uncertain: ",
                                            device.dir, " is left for a retry, as kubelet does)")));
  }
  // A final error: nothing was staged; what MountDevice created goes (removeMountDir).
  if (absl::Status cleanup = RemoveMountDir(device.globalmount); !cleanup.ok()) {
    return failed(absl::Status(status.code(), absl::StrCat(status.message(), "; cleaning up: ",
                                                           cleanup.message())));
  }
  return failed(status);
}

absl::Status UnmountDevice(const DevicePaths& device, const std::string& spec_name,
                           CsiNodeClient* client) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("UnmountDevice", spec_name, status);
  };
  absl::StatusOr<VolumeRef> ref = LoadVolumeRef(device.vol_data);
  if (absl::IsNotFound(ref.status())) return absl::OkStatus();  // nothing was mounted here
  if (!ref.ok()) return failed(ref.status());
  absl::StatusOr<bool> stage = client->NodeSupportsStageUnstage();
  if (!stage.ok()) {
    return failed(absl::Status(stage.status().code(),
                               absl::StrCat("kubernetes.io/csi: attacher.UnmountDevice failed to "
                                            "check whether STAGE_UNSTAGE_VOLUME set: ",
                                            stage.status().message())));
  }
  if (*stage) {
    if (absl::Status s = client->NodeUnstageVolume(ref->handle, device.globalmount); !s.ok()) {
      return failed(absl::Status(s.code(), absl::StrCat("kubernetes.io/csi: attacher.UnmountDevice "
                                                        "failed: ", s.message())));
    }
  }
  if (absl::Status s = RemoveMountDir(device.globalmount); !s.ok()) {
    return failed(absl::Status(s.code(), absl::StrCat("failed to clean up global mount ",
                                                      device.globalmount, ": ", s.message())));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

#include "kubeletclient/csi/csi_block.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/operation_error.h"
#include "kubeletclient/csi/vol_data.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
namespace {


// os.Remove of a directory that should be empty; a missing one is fine.
absl::Status RemoveDir(const std::string& path, const std::string& what) {
  if (rmdir(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("kubernetes.io/csi: failed to ", what, " [", path, "]: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status Wrapped(const std::string& prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::Status SaveBlockVolumeData(const VolumePlan& plan) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("MapVolume.NewBlockVolumeMapper initialization", plan.spec_name,
                           status);
  };
  if (absl::Status s = MakeDirsUnder(plan.block->root, plan.block->data_dir, 0750); !s.ok()) {
    return failed(Wrapped(absl::StrCat("kubernetes.io/csi: failed to create data dir ",
                                       plan.block->data_dir, ":  "),
                          s));
  }
  if (absl::Status s = SaveVolData(plan.block->root, plan.block->vol_data, plan.vol_data);
      !s.ok()) {
    return failed(Wrapped(
        "kubernetes.io/csi: csi.NewBlockVolumeMapper failed to save volume info data: ", s));
  }
  return absl::OkStatus();
}

absl::Status CleanupOrphanDeviceFiles(const BlockPaths& paths) {
  // Every publish made its own file in the publish directory; all are unpublished by now.
  if (absl::Status s = RemoveDir(paths.publish_dir, "remove publish directory"); !s.ok()) return s;
  if (absl::Status s = RemoveDir(paths.staging, "delete volume staging path"); !s.ok()) return s;
  // What is left in volumeDevices/<pv>: data/vol_data.json and the empty dev/.
  return RemoveAll(paths.volume_dir);
}

absl::Status SetUpDevice(const VolumePlan& plan, const ObjectSet& objects,
                         const std::string& pod_ns, CsiNodeClient* client) {
  auto failed = [&](const absl::Status& status) {
    // SetUpDevice: a final error leaves no directories behind.
    if (IsFinalError(status)) (void)CleanupOrphanDeviceFiles(*plan.block);
    return OperationFailed("MapVolume.SetUpDevice", plan.spec_name, status);
  };
  // stageVolumeForBlock.
  absl::StatusOr<bool> stage = client->NodeSupportsStageUnstage();
  if (!stage.ok()) {
    return failed(Wrapped(
        "kubernetes.io/csi: blockMapper.stageVolumeForBlock failed to check "
        "STAGE_UNSTAGE_VOLUME capability: ",
        stage.status()));
  }
  if (!*stage) return absl::OkStatus();  // "STAGE_UNSTAGE_VOLUME capability not set. Skipping"
  StringMap secrets;
  if (plan.stage_secret_ref.has_value()) {
    absl::StatusOr<StringMap> data = CredentialsFromSecret(objects, *plan.stage_secret_ref, pod_ns);
    if (!data.ok()) {
      return failed(Wrapped(absl::StrCat("failed to get NodeStageSecretRef ",
                                         plan.stage_secret_ref->first, "/",
                                         plan.stage_secret_ref->second, ": "),
                            data.status()));
    }
    secrets = *std::move(data);
  }
  if (absl::Status s = MakeDirsUnder(plan.block->root, plan.block->staging, 0750); !s.ok()) {
    return failed(Wrapped(absl::StrCat("kubernetes.io/csi: blockMapper.stageVolumeForBlock failed "
                                       "to create dir ",
                                       plan.block->staging, ": "),
                          s));
  }
  csi::v1::NodeStageVolumeRequest sent;
  if (absl::Status s = client->NodeStageVolume(plan.handle, plan.publish_context,
                                               plan.block->staging, plan.capability, secrets,
                                               plan.volume_attributes, &sent);
      !s.ok()) {
    return failed(s);
  }
  return absl::OkStatus();
}

absl::Status MapPodDevice(const VolumePlan& plan, CsiNodeClient* client) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("MapVolume.MapPodDevice", plan.spec_name, status);
  };
  // publishVolumeForBlock: kubelet makes the publish directory, the driver the file in it.
  if (absl::Status s = MakeDirsUnder(plan.block->root, plan.block->publish_dir, 0750); !s.ok()) {
    return failed(Wrapped(absl::StrCat("kubernetes.io/csi: blockMapper.publishVolumeForBlock "
                                       "failed to create dir ",
                                       plan.block->publish_dir, ":  "),
                          s));
  }
  csi::v1::NodePublishVolumeRequest sent;
  if (absl::Status s = client->NodePublishVolume(
          plan.handle, plan.read_only, plan.block->staging, plan.block->publish, plan.capability,
          plan.publish_context, plan.volume_context, plan.publish_secrets, &sent);
      !s.ok()) {
    return failed(s);
  }
  return absl::OkStatus();
}

absl::Status UnmapPodDevice(const BlockPaths& paths, const std::string& handle,
                            const std::string& spec_name, CsiNodeClient* client) {
  // Sent even when the publish path is gone: an earlier publish may have timed out.
  if (absl::Status s = client->NodeUnpublishVolume(handle, paths.publish); !s.ok()) {
    return OperationFailed(
        "UnmapVolume.UnmapPodDevice", spec_name,
        Wrapped("kubernetes.io/csi: blockMapper.unpublishVolumeForBlock failed: ", s));
  }
  return absl::OkStatus();
}

absl::Status TearDownDevice(const BlockPaths& paths, const std::string& handle,
                            const std::string& spec_name, CsiNodeClient* client,
                            std::vector<std::string>* notes) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("UnmapDevice.TearDownDevice", spec_name, status);
  };
  struct stat st;
  if (stat(paths.staging.c_str(), &st) == 0) {
    // unstageVolumeForBlock.
    absl::StatusOr<bool> stage = client->NodeSupportsStageUnstage();
    if (!stage.ok()) {
      return failed(Wrapped(
          "kubernetes.io/csi: blockMapper.unstageVolumeForBlock failed to check "
          "STAGE_UNSTAGE_VOLUME capability: ",
          stage.status()));
    }
    if (*stage) {
      if (absl::Status s = client->NodeUnstageVolume(handle, paths.staging); !s.ok()) {
        return failed(Wrapped("kubernetes.io/csi: blockMapper.unstageVolumeForBlock failed: ", s));
      }
      if (absl::Status s = RemoveAll(paths.staging); !s.ok()) {
        return failed(Wrapped(absl::StrCat("kubernetes.io/csi: blockMapper.unstageVolumeForBlock "
                                           "failed to remove staging path after "
                                           "NodeUnstageVolume() error [",
                                           paths.staging, "]: "),
                              s));
      }
    }
  } else if (errno != ENOENT) {
    return failed(absl::InternalError(absl::StrCat("stat ", paths.staging, ": ", strerror(errno))));
  }
  // kubelet only logs what the clean-up could not do.
  if (absl::Status s = CleanupOrphanDeviceFiles(paths); !s.ok()) {
    notes->push_back(absl::StrCat("Failed to clean up block volume directory ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

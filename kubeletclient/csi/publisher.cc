#include "kubeletclient/csi/publisher.h"

#include <dirent.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kubeletclient/csi/csi_attacher.h"
#include "kubeletclient/csi/csi_mounter.h"
#include "kubeletclient/csi/operation_error.h"

namespace ndr::kubelet {
namespace {

// The names in `dir` but "." entries, sorted; none if it cannot be read.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool UsedByOtherPods(const std::string& root_dir, const std::string& driver,
                     const std::string& handle, const std::string& except_pod_uid) {
  absl::StatusOr<std::string> pods = PathUnderRoot(root_dir, {"pods"});
  if (!pods.ok()) return false;
  for (const std::string& uid : Entries(*pods)) {
    if (uid == except_pod_uid) continue;
    absl::StatusOr<std::string> volumes = PodCsiVolumesDir(root_dir, uid);
    if (!volumes.ok()) continue;
    for (const std::string& name : Entries(*volumes)) {
      absl::StatusOr<PodVolumePaths> paths = PodVolumePathsFor(root_dir, uid, name);
      if (!paths.ok()) continue;
      // Unreadable or invalid records are not another pod's use: they prove nothing.
      absl::StatusOr<VolumeRef> ref = LoadVolumeRef(paths->vol_data);
      if (ref.ok() && ref->driver == driver && ref->handle == handle &&
          ref->data[kVolDataLifecycleMode] == "Persistent") {
        return true;
      }
    }
  }
  return false;
}

absl::Status WaitForAttachments(const ObjectSet& objects, const std::string& node_name,
                                std::vector<VolumePlan>* plans) {
  for (VolumePlan& plan : *plans) {
    if (absl::Status s = WaitForAttach(objects, node_name, &plan); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("volume \"", plan.pod_volume, "\": ", s.message()));
    }
  }
  return absl::OkStatus();
}

VolumeOutcome PublishVolume(const VolumePlan& plan, const ObjectSet& objects,
                            const std::string& pod_ns, const NodeOptions& options) {
  VolumeOutcome outcome;
  CsiNodeClient client(plan.endpoint, options.timeout, &outcome.calls);
  bool staged_here = false;
  if (plan.device.has_value()) {
    // kubelet mounts a device once for all the pods on the node that use it.
    if (UsedByOtherPods(options.root_dir, plan.driver, plan.handle, plan.pod_uid)) {
      outcome.notes.push_back("MountDevice skipped: another pod on this node uses the volume");
    } else {
      outcome.status = MountDevice(plan, objects, pod_ns, &client);
      if (!outcome.status.ok()) return outcome;
      staged_here = true;
    }
  }
  outcome.status = SetUp(plan, &client);
  if (!outcome.status.ok() && staged_here && IsFinalError(outcome.status) &&
      !UsedByOtherPods(options.root_dir, plan.driver, plan.handle, plan.pod_uid)) {
    // What kubelet's retries would end in once the pod is gone: no device staged for nobody.
    absl::Status unmounted = UnmountDevice(*plan.device, plan.spec_name, &client);
    outcome.notes.push_back(unmounted.ok()
                                ? "UnmountDevice: the device was unstaged again, as no pod uses it"
                                : absl::StrCat("UnmountDevice: ", unmounted.message()));
  }
  return outcome;
}

absl::StatusOr<std::vector<UnpublishPlan>> PlanUnpublish(const std::string& root_dir,
                                                         const std::string& pod_uid) {
  absl::StatusOr<std::string> dir = PodCsiVolumesDir(root_dir, pod_uid);
  if (!dir.ok()) return dir.status();
  std::vector<UnpublishPlan> plans;
  for (const std::string& name : Entries(*dir)) {
    UnpublishPlan plan;
    plan.pod_uid = pod_uid;
    absl::StatusOr<PodVolumePaths> paths = PodVolumePathsFor(root_dir, pod_uid, name);
    if (!paths.ok()) return paths.status();
    plan.paths = *std::move(paths);
    absl::StatusOr<VolumeRef> ref = LoadVolumeRef(plan.paths.vol_data);
    if (!ref.ok()) {
      return absl::Status(ref.status().code(),
                          absl::StrCat("unmounter failed to load volume data file [",
                                       plan.paths.mount, "]: ", ref.status().message()));
    }
    plan.volume = *std::move(ref);
    plans.push_back(std::move(plan));
  }
  return plans;
}

VolumeOutcome UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                              const NodeOptions& options) {
  VolumeOutcome outcome;
  const VolumeRef& volume = plan.volume;
  auto registered = drivers.find(volume.driver);
  if (registered == drivers.end()) {
    outcome.status = absl::NotFoundError(absl::StrCat(
        "driver name ", volume.driver, " not found in the list of registered CSI drivers"));
    return outcome;
  }
  CsiNodeClient client(registered->second.endpoint, options.timeout, &outcome.calls);
  auto spec_name = volume.data.find(kVolDataSpecVolId);
  const std::string name = spec_name == volume.data.end() ? plan.paths.dir : spec_name->second;
  outcome.status = TearDown(plan.paths, volume, name, &client);
  if (!outcome.status.ok()) return outcome;
  auto mode = volume.data.find(kVolDataLifecycleMode);
  if (mode == volume.data.end() || mode->second != "Persistent") return outcome;
  if (UsedByOtherPods(options.root_dir, volume.driver, volume.handle, plan.pod_uid)) {
    outcome.notes.push_back("UnmountDevice skipped: another pod on this node uses the volume");
    return outcome;
  }
  absl::StatusOr<DevicePaths> device =
      DevicePathsFor(options.root_dir, volume.driver, volume.handle);
  outcome.status = device.ok() ? UnmountDevice(*device, name, &client) : device.status();
  return outcome;
}

}  // namespace ndr::kubelet

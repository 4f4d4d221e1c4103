#include "kubeletclient/csi/publisher.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/csi_attacher.h"
#include "kubeletclient/csi/csi_block.h"
#include "kubeletclient/csi/csi_mounter.h"
#include "kubeletclient/csi/operation_error.h"
#include "api/csi_name.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/util/sha256.h"

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

// The vol_data.json of the first pod other than `except_pod_uid` that has a persistent
// filesystem volume of `driver` with `handle`.
std::optional<VolData> OtherPodsVolData(const std::string& root_dir, const std::string& driver,
                                        const std::string& handle,
                                        const std::string& except_pod_uid) {
  absl::StatusOr<std::string> pods = PathUnderRoot(root_dir, {"pods"});
  if (!pods.ok()) return std::nullopt;
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
        return ref->data;
      }
    }
  }
  return std::nullopt;
}

// Whether another pod on the node uses the volume of `plan` (ActualStateOfWorld
// IsVolumeMountedElsewhere, and GetDeviceMountState for the device).
bool InUseElsewhere(const VolumePlan& plan, const NodeOptions& options) {
  if (plan.block.has_value()) return MappedByOtherPods(options.root_dir, plan.spec_name, plan.pod_uid);
  return UsedByOtherPods(options.root_dir, plan.driver, plan.handle, plan.pod_uid);
}

// GenerateUnmapDeviceFunc once the pod's mapping is gone: no pod may still hold a bind mount of
// the device, then TearDownDevice and RemoveMapPath.
absl::Status UnmapBlockDevice(const BlockPaths& paths, const std::string& handle,
                              const std::string& spec_name, CsiNodeClient* client,
                              VolumePathHandler* handler, std::vector<std::string>* notes) {
  absl::StatusOr<std::vector<std::string>> refs = handler->GetDeviceBindMountRefs(paths.global_map);
  if (!refs.ok() && !absl::IsNotFound(refs.status())) {  // not found: SetUpDevice never finished
    return OperationFailed("UnmapDevice.GetDeviceBindMountRefs check", spec_name, refs.status());
  }
  if (refs.ok() && !refs->empty()) {
    return OperationFailed(
        "UnmapDevice", spec_name,
        absl::FailedPreconditionError(absl::StrCat("the device \"", paths.global_map,
                                                   "\" is still referenced from other Pods [",
                                                   absl::StrJoin(*refs, " "), "]")));
  }
  if (absl::Status s = TearDownDevice(paths, handle, spec_name, client, notes); !s.ok()) return s;
  if (absl::Status s = handler->RemoveMapPath(paths.global_map); !s.ok()) {
    return OperationFailed("UnmapDevice.RemoveMapPath", spec_name, s);
  }
  return absl::OkStatus();
}

// GenerateUnmapVolumeFunc, then GenerateUnmapDeviceFunc if no other pod maps the volume.
absl::Status UnmapBlockVolumeOfPod(const BlockPaths& paths, const std::string& pod_uid,
                                   const std::string& handle, const std::string& spec_name,
                                   const NodeOptions& options, CsiNodeClient* client,
                                   VolumePathHandler* handler, std::vector<std::string>* notes) {
  if (absl::Status s = UnmapBlockVolume(handler, paths.global_map, paths.pod_map_dir, spec_name,
                                        pod_uid);
      !s.ok()) {
    return OperationFailed("UnmapVolume.UnmapBlockVolume", spec_name, s);
  }
  if (absl::Status s = UnmapPodDevice(paths, handle, spec_name, client); !s.ok()) return s;
  if (MappedByOtherPods(options.root_dir, spec_name, pod_uid)) {
    notes->push_back("UnmapDevice skipped: another pod on this node maps the volume");
    return absl::OkStatus();
  }
  return UnmapBlockDevice(paths, handle, spec_name, client, handler, notes);
}

VolumeOutcome PublishBlockVolume(const VolumePlan& plan, const ObjectSet& objects,
                                 const std::string& pod_ns, const NodeOptions& options) {
  VolumeOutcome outcome;
  CsiNodeClient client(plan.endpoint, options.timeout, &outcome.calls);
  VolumePathHandler handler(options.change_host, options.host_skip_reason, &outcome.host_steps,
                            [&outcome] { return outcome.calls.size(); });
  const BlockPaths& paths = *plan.block;
  outcome.status = SaveBlockVolumeData(plan);
  if (!outcome.status.ok()) return outcome;
  bool set_up_here = false;
  if (MappedByOtherPods(options.root_dir, plan.spec_name, plan.pod_uid)) {
    // GetDeviceMountState: the device is globally mounted already.
    outcome.notes.push_back("SetUpDevice skipped: another pod on this node maps the volume");
  } else {
    outcome.status = SetUpDevice(plan, objects, pod_ns, &client);
    if (!outcome.status.ok()) return outcome;
    set_up_here = true;
  }
  outcome.status = MapPodDevice(plan, &client);
  if (!outcome.status.ok()) {
    if (set_up_here && IsFinalError(outcome.status) &&
        !MappedByOtherPods(options.root_dir, plan.spec_name, plan.pod_uid)) {
      // What kubelet's retries end in once the pod is gone: no device set up for nobody.
      absl::Status undone =
          UnmapBlockDevice(paths, plan.handle, plan.spec_name, &client, &handler, &outcome.notes);
      outcome.notes.push_back(undone.ok() ? "UnmapDevice: the device was torn down again, as no "
                                            "pod maps it"
                                          : absl::StrCat("UnmapDevice: ", undone.message()));
    }
    return outcome;
  }
  // The volume is published from here on; if it cannot be mapped into the pod, it is unmapped
  // again, as kubelet does when the pod goes away.
  absl::StatusOr<std::string> device = EvalHostSymlinks(paths.publish);
  if (!device.ok()) {
    outcome.status = OperationFailed("MapVolume.EvalHostSymlinks", plan.spec_name, device.status());
  } else if (absl::Status s = MapBlockVolume(&handler, *device, paths.global_map,
                                             paths.pod_map_dir, plan.spec_name, plan.pod_uid);
             !s.ok()) {
    outcome.status = OperationFailed("MapVolume.MapBlockVolume", plan.spec_name, s);
  } else {
    // GenerateMapVolumeFunc: the expansion check once the device is mapped.
    ExpansionOutcome expansion = ExpandVolumeDuringMount(plan, objects, options, pod_ns, &client);
    outcome.notes.insert(outcome.notes.end(), expansion.notes.begin(), expansion.notes.end());
    outcome.claim_status = expansion.claim_status;
    outcome.status = expansion.status;
  }
  if (!outcome.status.ok()) {
    absl::Status undone = UnmapBlockVolumeOfPod(paths, plan.pod_uid, plan.handle, plan.spec_name,
                                                options, &client, &handler, &outcome.notes);
    outcome.notes.push_back(undone.ok() ? "the volume was unmapped and unpublished again"
                                        : absl::StrCat("unmapping it again: ", undone.message()));
  }
  return outcome;
}

}  // namespace

bool UsedByOtherPods(const std::string& root_dir, const std::string& driver,
                     const std::string& handle, const std::string& except_pod_uid) {
  return OtherPodsVolData(root_dir, driver, handle, except_pod_uid).has_value();
}

std::vector<StrandedDevice> PlanStrandedDevices(const std::string& root_dir,
                                                std::vector<std::string>* skipped) {
  std::vector<StrandedDevice> stranded;
  absl::StatusOr<std::string> csi_dir = PathUnderRoot(root_dir, {"plugins", "kubernetes.io", "csi"});
  if (!csi_dir.ok()) return stranded;
  for (const std::string& driver : Entries(*csi_dir)) {
    // volumeDevices (block volumes' files) and anything else that cannot be a driver's name.
    // Only real directories: a symbolic link could lead out of the root.
    struct stat st;
    const std::string driver_dir = absl::StrCat(*csi_dir, "/", driver);
    if (!::ndr::ValidateCsiDriverName(driver).ok() || lstat(driver_dir.c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
      continue;
    }
    for (const std::string& hash : Entries(driver_dir)) {
      const std::string device_dir = absl::StrCat(driver_dir, "/", hash);
      if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos ||
          lstat(device_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        continue;
      }
      const std::string vol_data = absl::StrCat(device_dir, "/vol_data.json");
      absl::StatusOr<VolumeRef> ref = LoadVolumeRef(vol_data);
      if (absl::IsNotFound(ref.status())) continue;  // nothing was staged here
      if (!ref.ok()) {
        skipped->push_back(absl::StrCat(vol_data, ": ", ref.status().message()));
        continue;
      }
      if (ref->driver != driver || Sha256Hex(ref->handle) != hash) {
        skipped->push_back(absl::StrCat(vol_data, ": names driver ", ref->driver,
                                        " and a handle whose hash is not the directory's"));
        continue;
      }
      if (UsedByOtherPods(root_dir, ref->driver, ref->handle, /*except_pod_uid=*/"")) continue;
      absl::StatusOr<DevicePaths> device = DevicePathsFor(root_dir, ref->driver, ref->handle);
      if (!device.ok()) {
        skipped->push_back(absl::StrCat(vol_data, ": ", device.status().message()));
        continue;
      }
      stranded.push_back({*std::move(device), *std::move(ref)});
    }
  }
  return stranded;
}

bool MappedByOtherPods(const std::string& root_dir, const std::string& spec_name,
                       const std::string& except_pod_uid) {
  absl::StatusOr<std::string> pods = PathUnderRoot(root_dir, {"pods"});
  if (!pods.ok()) return false;
  for (const std::string& uid : Entries(*pods)) {
    if (uid == except_pod_uid) continue;
    absl::StatusOr<std::string> entry = PathUnderRoot(
        root_dir, {"pods", uid, "volumeDevices", "kubernetes.io~csi", spec_name}, false);
    struct stat st;
    if (entry.ok() && lstat(entry->c_str(), &st) == 0) return true;
  }
  return false;
}

void CheckNodeState(const NodeOptions& options, PodPlan* pod_plan) {
  for (PlannedVolume& volume : pod_plan->volumes) {
    if (!volume.status.ok() || !volume.plan.has_value()) continue;
    const VolumePlan& plan = *volume.plan;
    if (plan.selinux_conflict_is_error && !plan.block.has_value()) {
      std::optional<VolData> other =
          OtherPodsVolData(options.root_dir, plan.driver, plan.handle, plan.pod_uid);
      if (other.has_value()) {
        const std::string theirs = (*other)[kVolDataSeLinuxMountContext];
        if (theirs != plan.selinux_label) {
          volume.status = absl::FailedPreconditionError(absl::StrCat(
              "conflicting SELinux labels of volume ", plan.spec_name, ": ", GoQuote(theirs),
              " and ", GoQuote(plan.selinux_label), " (another pod on this node uses it)"));
          continue;
        }
      }
    }
    // operation_generator.go: "Enforce ReadWriteOncePod access mode if it is the only one".
    if (options.feature_gates.read_write_once_pod && plan.access_modes.size() == 1 &&
        plan.access_modes[0] == "ReadWriteOncePod" && InUseElsewhere(plan, options)) {
      volume.status = OperationFailed(
          plan.block.has_value() ? "MapVolume.SetUpDevice" : "MountVolume.SetUp", plan.spec_name,
          absl::FailedPreconditionError(
              "volume uses the ReadWriteOncePod access mode and is already in use by another pod"));
    }
  }
}

void WaitForAttachments(const ObjectSet& objects, const std::string& node_name,
                        PodPlan* pod_plan) {
  for (PlannedVolume& volume : pod_plan->volumes) {
    if (!volume.status.ok() || !volume.plan.has_value()) continue;
    volume.status = WaitForAttach(objects, node_name, &*volume.plan);
  }
}

VolumeOutcome PublishVolume(const VolumePlan& plan, const ObjectSet& objects,
                            const std::string& pod_ns, const NodeOptions& options) {
  if (plan.block.has_value()) return PublishBlockVolume(plan, objects, pod_ns, options);
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
  outcome.status = SetUp(plan, &client, options.tokens, &outcome.notes);
  bool torn_down = false;  // published, then unpublished again
  if (outcome.status.ok()) {
    // GenerateMountVolumeFunc: the expansion check after SetUp.
    ExpansionOutcome expansion = ExpandVolumeDuringMount(plan, objects, options, pod_ns, &client);
    outcome.notes.insert(outcome.notes.end(), expansion.notes.begin(), expansion.notes.end());
    outcome.claim_status = expansion.claim_status;
    if (!expansion.status.ok()) {
      outcome.status = expansion.status;
      // The pod cannot start with it; undone as kubelet undoes it once the pod is deleted.
      VolumeRef ref;
      ref.driver = plan.driver;
      ref.handle = plan.handle;
      ref.data = plan.vol_data;
      absl::Status undone = TearDown(plan.paths, ref, plan.spec_name, &client);
      outcome.notes.push_back(undone.ok() ? "the volume was unpublished again"
                                          : absl::StrCat("unpublishing it again: ", undone.message()));
      if (!undone.ok()) return outcome;
      torn_down = true;
    }
  }
  if (!outcome.status.ok() && staged_here && (IsFinalError(outcome.status) || torn_down) &&
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
    plan.spec_name = name;
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
  // reconstruct_common.go getVolumesFromPodDir: a pod's block volumes are its entries in
  // volumeDevices/kubernetes.io~csi, named after their PVs; NewBlockVolumeUnmapper reads the
  // volume's data/vol_data.json.
  absl::StatusOr<std::string> devices = PodCsiVolumeDevicesDir(root_dir, pod_uid);
  if (!devices.ok()) return devices.status();
  for (const std::string& name : Entries(*devices)) {
    UnpublishPlan plan;
    plan.pod_uid = pod_uid;
    plan.spec_name = name;
    absl::StatusOr<BlockPaths> paths = BlockPathsFor(root_dir, pod_uid, name);
    if (!paths.ok()) return paths.status();
    plan.block = *std::move(paths);
    absl::StatusOr<VolumeRef> ref = LoadVolumeRef(plan.block->vol_data);
    if (!ref.ok()) {
      return absl::Status(ref.status().code(),
                          absl::StrCat("kubernetes.io/csi: unmapper failed to load volume data "
                                       "file [",
                                       plan.block->data_dir, "]: ", ref.status().message()));
    }
    plan.volume = *std::move(ref);
    plans.push_back(std::move(plan));
  }
  return plans;
}

namespace {

// The endpoint of `driver`, or why there is none (as kubelet's newCsiDriverClient).
absl::StatusOr<std::string> EndpointFor(const std::string& driver,
                                        const DriverRegistry::Snapshot& drivers) {
  auto registered = drivers.find(driver);
  if (registered == drivers.end()) {
    return absl::NotFoundError(
        absl::StrCat("driver name ", driver, " not found in the list of registered CSI drivers"));
  }
  return registered->second.endpoint;
}

// The volume's spec name as its vol_data.json keeps it, else `fallback`.
std::string SpecName(const VolumeRef& volume, const std::string& fallback) {
  auto spec_name = volume.data.find(kVolDataSpecVolId);
  return spec_name == volume.data.end() ? fallback : spec_name->second;
}

}  // namespace

bool UnpublishFromPod(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                      const NodeOptions& options, VolumeOutcome* outcome) {
  absl::StatusOr<std::string> endpoint = EndpointFor(plan.volume.driver, drivers);
  if (!endpoint.ok()) {
    outcome->status = endpoint.status();
    return false;
  }
  CsiNodeClient client(*endpoint, options.timeout, &outcome->calls);
  if (plan.block.has_value()) {
    // The PV's name is the entry's (checked by BlockPathsFor): it names the link and the paths.
    VolumePathHandler handler(options.change_host, options.host_skip_reason, &outcome->host_steps,
                              [outcome] { return outcome->calls.size(); });
    if (absl::Status s = UnmapBlockVolume(&handler, plan.block->global_map,
                                          plan.block->pod_map_dir, plan.spec_name, plan.pod_uid);
        !s.ok()) {
      outcome->status = OperationFailed("UnmapVolume.UnmapBlockVolume", plan.spec_name, s);
      return false;
    }
    outcome->status = UnmapPodDevice(*plan.block, plan.volume.handle, plan.spec_name, &client);
    if (!outcome->status.ok()) return false;
    if (MappedByOtherPods(options.root_dir, plan.spec_name, plan.pod_uid)) {
      outcome->notes.push_back("UnmapDevice skipped: another pod on this node maps the volume");
      return false;
    }
    return true;
  }
  outcome->status =
      TearDown(plan.paths, plan.volume, SpecName(plan.volume, plan.spec_name), &client);
  if (!outcome->status.ok()) return false;
  auto mode = plan.volume.data.find(kVolDataLifecycleMode);
  if (mode == plan.volume.data.end() || mode->second != "Persistent") return false;
  if (UsedByOtherPods(options.root_dir, plan.volume.driver, plan.volume.handle, plan.pod_uid)) {
    outcome->notes.push_back("UnmountDevice skipped: another pod on this node uses the volume");
    return false;
  }
  return true;
}

void UnpublishDevice(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                     const NodeOptions& options, VolumeOutcome* outcome) {
  absl::StatusOr<std::string> endpoint = EndpointFor(plan.volume.driver, drivers);
  if (!endpoint.ok()) {
    outcome->status = endpoint.status();
    return;
  }
  CsiNodeClient client(*endpoint, options.timeout, &outcome->calls);
  if (plan.block.has_value()) {
    VolumePathHandler handler(options.change_host, options.host_skip_reason, &outcome->host_steps,
                              [outcome] { return outcome->calls.size(); });
    outcome->status = UnmapBlockDevice(*plan.block, plan.volume.handle, plan.spec_name, &client,
                                       &handler, &outcome->notes);
    return;
  }
  absl::StatusOr<DevicePaths> device =
      DevicePathsFor(options.root_dir, plan.volume.driver, plan.volume.handle);
  outcome->status = device.ok()
                        ? UnmountDevice(*device, SpecName(plan.volume, plan.spec_name), &client)
                        : device.status();
}

void UnpublishStrandedDevice(const StrandedDevice& device, const DriverRegistry::Snapshot& drivers,
                             const NodeOptions& options, VolumeOutcome* outcome) {
  absl::StatusOr<std::string> endpoint = EndpointFor(device.volume.driver, drivers);
  if (!endpoint.ok()) {
    outcome->status = endpoint.status();
    return;
  }
  CsiNodeClient client(*endpoint, options.timeout, &outcome->calls);
  outcome->status =
      UnmountDevice(device.device, SpecName(device.volume, device.volume.handle), &client);
}

VolumeOutcome UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                              const NodeOptions& options) {
  VolumeOutcome outcome;
  if (UnpublishFromPod(plan, drivers, options, &outcome)) {
    VolumeOutcome device;
    UnpublishDevice(plan, drivers, options, &device);
    const size_t before = outcome.calls.size();
    for (HostStep step : device.host_steps) {
      step.after_calls += before;
      outcome.host_steps.push_back(step);
    }
    outcome.calls.insert(outcome.calls.end(), device.calls.begin(), device.calls.end());
    outcome.notes.insert(outcome.notes.end(), device.notes.begin(), device.notes.end());
    outcome.status = device.status;
  }
  return outcome;
}

}  // namespace ndr::kubelet

// Fuzzes the Kubernetes object reader (YAML or JSON from files the user hands over) and the
// building of NodePublishVolume requests from what it read, including the volume context. The
// invariants checked: every volume of a pod is accounted for exactly once (skipped, refused or
// planned); a driver that gets pod information always gets the pod's own identity; and every
// path planned, filesystem or raw block (whose paths are built from PV names, and from claims
// named after the pod and its volume), is strictly inside the root directory, with no "." or
// ".." part (checked here by splitting the path, independently of volume_paths.h). Each
// StorageClass read is also made into the external-provisioner's CreateVolume (provisioning.h):
// no reserved key reaches the driver, and every Secret it names is a valid namespace and name, so
// that nothing from the class can name a Secret elsewhere. The same text is also read as a
// csi-sanity secrets file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/csi_json.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/csi/publisher.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/objects/object_validation.h"
#include "kubeletclient/sanity/provisioning.h"
#include "kubeletclient/sanity/secrets_file.h"
#include "nlohmann/json.hpp"

namespace {

constexpr char kRoot[] = "/tmp/ndr-fuzz-root";

void CheckUnderRoot(const std::string& path) {
  const std::string prefix = std::string(kRoot) + "/";
  if (path.compare(0, prefix.size(), prefix) != 0 || path.size() == prefix.size()) abort();
  size_t start = prefix.size();
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) {
      abort();  // a path that could leave the root, or mean something else than it says
    }
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ndr::kubelet::ParseSecretsFile(text, "fuzz.yaml");
  ndr::kubelet::ObjectSet objects;
  if (!ndr::kubelet::ParseObjects(text, "fuzz.yaml", &objects).ok()) return 0;
  for (const auto& [name, storage_class] : objects.storage_classes) {
    for (const bool block : {false, true}) {
      ndr::kubelet::ProvisionInput input;
      input.storage_class = &storage_class;
      input.pv_name = "kubeletclient-sanity-filesystem-12345678";
      input.claim_namespace = "kubeletclient-sanity";
      input.claim_name = "sanity-fs-1";
      input.bytes = 1 << 30;
      input.block = block;
      input.topology = true;
      input.node_topology = {{"topology.example.com/zone", "a"}};
      absl::StatusOr<ndr::kubelet::ProvisionPlan> plan = ndr::kubelet::PlanProvision(input);
      if (!plan.ok()) continue;
      for (const auto& [key, value] : plan->request.parameters()) {
        if (key.rfind("csi.storage.k8s.io/", 0) == 0) abort();  // reserved keys never reach it
      }
      for (const auto* ref : {&plan->provisioner_secret, &plan->controller_publish_secret,
                              &plan->node_stage_secret, &plan->node_publish_secret,
                              &plan->controller_expand_secret, &plan->node_expand_secret}) {
        if (!ref->has_value()) continue;
        if (!ndr::kubelet::IsDns1123Label((*ref)->first).empty() ||
            !ndr::kubelet::IsDns1123Subdomain((*ref)->second).empty()) {
          abort();
        }
      }
    }
  }
  // Every driver the objects mention is registered and asks for pod information.
  ndr::kubelet::DriverRegistry::Snapshot drivers;
  ndr::kubelet::NodeOptions options;
  options.root_dir = kRoot;
  options.node_name = "node";
  options.selinux.enabled = true;  // SELinux labels from the pods' options are planned too
  auto add = [&](const std::string& name) {
    ndr::kubelet::DriverInfo& info = drivers[name];
    info.name = name;
    info.endpoint = "/tmp/ndr-fuzz.sock";
    info.requires_publish_pod = true;
    options.allowed_inline_drivers.insert(name);
  };
  for (const auto& [name, driver] : objects.csi_drivers) add(name);
  for (const auto& [name, pv] : objects.volumes) {
    if (pv.csi.has_value()) add(pv.csi->driver);
  }
  for (const ndr::kubelet::Pod& pod : objects.pods) {
    for (const ndr::kubelet::PodVolume& volume : pod.volumes) {
      if (volume.csi.has_value()) add(volume.csi->driver);
    }
  }
  for (const ndr::kubelet::Pod& pod : objects.pods) {
    ndr::kubelet::PodPlan pod_plan = ndr::kubelet::PlanVolumes(pod, objects, drivers, options);
    ndr::kubelet::WaitForAttachments(objects, options.node_name, &pod_plan);
    if (pod_plan.volumes.size() != pod.volumes.size()) abort();  // every volume is accounted for
    for (const ndr::kubelet::PlannedVolume& planned : pod_plan.volumes) {
      // Each volume is either skipped (with why) and nothing else, or planned, or refused with
      // why (a volume refused after it was planned, for its attachment, keeps its plan).
      const bool skipped = !planned.skipped.empty();
      if (skipped && (planned.plan.has_value() || !planned.status.ok())) abort();
      if (!skipped && !planned.plan.has_value() && planned.status.ok()) abort();
    }
    for (const ndr::kubelet::VolumePlan* plan : pod_plan.ToPublish()) {
      bool found = false;  // only volumes with no error are to be published
      for (const ndr::kubelet::PlannedVolume& planned : pod_plan.volumes) {
        if (planned.plan.has_value() && &*planned.plan == plan) found = planned.status.ok();
      }
      if (!found) abort();
    }
    for (const ndr::kubelet::VolumePlan* plan : pod_plan.ToPublish()) {
      const auto& context = plan->volume_context;
      auto name = context.find(ndr::kubelet::kPodNameKey);
      auto uid = context.find(ndr::kubelet::kPodUidKey);
      if (name == context.end() || name->second != pod.name || uid == context.end() ||
          uid->second != pod.uid) {
        abort();  // pod info is required by every driver here, and must be the pod's own
      }
      std::vector<std::string> paths;
      if (plan->block.has_value()) {
        // PV names and pod UIDs in csi_block.go's paths.
        const ndr::kubelet::BlockPaths& b = *plan->block;
        paths = {b.staging, b.publish_dir, b.publish, b.volume_dir, b.global_map,
                 b.global_map_pod, b.data_dir, b.vol_data, b.pod_map_dir, b.pod_map};
      } else {
        paths = {plan->paths.dir, plan->paths.mount, plan->paths.vol_data};
      }
      if (plan->device.has_value()) {
        paths.insert(paths.end(),
                     {plan->device->dir, plan->device->globalmount, plan->device->vol_data});
      }
      for (const std::string& path : paths) CheckUnderRoot(path);
      // What the command reports as sent: no secret's value, whatever the secret holds.
      csi::v1::NodePublishVolumeRequest request;
      request.mutable_secrets()->insert(plan->publish_secrets.begin(), plan->publish_secrets.end());
      const auto report = nlohmann::json::parse(ndr::RedactedCsiJson(request));
      for (const auto& [key, value] : plan->publish_secrets) {
        if (report["secrets"][key] != "(redacted)") abort();
      }
    }
  }
  return 0;
}

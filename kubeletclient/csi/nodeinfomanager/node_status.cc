#include "kubeletclient/csi/nodeinfomanager/node_status.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {

using json = nlohmann::ordered_json;

std::string RenderNodeStatus(const std::string& node_name,
                             const DriverRegistry::Snapshot& drivers) {
  json csinode_drivers = json::array();
  json status_drivers = json::array();
  json labels = json::object();
  json node_ids = json::object();
  json registry = json::object();
  for (const auto& [name, driver] : drivers) {  // std::map: sorted by name
    json topology_keys = json::array();
    for (const auto& [key, value] : driver.topology) {
      topology_keys.push_back(key);
      labels[key] = value;
    }
    json entry = {{"name", name}, {"nodeID", driver.node_id}, {"topologyKeys", topology_keys}};
    status_drivers.push_back(entry);
    if (driver.max_volumes_per_node > 0) {
      entry["allocatable"] = {{"count", driver.max_volumes_per_node}};
    }
    csinode_drivers.push_back(entry);
    node_ids[name] = driver.node_id;
    registry[name] = {{"endpoint", driver.endpoint},
                      {"registrationSocket", driver.registration_socket},
                      {"version", driver.version},
                      {"requiresPublishPod", driver.requires_publish_pod.has_value()
                                                 ? json(*driver.requires_publish_pod)
                                                 : json(nullptr)},
                      {"maxVolumesPerNode", driver.max_volumes_per_node},
                      {"topology", driver.topology}};
  }
  json annotations = json::object();
  // Kubelet publishes the annotation only while some driver is registered.
  if (!node_ids.empty()) annotations[kNodeIdAnnotation] = node_ids.dump();
  json document = {
      {"nodeName", node_name},
      {"csiNode",
       {{"apiVersion", "storage.k8s.io/v1"},
        {"kind", "CSINode"},
        {"metadata", {{"name", node_name}}},
        {"spec", {{"drivers", csinode_drivers}}}}},
      {"annotations", annotations},
      {"labels", labels},
      {"nodeStatus", {{"csiDrivers", status_drivers}}},
      {"drivers", registry},
  };
  return document.dump(2) + "\n";
}

}  // namespace ndr::kubelet

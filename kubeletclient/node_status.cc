#include "kubeletclient/node_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

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

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  static std::atomic<int> counter{0};
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string temp = absl::StrCat(dir, "/.", base, ".", getpid(), ".", counter++, ".tmp");
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("create ", temp, ": ", strerror(errno)));
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      unlink(temp.c_str());
      return absl::InternalError(absl::StrCat("write ", temp, ": ", strerror(err)));
    }
    written += n;
  }
  if (close(fd) != 0 || rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("write ", path, ": ", strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

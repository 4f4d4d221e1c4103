// The Kubernetes objects `kubeletclient publish` works from, read from YAML or JSON files with
// yaml-cpp: v1 Pod, PersistentVolumeClaim, PersistentVolume and Secret, and storage.k8s.io/v1
// CSIDriver. Only the fields the CSI volume plugin uses are kept.
//
// A file may hold several documents (---) and `kind: List` objects. Anything malformed or
// unsupported is an error naming the file, the object and the field, e.g.
//   pod.yaml: Pod default/web: spec.volumes[1].csi.driver: is required
// Pure functions of their input; thread-compatible.
#ifndef NDR_KUBELETCLIENT_K8S_OBJECTS_H_
#define NDR_KUBELETCLIENT_K8S_OBJECTS_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet {

struct CsiVolumeSource {  // a Pod's inline csi volume
  std::string driver;
  bool read_only = false;
  std::string fs_type;
  std::map<std::string, std::string> volume_attributes;
  std::optional<std::string> node_publish_secret_name;  // in the pod's namespace
};

struct PodVolume {
  std::string name;
  std::optional<CsiVolumeSource> csi;
  std::optional<std::string> claim_name;  // persistentVolumeClaim.claimName
  bool claim_read_only = false;
};

struct Pod {
  std::string file;
  std::string name;
  std::string ns = "default";
  std::string uid;
  std::string service_account = "default";
  std::vector<PodVolume> volumes;
};

struct PersistentVolumeClaim {
  std::string ns;
  std::string name;
  std::string volume_name;  // spec.volumeName: the bound PV
};

struct PersistentVolume {
  std::string name;
  std::vector<std::string> access_modes;
  std::vector<std::string> mount_options;
  struct Csi {
    std::string driver;
    std::string volume_handle;
    bool read_only = false;
    std::string fs_type;
    std::map<std::string, std::string> volume_attributes;
    std::optional<std::pair<std::string, std::string>> node_publish_secret;  // namespace, name
  };
  std::optional<Csi> csi;
};

struct CsiDriverObject {
  std::string name;
  std::optional<bool> attach_required;
  std::optional<bool> pod_info_on_mount;
  std::vector<std::string> volume_lifecycle_modes;  // defaults to ["Persistent"]
};

struct Secret {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> data;  // decoded from base64, merged with stringData
};

// Everything read from the --objects files.
struct ObjectSet {
  std::vector<Pod> pods;
  std::map<std::pair<std::string, std::string>, PersistentVolumeClaim> claims;  // (ns, name)
  std::map<std::string, PersistentVolume> volumes;
  std::map<std::string, CsiDriverObject> csi_drivers;
  std::map<std::pair<std::string, std::string>, Secret> secrets;  // (ns, name)
};

// Reads every object in `path` (a file, or a directory whose *.yaml, *.yml and *.json files are
// read in name order) into `objects`. Duplicate objects are an error.
absl::Status ReadObjects(const std::string& path, ObjectSet* objects);

// Reads every object in `text`, which came from `file` (for error messages).
absl::Status ParseObjects(const std::string& text, const std::string& file, ObjectSet* objects);

// Reads the one Pod in `path`.
absl::StatusOr<Pod> ReadPod(const std::string& path);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_K8S_OBJECTS_H_

// The Kubernetes objects `kubeletclient publish` works from (k8s_types.h), read from YAML or JSON
// files (yaml-cpp; nlohmann-json for text that starts with '{') and validated as the API server
// would validate them (object_validation.h).
//
// A file may hold several documents (---) and `kind: List` objects. Anything malformed,
// unsupported or invalid is an error naming the file, the object and the field, e.g.
//   pod.yaml: Pod default/web: spec.volumes[1].csi.driver: Required value
//   pod.yaml: Pod default/web: metadata.uid: Invalid value: "../x": may not contain '/'
// Pure functions of their input; thread-compatible.
#ifndef NDR_KUBELETCLIENT_OBJECTS_K8S_OBJECTS_H_
#define NDR_KUBELETCLIENT_OBJECTS_K8S_OBJECTS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kubeletclient/objects/k8s_types.h"

namespace ndr::kubelet {

// Everything read from the --objects files.
struct ObjectSet {
  std::vector<Pod> pods;
  std::map<std::pair<std::string, std::string>, PersistentVolumeClaim> claims;  // (ns, name)
  std::map<std::string, PersistentVolume> volumes;
  std::map<std::string, CsiDriverObject> csi_drivers;
  std::map<std::pair<std::string, std::string>, Secret> secrets;  // (ns, name)
  std::map<std::string, VolumeAttachment> attachments;
  std::map<std::pair<std::string, std::string>, ServiceAccount> service_accounts;  // (ns, name)
  std::map<std::string, StorageClass> storage_classes;
};

// Reads every object in `path` (a file, or a directory whose *.yaml, *.yml and *.json files are
// read in name order) into `objects`. Duplicate objects are an error.
absl::Status ReadObjects(const std::string& path, ObjectSet* objects);

// Reads every object in `text`, which came from `file` (for error messages).
absl::Status ParseObjects(const std::string& text, const std::string& file, ObjectSet* objects);

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (no overlong
// forms, surrogates or code points past U+10FFFF), or npos.
size_t FirstInvalidUtf8(absl::string_view text);

// Reads the one Pod in `path`.
absl::StatusOr<Pod> ReadPod(const std::string& path);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_OBJECTS_K8S_OBJECTS_H_

#include "kubeletclient/objects/k8s_objects.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/util/files.h"
#include "kubeletclient/objects/object_validation.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace ndr::kubelet {
namespace {

// A field of a document, with the path used in error messages.
class Field {
 public:
  Field(YAML::Node node, std::string path) : node_(std::move(node)), path_(std::move(path)) {}

  bool present() const { return node_.IsDefined() && !node_.IsNull(); }
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

  // yaml-cpp throws when asked the type of a missing key's node, so every check asks
  // IsDefined() first.
  bool IsMap() const { return node_.IsDefined() && node_.IsMap(); }
  bool IsScalar() const { return node_.IsDefined() && node_.IsScalar(); }

  Field operator[](const std::string& key) const {
    YAML::Node child = IsMap() ? node_[key] : YAML::Node(YAML::NodeType::Undefined);
    return Field(child, path_.empty() ? key : absl::StrCat(path_, ".", key));
  }

  absl::Status Error(absl::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", problem));
  }

  absl::Status RequireMap() const {
    if (!IsMap()) return Error("must be an object");
    return absl::OkStatus();
  }

  // A string: required fields must be present and non-empty ("Required value", as the API
  // server says, with `detail` after it if given).
  absl::StatusOr<std::string> String(bool required, absl::string_view detail = "") const {
    const std::string missing = absl::StrCat("Required value", detail.empty() ? "" : ": ", detail);
    if (!present()) {
      if (required) return Error(missing);
      return std::string();
    }
    if (!IsScalar()) return Error("must be a string");
    std::string value = node_.Scalar();
    if (required && value.empty()) return Error(missing);
    return value;
  }

  absl::StatusOr<std::optional<bool>> Bool() const {
    if (!present()) return std::optional<bool>();
    if (IsScalar() && node_.Scalar() == "true") return std::optional<bool>(true);
    if (IsScalar() && node_.Scalar() == "false") return std::optional<bool>(false);
    return Error("must be true or false");
  }

  absl::StatusOr<std::optional<int64_t>> Int64() const {
    if (!present()) return std::optional<int64_t>();
    int64_t value;
    if (IsScalar() && absl::SimpleAtoi(node_.Scalar(), &value)) {
      return std::optional<int64_t>(value);
    }
    return Error("must be a whole number");
  }

  // A resource quantity ("10Gi"; quantity.h), as a string or a number.
  absl::StatusOr<std::optional<Quantity>> QuantityValue() const {
    if (!present()) return std::optional<Quantity>();
    if (!IsScalar()) return Error("must be a quantity, such as 10Gi");
    absl::StatusOr<Quantity> q = ParseQuantity(node_.Scalar());
    if (!q.ok()) {
      return absl::Status(q.status().code(),
                          absl::StrCat(path_, ": Invalid value: ", GoQuote(node_.Scalar()), ": ",
                                       q.status().message()));
    }
    return std::optional<Quantity>(*q);
  }

  absl::StatusOr<std::map<std::string, std::string>> StringMap() const {
    std::map<std::string, std::string> out;
    if (!present()) return out;
    if (!IsMap()) return Error("must be an object of strings");
    for (const auto& entry : node_) {
      const std::string key = entry.first.Scalar();
      if (!entry.second.IsScalar()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path_, ".", key, ": must be a string"));
      }
      out[key] = entry.second.Scalar();
    }
    return out;
  }

  absl::StatusOr<std::vector<std::string>> StringList() const {
    std::vector<std::string> out;
    if (!present()) return out;
    if (!node_.IsSequence()) return Error("must be a list of strings");
    for (size_t i = 0; i < node_.size(); ++i) {
      if (!node_[i].IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(path_, "[", i, "]: must be a string"));
      }
      out.push_back(node_[i].Scalar());
    }
    return out;
  }

  // The items of a list of objects.
  absl::StatusOr<std::vector<Field>> Objects() const {
    std::vector<Field> out;
    if (!present()) return out;
    if (!node_.IsSequence()) return Error("must be a list");
    for (size_t i = 0; i < node_.size(); ++i) {
      Field item(node_[i], absl::StrCat(path_, "[", i, "]"));
      if (absl::Status s = item.RequireMap(); !s.ok()) return s;
      out.push_back(item);
    }
    return out;
  }

 private:
  YAML::Node node_;
  std::string path_;
};

// Early-return helpers for StatusOr values.
#define NDR_ASSIGN(lhs, expr)              \
  do {                                     \
    auto ndr_value = (expr);               \
    if (!ndr_value.ok()) return ndr_value.status(); \
    lhs = *std::move(ndr_value);           \
  } while (0)

absl::Status CheckApiVersion(const Field& doc, const std::string& kind,
                             const std::vector<std::string>& supported) {
  absl::StatusOr<std::string> api_version = doc["apiVersion"].String(/*required=*/true);
  if (!api_version.ok()) return api_version.status();
  if (std::find(supported.begin(), supported.end(), *api_version) == supported.end()) {
    return doc["apiVersion"].Error(absl::StrCat("\"", *api_version, "\" is not supported for ",
                                                kind, " (use ", absl::StrJoin(supported, " or "),
                                                ")"));
  }
  return absl::OkStatus();
}

absl::Status ParseMetadata(const Field& doc, bool namespaced, std::string* ns, std::string* name) {
  Field metadata = doc["metadata"];
  if (!metadata.present()) return metadata.Error("Required value");
  if (absl::Status s = metadata.RequireMap(); !s.ok()) return s;
  NDR_ASSIGN(*name,
             metadata["name"].String(/*required=*/true, "name or generateName is required"));
  if (namespaced) {
    std::string value;
    NDR_ASSIGN(value, metadata["namespace"].String(/*required=*/false));
    *ns = value.empty() ? "default" : value;
  }
  return absl::OkStatus();
}

// The fields of a v1.VolumeSource, in the order of the Go struct (validateVolumeSource counts
// them in this order), and of a v1.PersistentVolumeSource.
const std::vector<std::string>& VolumeSourceTypes() {
  static const auto* types = new std::vector<std::string>{
      "hostPath",      "emptyDir",       "gcePersistentDisk",    "awsElasticBlockStore",
      "gitRepo",       "secret",         "nfs",                  "iscsi",
      "glusterfs",     "persistentVolumeClaim", "rbd",           "flexVolume",
      "cinder",        "cephfs",         "flocker",              "downwardAPI",
      "fc",            "azureFile",      "configMap",            "vsphereVolume",
      "quobyte",       "azureDisk",      "photonPersistentDisk", "projected",
      "portworxVolume", "scaleIO",       "storageos",            "csi",
      "ephemeral"};
  return *types;
}

const std::vector<std::string>& PersistentVolumeSourceTypes() {
  static const auto* types = new std::vector<std::string>{
      "gcePersistentDisk", "awsElasticBlockStore", "hostPath",     "glusterfs",
      "nfs",               "rbd",                  "iscsi",        "cinder",
      "cephfs",            "fc",                   "flocker",      "flexVolume",
      "azureFile",         "vsphereVolume",        "quobyte",      "azureDisk",
      "photonPersistentDisk", "portworxVolume",    "scaleIO",      "local",
      "storageos",         "csi"};
  return *types;
}

absl::StatusOr<std::optional<SeLinuxOptions>> ParseSeLinuxOptions(const Field& field) {
  if (!field.present()) return std::optional<SeLinuxOptions>();
  if (absl::Status s = field.RequireMap(); !s.ok()) return s;
  SeLinuxOptions options;
  NDR_ASSIGN(options.user, field["user"].String(/*required=*/false));
  NDR_ASSIGN(options.role, field["role"].String(/*required=*/false));
  NDR_ASSIGN(options.type, field["type"].String(/*required=*/false));
  NDR_ASSIGN(options.level, field["level"].String(/*required=*/false));
  return std::optional<SeLinuxOptions>(options);
}

// The names in a container's volumeMounts or volumeDevices.
absl::StatusOr<std::vector<std::string>> VolumeNames(const Field& list) {
  std::vector<Field> items;
  NDR_ASSIGN(items, list.Objects());
  std::vector<std::string> names;
  for (const Field& item : items) {
    std::string name;
    NDR_ASSIGN(name, item["name"].String(/*required=*/false));
    names.push_back(name);
  }
  return names;
}

absl::StatusOr<Pod> ParsePod(const Field& doc) {
  Pod pod;
  if (absl::Status s = CheckApiVersion(doc, "Pod", {"v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, true, &pod.ns, &pod.name); !s.ok()) return s;
  NDR_ASSIGN(pod.uid, doc["metadata"]["uid"].String(/*required=*/true));
  Field spec = doc["spec"];
  if (!spec.present()) return spec.Error("Required value");
  if (absl::Status s = spec.RequireMap(); !s.ok()) return s;
  std::string service_account;
  NDR_ASSIGN(service_account, spec["serviceAccountName"].String(/*required=*/false));
  NDR_ASSIGN(pod.fs_group, spec["securityContext"]["fsGroup"].Int64());
  NDR_ASSIGN(pod.se_linux, ParseSeLinuxOptions(spec["securityContext"]["seLinuxOptions"]));
  NDR_ASSIGN(pod.se_linux_change_policy,
             spec["securityContext"]["seLinuxChangePolicy"].String(/*required=*/false));
  if (!service_account.empty()) pod.service_account = service_account;
  // podutil.VisitContainers' order: init containers, containers, ephemeral containers.
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    std::vector<Field> containers;
    NDR_ASSIGN(containers, spec[list].Objects());
    for (const Field& c : containers) {
      Container container;
      container.field = c.path();
      NDR_ASSIGN(container.name, c["name"].String(/*required=*/false));
      NDR_ASSIGN(container.volume_mounts, VolumeNames(c["volumeMounts"]));
      NDR_ASSIGN(container.volume_devices, VolumeNames(c["volumeDevices"]));
      NDR_ASSIGN(container.se_linux,
                 ParseSeLinuxOptions(c["securityContext"]["seLinuxOptions"]));
      pod.containers.push_back(container);
    }
  }
  std::vector<Field> volumes;
  NDR_ASSIGN(volumes, spec["volumes"].Objects());
  for (const Field& v : volumes) {
    PodVolume volume;
    NDR_ASSIGN(volume.name, v["name"].String(/*required=*/true));
    for (const std::string& type : VolumeSourceTypes()) {
      if (v[type].present()) volume.source_types.push_back(type);
    }
    if (v["csi"].present()) {
      Field csi = v["csi"];
      if (absl::Status s = csi.RequireMap(); !s.ok()) return s;
      CsiVolumeSource source;
      NDR_ASSIGN(source.driver, csi["driver"].String(/*required=*/true));
      std::optional<bool> read_only;
      NDR_ASSIGN(read_only, csi["readOnly"].Bool());
      source.read_only = read_only.value_or(false);
      NDR_ASSIGN(source.fs_type, csi["fsType"].String(/*required=*/false));
      NDR_ASSIGN(source.volume_attributes, csi["volumeAttributes"].StringMap());
      if (csi["nodePublishSecretRef"].present()) {
        std::string name;
        NDR_ASSIGN(name, csi["nodePublishSecretRef"]["name"].String(/*required=*/true));
        source.node_publish_secret_name = name;
      }
      volume.csi = source;
    }
    if (v["persistentVolumeClaim"].present()) {
      Field claim = v["persistentVolumeClaim"];
      if (absl::Status s = claim.RequireMap(); !s.ok()) return s;
      std::string name;
      NDR_ASSIGN(name, claim["claimName"].String(/*required=*/true));
      volume.claim_name = name;
      std::optional<bool> read_only;
      NDR_ASSIGN(read_only, claim["readOnly"].Bool());
      volume.claim_read_only = read_only.value_or(false);
    }
    if (v["ephemeral"].present()) {
      Field ephemeral = v["ephemeral"];
      if (absl::Status s = ephemeral.RequireMap(); !s.ok()) return s;
      Field claim_template = ephemeral["volumeClaimTemplate"];
      if (claim_template.present()) {
        if (absl::Status s = claim_template.RequireMap(); !s.ok()) return s;
        volume.ephemeral_claim_template = true;
      }
    }
    pod.volumes.push_back(volume);
  }
  // What kubelet's health round wrote before: the next round writes only a change.
  std::vector<Field> health;
  NDR_ASSIGN(health, doc["status"]["volumeHealth"].Objects());
  for (const Field& h : health) {
    PodVolumeHealth entry;
    NDR_ASSIGN(entry.name, h["name"].String(/*required=*/true));
    std::vector<Field> conditions;
    NDR_ASSIGN(conditions, h["healthConditions"].Objects());
    for (const Field& c : conditions) {
      PodVolumeHealth::Condition condition;
      NDR_ASSIGN(condition.status, c["status"].String(/*required=*/true));
      NDR_ASSIGN(condition.reason, c["reason"].String(/*required=*/true));
      NDR_ASSIGN(condition.message, c["message"].String(/*required=*/false));
      entry.conditions.push_back(condition);
    }
    pod.volume_health.push_back(entry);
  }
  return pod;
}

absl::StatusOr<PersistentVolumeClaim> ParseClaim(const Field& doc) {
  PersistentVolumeClaim claim;
  if (absl::Status s = CheckApiVersion(doc, "PersistentVolumeClaim", {"v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, true, &claim.ns, &claim.name); !s.ok()) return s;
  Field metadata = doc["metadata"];
  NDR_ASSIGN(claim.uid, metadata["uid"].String(/*required=*/false));
  // Any value means the API server has set it: the claim is being deleted.
  claim.being_deleted = metadata["deletionTimestamp"].present();
  std::vector<Field> owners;
  NDR_ASSIGN(owners, metadata["ownerReferences"].Objects());
  for (const Field& o : owners) {
    OwnerReference owner;
    NDR_ASSIGN(owner.api_version, o["apiVersion"].String(/*required=*/false));
    NDR_ASSIGN(owner.kind, o["kind"].String(/*required=*/false));
    NDR_ASSIGN(owner.name, o["name"].String(/*required=*/false));
    NDR_ASSIGN(owner.uid, o["uid"].String(/*required=*/false));
    std::optional<bool> controller;
    NDR_ASSIGN(controller, o["controller"].Bool());
    owner.controller = controller.value_or(false);
    claim.owner_references.push_back(owner);
  }
  NDR_ASSIGN(claim.volume_name, doc["spec"]["volumeName"].String(/*required=*/false));
  NDR_ASSIGN(claim.requested, doc["spec"]["resources"]["requests"]["storage"].QuantityValue());
  std::string phase;
  NDR_ASSIGN(phase, doc["status"]["phase"].String(/*required=*/false));
  if (!phase.empty()) claim.phase = phase;
  NDR_ASSIGN(claim.capacity, doc["status"]["capacity"]["storage"].QuantityValue());
  NDR_ASSIGN(claim.access_modes, doc["spec"]["accessModes"].StringList());
  std::map<std::string, std::string> annotations;
  NDR_ASSIGN(annotations, doc["metadata"]["annotations"].StringMap());
  for (const auto& [key, value] : annotations) claim.annotation_keys.insert(key);
  claim.has_allocated_resources = doc["status"]["allocatedResources"].present();
  NDR_ASSIGN(claim.allocated, doc["status"]["allocatedResources"]["storage"].QuantityValue());
  NDR_ASSIGN(claim.resize_status,
             doc["status"]["allocatedResourceStatuses"]["storage"].String(/*required=*/false));
  std::vector<Field> conditions;
  NDR_ASSIGN(conditions, doc["status"]["conditions"].Objects());
  for (const Field& c : conditions) {
    ClaimCondition condition;
    NDR_ASSIGN(condition.type, c["type"].String(/*required=*/true));
    NDR_ASSIGN(condition.status, c["status"].String(/*required=*/true));
    NDR_ASSIGN(condition.reason, c["reason"].String(/*required=*/false));
    NDR_ASSIGN(condition.message, c["message"].String(/*required=*/false));
    claim.conditions.push_back(condition);
  }
  return claim;
}

absl::StatusOr<PersistentVolume> ParseVolume(const Field& doc) {
  PersistentVolume pv;
  std::string unused;
  if (absl::Status s = CheckApiVersion(doc, "PersistentVolume", {"v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, false, &unused, &pv.name); !s.ok()) return s;
  Field spec = doc["spec"];
  if (!spec.present()) return spec.Error("Required value");
  if (absl::Status s = spec.RequireMap(); !s.ok()) return s;
  NDR_ASSIGN(pv.access_modes, spec["accessModes"].StringList());
  NDR_ASSIGN(pv.mount_options, spec["mountOptions"].StringList());
  NDR_ASSIGN(pv.capacity, spec["capacity"]["storage"].QuantityValue());
  std::string volume_mode;
  NDR_ASSIGN(volume_mode, spec["volumeMode"].String(/*required=*/false));
  if (!volume_mode.empty()) pv.volume_mode = volume_mode;
  if (spec["claimRef"].present()) {
    Field ref = spec["claimRef"];
    if (absl::Status s = ref.RequireMap(); !s.ok()) return s;
    ClaimReference claim_ref;
    NDR_ASSIGN(claim_ref.ns, ref["namespace"].String(/*required=*/false));
    NDR_ASSIGN(claim_ref.name, ref["name"].String(/*required=*/false));
    NDR_ASSIGN(claim_ref.uid, ref["uid"].String(/*required=*/false));
    pv.claim_ref = claim_ref;
  }
  for (const std::string& type : PersistentVolumeSourceTypes()) {
    if (spec[type].present()) {
      pv.source_type = type;
      break;
    }
  }
  if (spec["csi"].present()) {
    Field csi = spec["csi"];
    if (absl::Status s = csi.RequireMap(); !s.ok()) return s;
    PersistentVolume::Csi source;
    NDR_ASSIGN(source.driver, csi["driver"].String(/*required=*/true));
    NDR_ASSIGN(source.volume_handle, csi["volumeHandle"].String(/*required=*/true));
    std::optional<bool> read_only;
    NDR_ASSIGN(read_only, csi["readOnly"].Bool());
    source.read_only = read_only.value_or(false);
    NDR_ASSIGN(source.fs_type, csi["fsType"].String(/*required=*/false));
    NDR_ASSIGN(source.volume_attributes, csi["volumeAttributes"].StringMap());
    for (auto [key, ref] : {std::pair{"nodePublishSecretRef", &source.node_publish_secret},
                            std::pair{"nodeStageSecretRef", &source.node_stage_secret},
                            std::pair{"nodeExpandSecretRef", &source.node_expand_secret}}) {
      if (!csi[key].present()) continue;
      std::string ns, name;
      NDR_ASSIGN(name, csi[key]["name"].String(/*required=*/true));
      NDR_ASSIGN(ns, csi[key]["namespace"].String(/*required=*/true));
      *ref = std::make_pair(ns, name);
    }
    pv.csi = source;
  }
  return pv;
}

absl::StatusOr<CsiDriverObject> ParseCsiDriver(const Field& doc) {
  CsiDriverObject driver;
  std::string unused;
  if (absl::Status s = CheckApiVersion(doc, "CSIDriver", {"storage.k8s.io/v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, false, &unused, &driver.name); !s.ok()) return s;
  Field spec = doc["spec"];
  if (spec.present()) {
    if (absl::Status s = spec.RequireMap(); !s.ok()) return s;
  }
  NDR_ASSIGN(driver.attach_required, spec["attachRequired"].Bool());
  NDR_ASSIGN(driver.pod_info_on_mount, spec["podInfoOnMount"].Bool());
  NDR_ASSIGN(driver.se_linux_mount, spec["seLinuxMount"].Bool());
  NDR_ASSIGN(driver.volume_lifecycle_modes, spec["volumeLifecycleModes"].StringList());
  if (driver.volume_lifecycle_modes.empty()) driver.volume_lifecycle_modes = {"Persistent"};
  std::string policy;
  NDR_ASSIGN(policy, spec["fsGroupPolicy"].String(/*required=*/false));
  if (!policy.empty()) driver.fs_group_policy = policy;
  std::vector<Field> token_requests;
  NDR_ASSIGN(token_requests, spec["tokenRequests"].Objects());
  for (const Field& t : token_requests) {
    TokenRequest request;
    NDR_ASSIGN(request.audience, t["audience"].String(/*required=*/false));
    NDR_ASSIGN(request.expiration_seconds, t["expirationSeconds"].Int64());
    driver.token_requests.push_back(request);
  }
  std::optional<bool> republish;
  NDR_ASSIGN(republish, spec["requiresRepublish"].Bool());
  driver.requires_republish = republish.value_or(false);
  std::optional<bool> tokens_in_secrets;
  NDR_ASSIGN(tokens_in_secrets, spec["serviceAccountTokenInSecrets"].Bool());
  driver.service_account_token_in_secrets = tokens_in_secrets.value_or(false);
  NDR_ASSIGN(driver.node_allocatable_update_period_seconds,
             spec["nodeAllocatableUpdatePeriodSeconds"].Int64());
  return driver;
}

absl::StatusOr<VolumeAttachment> ParseVolumeAttachment(const Field& doc) {
  VolumeAttachment attachment;
  std::string unused;
  if (absl::Status s = CheckApiVersion(doc, "VolumeAttachment", {"storage.k8s.io/v1"}); !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseMetadata(doc, false, &unused, &attachment.name); !s.ok()) return s;
  attachment.being_deleted = doc["metadata"]["deletionTimestamp"].present();
  Field spec = doc["spec"];
  if (!spec.present()) return spec.Error("Required value");
  if (absl::Status s = spec.RequireMap(); !s.ok()) return s;
  NDR_ASSIGN(attachment.attacher, spec["attacher"].String(/*required=*/false));
  NDR_ASSIGN(attachment.node_name, spec["nodeName"].String(/*required=*/false));
  NDR_ASSIGN(attachment.persistent_volume_name,
             spec["source"]["persistentVolumeName"].String(/*required=*/false));
  Field status = doc["status"];
  if (status.present()) {
    if (absl::Status s = status.RequireMap(); !s.ok()) return s;
    std::optional<bool> attached;
    NDR_ASSIGN(attached, status["attached"].Bool());
    attachment.attached = attached.value_or(false);
    NDR_ASSIGN(attachment.attachment_metadata, status["attachmentMetadata"].StringMap());
    if (status["attachError"].present()) {
      std::string message;
      NDR_ASSIGN(message, status["attachError"]["message"].String(/*required=*/false));
      attachment.attach_error = message;
    }
  }
  return attachment;
}

absl::StatusOr<Secret> ParseSecret(const Field& doc) {
  Secret secret;
  if (absl::Status s = CheckApiVersion(doc, "Secret", {"v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, true, &secret.ns, &secret.name); !s.ok()) return s;
  std::map<std::string, std::string> data;
  NDR_ASSIGN(data, doc["data"].StringMap());
  for (const auto& [key, encoded] : data) {
    std::string decoded;
    if (!absl::Base64Unescape(encoded, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat("data.", key, ": is not valid base64"));
    }
    secret.data[key] = decoded;
  }
  std::map<std::string, std::string> string_data;
  NDR_ASSIGN(string_data, doc["stringData"].StringMap());
  for (const auto& [key, value] : string_data) secret.data[key] = value;
  return secret;
}

absl::StatusOr<ServiceAccount> ParseServiceAccount(const Field& doc) {
  ServiceAccount account;
  if (absl::Status s = CheckApiVersion(doc, "ServiceAccount", {"v1"}); !s.ok()) return s;
  if (absl::Status s = ParseMetadata(doc, true, &account.ns, &account.name); !s.ok()) return s;
  NDR_ASSIGN(account.uid, doc["metadata"]["uid"].String(/*required=*/false));
  return account;
}

absl::StatusOr<StorageClass> ParseStorageClass(const Field& doc) {
  StorageClass storage_class;
  std::string unused;
  if (absl::Status s = CheckApiVersion(doc, "StorageClass", {"storage.k8s.io/v1"}); !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseMetadata(doc, false, &unused, &storage_class.name); !s.ok()) return s;
  NDR_ASSIGN(storage_class.provisioner, doc["provisioner"].String(/*required=*/true));
  NDR_ASSIGN(storage_class.parameters, doc["parameters"].StringMap());
  std::string value;
  NDR_ASSIGN(value, doc["reclaimPolicy"].String(/*required=*/false));
  if (!value.empty()) storage_class.reclaim_policy = value;
  NDR_ASSIGN(storage_class.mount_options, doc["mountOptions"].StringList());
  NDR_ASSIGN(storage_class.allow_volume_expansion, doc["allowVolumeExpansion"].Bool());
  NDR_ASSIGN(value, doc["volumeBindingMode"].String(/*required=*/false));
  if (!value.empty()) storage_class.volume_binding_mode = value;
  std::vector<Field> terms;
  NDR_ASSIGN(terms, doc["allowedTopologies"].Objects());
  for (const Field& t : terms) {
    TopologySelectorTerm term;
    std::vector<Field> expressions;
    NDR_ASSIGN(expressions, t["matchLabelExpressions"].Objects());
    for (const Field& e : expressions) {
      TopologySelectorTerm::Expression expression;
      NDR_ASSIGN(expression.key, e["key"].String(/*required=*/true));
      NDR_ASSIGN(expression.values, e["values"].StringList());
      term.match_label_expressions.push_back(expression);
    }
    storage_class.allowed_topologies.push_back(term);
  }
  return storage_class;
}

// `name` as it is if it holds only characters names are made of (and '/'), else Go-quoted.
std::string PrintableName(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '/';
  });
  return plain ? name : GoQuote(name);
}

// Calls `visit` for every object in `documents` (from `file`, for error messages).
absl::Status ForEachObject(const std::string& file, const std::vector<YAML::Node>& documents,
                           const std::function<absl::Status(const Field&, const std::string& kind)>&
                               visit) {
  std::vector<std::pair<Field, std::string>> objects;  // object, where
  for (size_t d = 0; d < documents.size(); ++d) {
    const std::string where = absl::StrCat(file, ": document ", d + 1);
    if (documents[d].IsNull()) continue;  // an empty document, e.g. a trailing ---
    Field doc(documents[d], "");
    if (!doc.node().IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": is not an object"));
    }
    if (doc["kind"].IsScalar() && doc["kind"].node().Scalar() == "List") {
      absl::StatusOr<std::vector<Field>> items = doc["items"].Objects();
      if (!items.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", items.status().message()));
      for (size_t i = 0; i < items->size(); ++i) {
        objects.emplace_back(Field((*items)[i].node(), ""), absl::StrCat(where, " items[", i, "]"));
      }
    } else {
      objects.emplace_back(doc, where);
    }
  }
  for (const auto& [object, where] : objects) {
    absl::StatusOr<std::string> kind = object["kind"].String(/*required=*/true);
    if (!kind.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", kind.status().message()));
    // Name the object in errors once its name is known; a name that is not plainly printable
    // (it may be hostile: this is what is being validated) is quoted.
    std::string name = where;
    if (object["metadata"]["name"].IsScalar()) {
      std::string ns = object["metadata"]["namespace"].IsScalar()
                           ? object["metadata"]["namespace"].node().Scalar() + "/"
                           : "";
      name = absl::StrCat(file, ": ", *kind, " ",
                          PrintableName(ns + object["metadata"]["name"].node().Scalar()));
    }
    if (absl::Status s = visit(object, *kind); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

// Each object is validated as the API server would before it joins the set (object_validation.h):
// nothing built from an invalid object is ever used.
absl::Status AddObject(const std::string& file, const Field& object, const std::string& kind,
                       ObjectSet* objects) {
  if (kind == "Pod") {
    Pod pod;
    NDR_ASSIGN(pod, ParsePod(object));
    if (absl::Status s = ValidatePod(pod); !s.ok()) return s;
    pod.file = file;
    objects->pods.push_back(pod);
  } else if (kind == "PersistentVolumeClaim") {
    PersistentVolumeClaim claim;
    NDR_ASSIGN(claim, ParseClaim(object));
    if (absl::Status s = ValidatePersistentVolumeClaim(claim); !s.ok()) return s;
    if (!objects->claims.emplace(std::make_pair(claim.ns, claim.name), claim).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "PersistentVolume") {
    PersistentVolume pv;
    NDR_ASSIGN(pv, ParseVolume(object));
    if (absl::Status s = ValidatePersistentVolume(pv); !s.ok()) return s;
    if (!objects->volumes.emplace(pv.name, pv).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "CSIDriver") {
    CsiDriverObject driver;
    NDR_ASSIGN(driver, ParseCsiDriver(object));
    if (absl::Status s = ValidateCsiDriverObject(driver); !s.ok()) return s;
    if (!objects->csi_drivers.emplace(driver.name, driver).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "VolumeAttachment") {
    VolumeAttachment attachment;
    NDR_ASSIGN(attachment, ParseVolumeAttachment(object));
    if (absl::Status s = ValidateVolumeAttachment(attachment); !s.ok()) return s;
    if (!objects->attachments.emplace(attachment.name, attachment).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "Secret") {
    Secret secret;
    NDR_ASSIGN(secret, ParseSecret(object));
    if (absl::Status s = ValidateSecret(secret); !s.ok()) return s;
    if (!objects->secrets.emplace(std::make_pair(secret.ns, secret.name), secret).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "ServiceAccount") {
    ServiceAccount account;
    NDR_ASSIGN(account, ParseServiceAccount(object));
    if (absl::Status s = ValidateServiceAccount(account); !s.ok()) return s;
    if (!objects->service_accounts.emplace(std::make_pair(account.ns, account.name), account)
             .second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else if (kind == "StorageClass") {
    StorageClass storage_class;
    NDR_ASSIGN(storage_class, ParseStorageClass(object));
    if (absl::Status s = ValidateStorageClass(storage_class); !s.ok()) return s;
    if (!objects->storage_classes.emplace(storage_class.name, storage_class).second) {
      return absl::InvalidArgumentError("is given twice");
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("kind \"", kind,
                     "\" is not supported (Pod, PersistentVolumeClaim, PersistentVolume, "
                     "CSIDriver, StorageClass, VolumeAttachment, Secret, ServiceAccount, List)"));
  }
  return absl::OkStatus();
}


// Notes where the last document of a YAML stream started, and nothing else.
class DocumentStart : public YAML::EventHandler {
 public:
  const YAML::Mark& mark() const { return mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override { mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark mark_;
};

// yaml-cpp 0.7's LoadAll never returns, allocating as it goes, when a document ends without
// consuming the token it started at (a stray ',' is enough): every later document starts at
// that same token (jbeder/yaml-cpp#1319, fixed upstream after 0.8.0). So walk the stream once,
// noting only where each document starts, and throw where one would start a second time.
void CheckYamlDocumentsAdvance(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStart handler;
  int previous = -1;
  while (parser.HandleNextDocument(handler)) {
    if (handler.mark().pos == previous) {
      const char c = text[previous];
      const std::string what =
          absl::ascii_isgraph(c) ? absl::StrCat("'", std::string(1, c), "'") : "character";
      throw YAML::ParserException(
          handler.mark(),
          absl::StrCat("unexpected ", what, " (the text is neither YAML nor JSON here)"));
    }
    previous = handler.mark().pos;
  }
}

// The YAML form of a JSON value, so that one set of readers serves both. Numbers and booleans
// become their JSON text, as yaml-cpp holds them.
YAML::Node JsonToYaml(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& [key, item] : value.items()) map[key] = JsonToYaml(item);
      return map;
    }
    case nlohmann::json::value_t::array: {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& item : value) list.push_back(JsonToYaml(item));
      return list;
    }
    case nlohmann::json::value_t::null:
      return YAML::Node(YAML::NodeType::Null);
    case nlohmann::json::value_t::string:
      return YAML::Node(value.get<std::string>());
    default:
      return YAML::Node(value.dump());
  }
}

// Text whose first character is '{' is JSON, as Kubernetes' own YAML-or-JSON decoder decides:
// one object (a List for several).
absl::StatusOr<YAML::Node> ParseJson(const std::string& text, const std::string& file) {
  // Deeper than any Kubernetes object, shallow enough for the recursive conversion.
  constexpr int kMaxDepth = 64;
  struct TooDeep {};
  nlohmann::json value;
  try {
    auto limit_depth = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxDepth) throw TooDeep();
      return true;
    };
    value = nlohmann::json::parse(text, limit_depth);
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": JSON nested deeper than ", kMaxDepth, " levels"));
  } catch (const nlohmann::json::exception& e) {
    // Drop the "[json.exception.parse_error.101] " prefix; the rest says where and what.
    absl::string_view what = e.what();
    if (size_t end = what.find("] "); absl::StartsWith(what, "[json.") && end != what.npos) {
      what.remove_prefix(end + 2);
    }
    return absl::InvalidArgumentError(absl::StrCat(file, ": invalid JSON: ", what));
  }
  return JsonToYaml(value);
}

// Far more than any set of Kubernetes objects (the API server takes requests of up to 3 MiB); a
// bigger file is not what the user meant to hand over.
constexpr size_t kMaxObjectFileBytes = 16 * 1024 * 1024;

bool IsObjectFile(const std::string& name) {
  return absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml") ||
         absl::EndsWith(name, ".json");
}

}  // namespace

size_t FirstInvalidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = text[i];
    size_t length;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char next = text[i + k];
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return absl::string_view::npos;
}

absl::Status ReadObjects(const std::string& path, ObjectSet* objects) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  std::vector<std::string> files;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = opendir(path.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.' && IsObjectFile(e->d_name)) {
          files.push_back(absl::StrCat(path, "/", e->d_name));
        }
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  for (const std::string& file : files) {
    std::string text;
    if (absl::Status s = ReadFileUpTo(file, kMaxObjectFileBytes, &text); !s.ok()) return s;
    if (absl::Status s = ParseObjects(text, file, objects); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ParseObjects(const std::string& text, const std::string& file, ObjectSet* objects) {
  // Kubernetes reads only UTF-8, and protobuf string fields must hold it: refuse anything else
  // here, where the position can still be told.
  if (size_t bad = FirstInvalidUtf8(text); bad != absl::string_view::npos) {
    const size_t line_start = text.rfind('\n', bad);  // text[bad] itself is not '\n'
    const size_t column = line_start == std::string::npos ? bad : bad - line_start - 1;
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": line ", std::count(text.begin(), text.begin() + bad, '\n') + 1, ", column ",
        column + 1, ": byte 0x", absl::Hex(static_cast<unsigned char>(text[bad]), absl::kZeroPad2),
        " is not valid UTF-8 (object files must be UTF-8)"));
  }
  std::vector<YAML::Node> documents;
  // A UTF-8 byte order mark is allowed, and is not where JSON is told from YAML.
  const size_t bom = absl::StartsWith(text, "\xEF\xBB\xBF") ? 3 : 0;
  const size_t first = text.find_first_not_of(" \t\r\n", bom);
  if (first != std::string::npos && text[first] == '{') {
    absl::StatusOr<YAML::Node> document = ParseJson(text, file);
    if (!document.ok()) return document.status();
    documents.push_back(*document);
  } else {
    try {
      CheckYamlDocumentsAdvance(text);
      documents = YAML::LoadAll(text);
    } catch (const YAML::ParserException& e) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": line ", e.mark.line + 1,
                                                     ", column ", e.mark.column + 1, ": ", e.msg));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": ", e.what()));
    }
  }
  return ForEachObject(file, documents, [&](const Field& object, const std::string& kind) {
    return AddObject(file, object, kind, objects);
  });
}

absl::StatusOr<Pod> ReadPod(const std::string& path) {
  ObjectSet objects;
  if (absl::Status s = ReadObjects(path, &objects); !s.ok()) return s;
  if (objects.pods.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": must hold exactly one Pod; it holds ",
                                                   objects.pods.size()));
  }
  return objects.pods[0];
}

}  // namespace ndr::kubelet

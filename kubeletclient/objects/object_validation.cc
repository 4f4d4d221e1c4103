#include "kubeletclient/objects/object_validation.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/go_quote.h"

namespace ndr::kubelet {
namespace {

// Values in messages are cut here: a hostile value may be megabytes long. (The API server prints
// them whole.)
constexpr size_t kMaxShownValue = 256;

// k8s.io/apimachinery/pkg/util/validation/validation.go: the constants, RegexError and MaxLenError.
constexpr size_t kDns1123LabelMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr char kDns1123LabelMessage[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kDns1123SubdomainMessage[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kConfigMapKeyMessage[] =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')";

std::string MaxLenError(size_t length) {
  return absl::StrCat("must be no more than ", length, " characters");
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesDns1123Label(absl::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// pkg/apis/core/validation: the access modes a PersistentVolume may ask for (v1.26, with
// ReadWriteOncePod, beta and on by default).
const std::vector<std::string>& SupportedAccessModes() {
  static const auto* modes = new std::vector<std::string>{"ReadOnlyMany", "ReadWriteMany",
                                                          "ReadWriteOnce", "ReadWriteOncePod"};
  return *modes;
}

void ValidateName(absl::string_view name, const std::vector<std::string>& messages,
                  FieldErrors* errors) {
  errors->InvalidEach("metadata.name", name, messages);
}

void ValidateNamespace(absl::string_view ns, FieldErrors* errors) {
  // apimachinery api/validation ValidateNamespaceName = NameIsDNSLabel.
  errors->InvalidEach("metadata.namespace", ns, IsDns1123Label(ns));
}

// Ours: volumeAttributes within the CSI spec's limits for map<string, string>.
void ValidateVolumeAttributes(const std::map<std::string, std::string>& attributes,
                              const std::string& field, FieldErrors* errors) {
  size_t bytes = 0;
  for (const auto& [key, value] : attributes) {
    if (key.empty()) errors->Invalid(field, key, "keys must not be empty");
    bytes += key.size() + value.size();
  }
  if (bytes > kMaxCsiMapBytes) {
    errors->Invalid(field, absl::StrCat(bytes, " bytes"),
                    absl::StrCat("must be at most ", kMaxCsiMapBytes,
                                 " bytes in all, keys and values (the CSI spec's limit for a "
                                 "volume_context)"));
  }
}

// pkg/apis/core/validation validatePVSecretReference: both parts DNS-1123 labels on create.
void ValidatePvSecretReference(const std::pair<std::string, std::string>& ref,
                               const std::string& field, FieldErrors* errors) {
  const auto& [ns, name] = ref;
  if (name.empty()) {
    errors->Required(field + ".name");
  } else {
    errors->InvalidEach(field + ".name", name, IsDns1123Label(name));
  }
  if (ns.empty()) {
    errors->Required(field + ".namespace");
  } else {
    errors->InvalidEach(field + ".namespace", ns, IsDns1123Label(ns));
  }
}

}  // namespace

std::string GoQuote(absl::string_view s) {
  const bool cut = s.size() > kMaxShownValue;
  std::string quoted = ::ndr::GoQuote(cut ? s.substr(0, kMaxShownValue) : s);
  if (cut) quoted += "...";
  return quoted;
}

void FieldErrors::Invalid(absl::string_view field, absl::string_view value,
                          absl::string_view detail) {
  errors_.push_back(absl::StrCat(field, ": Invalid value: ", GoQuote(value),
                                 detail.empty() ? "" : ": ", detail));
}

void FieldErrors::InvalidInt(absl::string_view field, int64_t value, absl::string_view detail) {
  // field.Error prints simple types with %v, unquoted.
  errors_.push_back(absl::StrCat(field, ": Invalid value: ", value, detail.empty() ? "" : ": ",
                                 detail));
}

void FieldErrors::InvalidEach(absl::string_view field, absl::string_view value,
                              const std::vector<std::string>& messages) {
  for (const std::string& message : messages) Invalid(field, value, message);
}

void FieldErrors::Required(absl::string_view field, absl::string_view detail) {
  errors_.push_back(absl::StrCat(field, ": Required value", detail.empty() ? "" : ": ", detail));
}

void FieldErrors::Duplicate(absl::string_view field, absl::string_view value) {
  errors_.push_back(absl::StrCat(field, ": Duplicate value: ", GoQuote(value)));
}

void FieldErrors::NotFound(absl::string_view field, absl::string_view value) {
  errors_.push_back(absl::StrCat(field, ": Not found: ", GoQuote(value)));
}

void FieldErrors::Forbidden(absl::string_view field, absl::string_view detail) {
  errors_.push_back(absl::StrCat(field, ": Forbidden: ", detail));
}

void FieldErrors::TooLong(absl::string_view field, size_t max_bytes) {
  errors_.push_back(absl::StrCat(field, ": Too long: must have at most ", max_bytes, " bytes"));
}

void FieldErrors::NotSupported(absl::string_view field, absl::string_view value,
                               const std::vector<std::string>& supported) {
  std::vector<std::string> quoted;
  for (const std::string& s : supported) quoted.push_back(GoQuote(s));
  errors_.push_back(absl::StrCat(field, ": Unsupported value: ", GoQuote(value),
                                 ": supported values: ", absl::StrJoin(quoted, ", ")));
}

void FieldErrors::Merge(const FieldErrors& other) {
  errors_.insert(errors_.end(), other.errors_.begin(), other.errors_.end());
}

absl::Status FieldErrors::ToStatus() const {
  if (errors_.empty()) return absl::OkStatus();
  // apimachinery's aggregate: duplicates once, one error bare, several in brackets.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& e : errors_) {
    if (seen.insert(e).second) unique.push_back(e);
  }
  if (unique.size() == 1) return absl::InvalidArgumentError(unique[0]);
  return absl::InvalidArgumentError(absl::StrCat("[", absl::StrJoin(unique, ", "), "]"));
}

std::vector<std::string> IsDns1123Label(absl::string_view value) {
  std::vector<std::string> messages;
  if (value.size() > kDns1123LabelMaxLength) messages.push_back(MaxLenError(kDns1123LabelMaxLength));
  if (!MatchesDns1123Label(value)) messages.push_back(kDns1123LabelMessage);
  return messages;
}

std::vector<std::string> IsDns1123Subdomain(absl::string_view value) {
  std::vector<std::string> messages;
  if (value.size() > kDns1123SubdomainMaxLength) {
    messages.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  bool matches = true;
  for (absl::string_view label : absl::StrSplit(value, '.')) {
    matches = matches && MatchesDns1123Label(label);
  }
  if (!matches) messages.push_back(kDns1123SubdomainMessage);
  return messages;
}

std::vector<std::string> IsQualifiedName(absl::string_view value) {
  const std::string name_rule = absl::StrCat(
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  std::vector<std::string> messages;
  std::vector<absl::string_view> parts = absl::StrSplit(value, '/');
  if (parts.size() > 2) {
    messages.push_back(absl::StrCat("a qualified name ", name_rule,
                                    " with an optional DNS subdomain prefix and '/' (e.g. "
                                    "'example.com/MyName')"));
    return messages;
  }
  absl::string_view name = parts.back();
  if (parts.size() == 2) {
    if (parts[0].empty()) {
      messages.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& m : IsDns1123Subdomain(parts[0])) {
        messages.push_back(absl::StrCat("prefix part ", m));
      }
    }
  }
  auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  bool matches = !name.empty() && alnum(name.front()) && alnum(name.back());
  for (char c : name) matches = matches && (alnum(c) || c == '-' || c == '_' || c == '.');
  if (name.empty()) {
    messages.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    messages.push_back(absl::StrCat("name part ", MaxLenError(63)));
  }
  if (!matches) messages.push_back(absl::StrCat("name part ", name_rule));
  return messages;
}

std::vector<std::string> IsConfigMapKey(absl::string_view value) {
  std::vector<std::string> messages;
  if (value.size() > kDns1123SubdomainMaxLength) {
    messages.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  bool matches = !value.empty();
  for (char c : value) {
    matches = matches && (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_');
  }
  if (!matches) messages.push_back(kConfigMapKeyMessage);
  // hasChDirPrefix
  if (value == ".") {
    messages.push_back("must not be '.'");
  } else if (value == "..") {
    messages.push_back("must not be '..'");
  } else if (absl::StartsWith(value, "..")) {
    messages.push_back("must not start with '..'");
  }
  return messages;
}

std::vector<std::string> IsValidPathSegmentName(absl::string_view value) {
  if (value == "." || value == "..") return {absl::StrCat("may not be '", value, "'")};
  std::vector<std::string> messages;
  for (const char* illegal : {"/", "%"}) {
    if (absl::StrContains(value, illegal)) {
      messages.push_back(absl::StrCat("may not contain '", illegal, "'"));
    }
  }
  return messages;
}

void ValidateCsiDriverName(absl::string_view name, absl::string_view field, FieldErrors* errors) {
  if (name.empty()) errors->Required(field);
  if (name.size() > 63) errors->TooLong(field, 63);
  errors->InvalidEach(field, name, IsDns1123Subdomain(absl::AsciiStrToLower(name)));
}

void ValidateVolumeHandle(absl::string_view handle, absl::string_view field, FieldErrors* errors) {
  if (handle.empty()) {
    errors->Required(field);
  } else if (handle.size() > kMaxVolumeHandleBytes) {
    errors->TooLong(field, kMaxVolumeHandleBytes);
  }
}

// Ours: a UID as kubeletclient takes it (see kMaxUidBytes).
void ValidateUid(absl::string_view uid, absl::string_view field, bool required,
                 FieldErrors* errors) {
  if (uid.empty()) {
    if (required) errors->Required(field);
  } else if (uid.size() > kMaxUidBytes) {
    errors->TooLong(field, kMaxUidBytes);
  } else {
    errors->InvalidEach(field, uid, IsValidPathSegmentName(uid));
    if (std::any_of(uid.begin(), uid.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      errors->Invalid(field, uid, "may not contain control characters");
    }
  }
}

// Ours: the API server does not look inside seLinuxOptions, but their user and level become
// an SELinux mount option (context="...") and a vol_data.json value; SELinux users, roles,
// types and levels are made of these characters (s0:c1,c2 or s0-s0:c0.c1023).
void ValidateSeLinuxOptions(const std::optional<SeLinuxOptions>& options, const std::string& field,
                            FieldErrors* errors) {
  if (!options.has_value()) return;
  for (const auto& [name, value] : {std::pair{"user", &options->user},
                                    std::pair{"role", &options->role},
                                    std::pair{"type", &options->type},
                                    std::pair{"level", &options->level}}) {
    const std::string path = absl::StrCat(field, ".", name);
    if (value->size() > kMaxSeLinuxFieldBytes) {
      errors->TooLong(path, kMaxSeLinuxFieldBytes);
    } else if (!std::all_of(value->begin(), value->end(), [](char c) {
                 return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == ':' || c == ',' ||
                        c == '-';
               })) {
      errors->Invalid(path, *value,
                      "may contain only letters, digits, '_', '.', ':', ',' and '-' (an SELinux "
                      "context part)");
    }
  }
}

absl::Status ValidatePod(const Pod& pod) {
  FieldErrors errors;
  // pkg/apis/core/validation ValidatePodName = NameIsDNSSubdomain.
  ValidateName(pod.name, IsDns1123Subdomain(pod.name), &errors);
  ValidateNamespace(pod.ns, &errors);
  ValidateUid(pod.uid, "metadata.uid", /*required=*/true, &errors);
  // ValidatePodSpec: ValidateServiceAccountName = NameIsDNSSubdomain.
  errors.InvalidEach("spec.serviceAccountName", pod.service_account,
                     IsDns1123Subdomain(pod.service_account));
  ValidateSeLinuxOptions(pod.se_linux, "spec.securityContext.seLinuxOptions", &errors);
  // ValidateVolumes: names are DNS-1123 labels, each once. As there, a name joins the set only
  // when its volume had no errors, so a name is reported as a duplicate of a valid volume only.
  std::map<std::string, const PodVolume*> valid;
  for (size_t i = 0; i < pod.volumes.size(); ++i) {
    const PodVolume& volume = pod.volumes[i];
    const std::string path = absl::StrCat("spec.volumes[", i, "]");
    FieldErrors volume_errors;
    // validateVolumeSource first, then the name. It looks at the sources in the Go struct's
    // order and forbids each after the first.
    for (size_t t = 1; t < volume.source_types.size(); ++t) {
      volume_errors.Forbidden(absl::StrCat(path, ".", volume.source_types[t]),
                              "may not specify more than 1 volume type");
    }
    if (volume.claim_name.has_value() && volume.claim_name->empty()) {
      volume_errors.Required(path + ".persistentVolumeClaim.claimName");
    }
    if (volume.source_type() == "ephemeral" && !volume.ephemeral_claim_template) {
      // validateEphemeralVolumeSource.
      volume_errors.Required(path + ".ephemeral.volumeClaimTemplate");
    }
    if (volume.csi.has_value()) {
      // validateCSIVolumeSource.
      const CsiVolumeSource& csi = *volume.csi;
      ValidateCsiDriverName(csi.driver, path + ".csi.driver", &volume_errors);
      if (csi.node_publish_secret_name.has_value()) {
        // ValidateSecretName = NameIsDNSSubdomain. (The API server reports an invalid name at
        // csi.name, a slip; the field is csi.nodePublishSecretRef.name.)
        const std::string field = path + ".csi.nodePublishSecretRef.name";
        if (csi.node_publish_secret_name->empty()) {
          volume_errors.Required(field);
        } else {
          volume_errors.InvalidEach(field, *csi.node_publish_secret_name,
                                    IsDns1123Subdomain(*csi.node_publish_secret_name));
        }
      }
      ValidateVolumeAttributes(csi.volume_attributes, path + ".csi.volumeAttributes",
                               &volume_errors);
    }
    if (volume.name.empty()) {
      volume_errors.Required(path + ".name");
    } else {
      volume_errors.InvalidEach(path + ".name", volume.name, IsDns1123Label(volume.name));
    }
    if (valid.count(volume.name) > 0) volume_errors.Duplicate(path + ".name", volume.name);
    if (volume_errors.empty()) valid[volume.name] = &volume;
    errors.Merge(volume_errors);
  }
  // validateContainers: ValidateVolumeMounts and ValidateVolumeDevices, for the names only (the
  // paths are the container runtime's business, not kubelet's volume manager's).
  for (const Container& container : pod.containers) {
    std::set<std::string> mounts(container.volume_mounts.begin(), container.volume_mounts.end());
    std::set<std::string> devices;
    for (size_t i = 0; i < container.volume_mounts.size(); ++i) {
      const std::string& name = container.volume_mounts[i];
      const std::string field = absl::StrCat(container.field, ".volumeMounts[", i, "].name");
      if (name.empty()) errors.Required(field);
      if (valid.count(name) == 0) errors.NotFound(field, name);
      if (std::count(container.volume_devices.begin(), container.volume_devices.end(), name) > 0) {
        errors.Invalid(field, name, "must not already exist in volumeDevices");
      }
    }
    for (size_t i = 0; i < container.volume_devices.size(); ++i) {
      const std::string& name = container.volume_devices[i];
      const std::string field = absl::StrCat(container.field, ".volumeDevices[", i, "].name");
      auto volume = valid.find(name);
      if (name.empty()) errors.Required(field);
      if (!devices.insert(name).second) errors.Invalid(field, name, "must be unique");
      if (volume != valid.end() && !volume->second->claim_name.has_value() &&
          !volume->second->ephemeral_claim_template) {
        errors.Invalid(field, name,
                       "can only use volume source type of PersistentVolumeClaim or Ephemeral "
                       "for block mode");
      }
      if (volume == valid.end()) errors.NotFound(field, name);
      if (mounts.count(name) > 0) errors.Invalid(field, name, "must not already exist in volumeMounts");
    }
    ValidateSeLinuxOptions(container.se_linux,
                           container.field + ".securityContext.seLinuxOptions", &errors);
  }
  return errors.ToStatus();
}

// apimachinery api/validation ValidateNonnegativeQuantity (as core's ValidateResourceQuantityValue
// applies it to storage) and core's ValidatePositiveQuantityValue.
void ValidateNonnegativeQuantity(const std::optional<Quantity>& q, const std::string& field,
                                 FieldErrors* errors) {
  if (q.has_value() && q->value() < 0) {
    errors->Invalid(field, q->String(), "must be greater than or equal to 0");
  }
}

void ValidatePositiveQuantity(const std::optional<Quantity>& q, const std::string& field,
                              FieldErrors* errors) {
  if (q.has_value() && q->value() <= 0) errors->Invalid(field, q->String(), "must be greater than zero");
}

absl::Status ValidatePersistentVolumeClaim(const PersistentVolumeClaim& claim) {
  FieldErrors errors;
  // ValidatePersistentVolumeClaim: ValidateObjectMeta with ValidatePersistentVolumeName.
  ValidateName(claim.name, IsDns1123Subdomain(claim.name), &errors);
  ValidateNamespace(claim.ns, &errors);
  ValidateUid(claim.uid, "metadata.uid", /*required=*/false, &errors);
  // apimachinery api/validation ValidateOwnerReferences (the field has no index there either).
  std::string first_controller;
  for (const OwnerReference& owner : claim.owner_references) {
    const std::string field = "metadata.ownerReferences";
    // schema.FromAPIVersionAndKind: the version is what follows the last '/'.
    const size_t slash = owner.api_version.rfind('/');
    if ((slash == std::string::npos ? owner.api_version : owner.api_version.substr(slash + 1))
            .empty()) {
      errors.Invalid(field + ".apiVersion", owner.api_version, "version must not be empty");
    }
    if (owner.kind.empty()) errors.Invalid(field + ".kind", owner.kind, "kind must not be empty");
    if (owner.name.empty()) errors.Invalid(field + ".name", owner.name, "name must not be empty");
    if (owner.uid.empty()) errors.Invalid(field + ".uid", owner.uid, "uid must not be empty");
    ValidateUid(owner.uid, field + ".uid", /*required=*/false, &errors);
    if (owner.controller) {
      const std::string name = absl::StrCat(owner.kind, "/", owner.name);
      if (!first_controller.empty()) {
        errors.Invalid(field, name,
                       absl::StrCat("Only one reference can have Controller set to true. Found "
                                    "\"true\" in references for ",
                                    first_controller, " and ", name));
      } else {
        first_controller = name;
      }
    }
  }
  // ValidatePersistentVolumeClaimSpec: the request is positive. The API server also requires
  // it; kubelet never reads it, so a hand-written claim may leave it out. The status capacity is
  // not validated there (status); ours, as kubelet compares it: not negative.
  ValidatePositiveQuantity(claim.requested, "spec.resources[storage]", &errors);
  ValidateNonnegativeQuantity(claim.capacity, "status.capacity[storage]", &errors);
  return errors.ToStatus();
}

absl::Status ValidatePersistentVolume(const PersistentVolume& pv) {
  FieldErrors errors;
  // ValidatePersistentVolumeName = NameIsDNSSubdomain.
  ValidateName(pv.name, IsDns1123Subdomain(pv.name), &errors);
  // ValidatePersistentVolumeSpec: at least one access mode, each supported, ReadWriteOncePod
  // alone.
  if (pv.access_modes.empty()) errors.Required("spec.accessModes");
  bool once_pod = false;
  for (const std::string& mode : pv.access_modes) {
    const auto& supported = SupportedAccessModes();
    if (std::find(supported.begin(), supported.end(), mode) == supported.end()) {
      errors.NotSupported("spec.accessModes", mode, supported);
    }
    once_pod = once_pod || mode == "ReadWriteOncePod";
  }
  if (once_pod && pv.access_modes.size() > 1) {
    errors.Forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes");
  }
  // ValidatePersistentVolumeSpec: ValidateResourceQuantityValue for the capacity, which the API
  // server requires and kubelet reads only for expansion.
  ValidateNonnegativeQuantity(pv.capacity, "spec.capacity[storage]", &errors);
  if (pv.volume_mode != "Block" && pv.volume_mode != "Filesystem") {
    errors.NotSupported("spec.volumeMode", pv.volume_mode, {"Block", "Filesystem"});
  }
  if (pv.claim_ref.has_value()) {
    // An ObjectReference: the API server checks none of it on a PV; ours, as they are compared
    // and printed: the names as the objects' own names, the UID as a UID.
    const ClaimReference& ref = *pv.claim_ref;
    if (ref.name.empty()) {
      errors.Required("spec.claimRef.name");
    } else {
      errors.InvalidEach("spec.claimRef.name", ref.name, IsDns1123Subdomain(ref.name));
    }
    if (!ref.ns.empty()) {
      errors.InvalidEach("spec.claimRef.namespace", ref.ns, IsDns1123Label(ref.ns));
    }
    ValidateUid(ref.uid, "spec.claimRef.uid", /*required=*/false, &errors);
  }
  if (pv.csi.has_value()) {
    // validateCSIPersistentVolumeSource.
    ValidateCsiDriverName(pv.csi->driver, "spec.csi.driver", &errors);
    ValidateVolumeHandle(pv.csi->volume_handle, "spec.csi.volumeHandle", &errors);
    for (const auto& [ref, field] :
         {std::pair{&pv.csi->node_publish_secret, "spec.csi.nodePublishSecretRef"},
          std::pair{&pv.csi->node_stage_secret, "spec.csi.nodeStageSecretRef"},
          std::pair{&pv.csi->node_expand_secret, "spec.csi.nodeExpandSecretRef"}}) {
      if (ref->has_value()) ValidatePvSecretReference(**ref, field, &errors);
    }
    ValidateVolumeAttributes(pv.csi->volume_attributes, "spec.csi.volumeAttributes", &errors);
  }
  return errors.ToStatus();
}

absl::Status ValidateSecret(const Secret& secret) {
  FieldErrors errors;
  // ValidateSecretName = NameIsDNSSubdomain.
  ValidateName(secret.name, IsDns1123Subdomain(secret.name), &errors);
  ValidateNamespace(secret.ns, &errors);
  // ValidateSecret: keys as config keys, values at most MaxSecretSize in all (stringData is
  // merged into data before, as the API server converts it).
  size_t total = 0;
  for (const auto& [key, value] : secret.data) {
    errors.InvalidEach(absl::StrCat("data[", key, "]"), key, IsConfigMapKey(key));
    total += value.size();
  }
  constexpr size_t kMaxSecretSize = 1024 * 1024;
  if (total > kMaxSecretSize) errors.TooLong("data", kMaxSecretSize);
  return errors.ToStatus();
}

absl::Status ValidateCsiDriverObject(const CsiDriverObject& driver) {
  FieldErrors errors;
  // pkg/apis/storage/validation ValidateCSIDriver: the object's name is a DNS-1123 subdomain
  // (that package's ValidateCSIDriverName = NameIsDNSSubdomain).
  ValidateName(driver.name, IsDns1123Subdomain(driver.name), &errors);
  // validateVolumeLifecycleModes.
  for (const std::string& mode : driver.volume_lifecycle_modes) {
    if (mode != "Persistent" && mode != "Ephemeral") {
      errors.NotSupported("spec.volumeLifecycleModes", mode, {"Persistent", "Ephemeral"});
    }
  }
  // validateTokenRequests: audiences unique; an expiration at least 10 minutes and at most 2^32
  // seconds.
  std::set<std::string> audiences;
  for (size_t i = 0; i < driver.token_requests.size(); ++i) {
    const TokenRequest& request = driver.token_requests[i];
    const std::string field = absl::StrCat("spec.tokenRequests[", i, "]");
    if (!audiences.insert(request.audience).second) {
      errors.Duplicate(field + ".audience", request.audience);
      continue;
    }
    if (!request.expiration_seconds.has_value()) continue;
    const int64_t seconds = *request.expiration_seconds;
    if (seconds < 600) {
      errors.InvalidInt(field + ".expirationSeconds", seconds,
                        "may not specify a duration less than 10 minutes");
    }
    if (seconds > (int64_t{1} << 32)) {
      errors.InvalidInt(field + ".expirationSeconds", seconds,
                        "may not specify a duration larger than 2^32 seconds");
    }
  }
  // validateFSGroupPolicy.
  const std::vector<std::string> policies = {"File", "None", "ReadWriteOnceWithFSType"};
  if (std::find(policies.begin(), policies.end(), driver.fs_group_policy) == policies.end()) {
    errors.NotSupported("spec.fsGroupPolicy", driver.fs_group_policy, policies);
  }
  // validateNodeAllocatableUpdatePeriodSeconds (v1.37.2).
  if (driver.node_allocatable_update_period_seconds.value_or(10) < 10) {
    errors.InvalidInt("spec.nodeAllocatableUpdatePeriodSeconds",
                      *driver.node_allocatable_update_period_seconds,
                      "must be greater than or equal to 10 seconds");
  }
  return errors.ToStatus();
}

absl::Status ValidateServiceAccount(const ServiceAccount& account) {
  FieldErrors errors;
  // ValidateServiceAccountName = NameIsDNSSubdomain; the UID goes into tokens: as a UID.
  ValidateName(account.name, IsDns1123Subdomain(account.name), &errors);
  ValidateNamespace(account.ns, &errors);
  ValidateUid(account.uid, "metadata.uid", /*required=*/false, &errors);
  return errors.ToStatus();
}

absl::Status ValidateVolumeAttachment(const VolumeAttachment& attachment) {
  FieldErrors errors;
  // pkg/apis/storage/validation ValidateVolumeAttachment: the name as ValidateClassName (a
  // DNS-1123 subdomain); ValidateVolumeAttachmentV1: spec.attacher as core ValidateCSIDriverName.
  ValidateName(attachment.name, IsDns1123Subdomain(attachment.name), &errors);
  ValidateCsiDriverName(attachment.attacher, "spec.attacher", &errors);
  // validateVolumeAttachmentSource: kubeletclient reads persistent volume sources only.
  if (attachment.persistent_volume_name.empty()) {
    errors.Required("spec.source",
                    "must specify exactly one of inlineVolumeSpec and persistentVolumeName");
  } else {
    errors.InvalidEach("spec.source.persistentVolumeName", attachment.persistent_volume_name,
                       IsDns1123Subdomain(attachment.persistent_volume_name));
  }
  // ValidateNodeName = NameIsDNSSubdomain (an empty name fails it too).
  errors.InvalidEach("spec.nodeName", attachment.node_name,
                     IsDns1123Subdomain(attachment.node_name));
  // validateVolumeAttachmentStatus: metadata at most 256 KiB, keys and values; the error's
  // message at most 1 KiB.
  size_t metadata_bytes = 0;
  for (const auto& [key, value] : attachment.attachment_metadata) {
    metadata_bytes += key.size() + value.size();
  }
  if (metadata_bytes > 256 * 1024) errors.TooLong("status.attachmentMetadata", 256 * 1024);
  if (attachment.attach_error.has_value() && attachment.attach_error->size() > 1024) {
    errors.TooLong("status.attachError.message", 1024);
  }
  return errors.ToStatus();
}

namespace {

// k8s.io/apimachinery/pkg/util/validation IsValidLabelValue: at most 63 bytes, empty or
// alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
std::vector<std::string> IsLabelValue(absl::string_view value) {
  std::vector<std::string> messages;
  if (value.size() > 63) messages.push_back("must be no more than 63 characters");
  auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  bool matches = value.empty() || (alnum(value.front()) && alnum(value.back()));
  for (char c : value) {
    matches = matches && (alnum(c) || c == '-' || c == '_' || c == '.');
  }
  if (!matches) {
    messages.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  }
  return messages;
}

}  // namespace

absl::Status ValidateStorageClass(const StorageClass& storage_class) {
  FieldErrors errors;
  // pkg/apis/storage/validation ValidateStorageClass: the name as ValidateClassName (a DNS-1123
  // subdomain); validateProvisioner: required, a qualified name once lowercased.
  ValidateName(storage_class.name, IsDns1123Subdomain(storage_class.name), &errors);
  if (storage_class.provisioner.empty()) {
    errors.Required("provisioner");
  } else {
    errors.InvalidEach("provisioner", storage_class.provisioner,
                       IsQualifiedName(absl::AsciiStrToLower(storage_class.provisioner)));
  }
  // validateParameters: at most 512 entries and 256 KiB in all; no empty key.
  if (storage_class.parameters.size() > 512) {
    errors.TooLong("parameters", 512);
  } else {
    size_t bytes = 0;
    for (const auto& [key, value] : storage_class.parameters) {
      if (key.empty()) errors.Invalid("parameters", key, "field can not be empty.");
      bytes += key.size() + value.size();
    }
    if (bytes > 256 * 1024) errors.TooLong("parameters", 256 * 1024);
  }
  // validateReclaimPolicy, validateVolumeBindingMode (after SetDefaults_StorageClass).
  if (storage_class.reclaim_policy != "Delete" && storage_class.reclaim_policy != "Retain") {
    errors.NotSupported("reclaimPolicy", storage_class.reclaim_policy, {"Delete", "Retain"});
  }
  if (storage_class.volume_binding_mode != "Immediate" &&
      storage_class.volume_binding_mode != "WaitForFirstConsumer") {
    errors.NotSupported("volumeBindingMode", storage_class.volume_binding_mode,
                        {"Immediate", "WaitForFirstConsumer"});
  }
  // validateAllowedTopologies, pkg/apis/core/validation ValidateTopologySelectorTerm: each
  // expression's key a label name, found once in its term, with at least one value, each a label
  // value; no term twice.
  std::vector<std::map<std::string, std::set<std::string>>> seen;
  for (size_t i = 0; i < storage_class.allowed_topologies.size(); ++i) {
    const TopologySelectorTerm& term = storage_class.allowed_topologies[i];
    std::map<std::string, std::set<std::string>> expressions;
    for (size_t j = 0; j < term.match_label_expressions.size(); ++j) {
      const TopologySelectorTerm::Expression& e = term.match_label_expressions[j];
      const std::string field =
          absl::StrCat("allowedTopologies[", i, "].matchLabelExpressions[", j, "]");
      errors.InvalidEach(field + ".key", e.key, IsQualifiedName(e.key));
      if (e.values.empty()) errors.Required(field + ".values");
      for (size_t k = 0; k < e.values.size(); ++k) {
        errors.InvalidEach(absl::StrCat(field, ".values[", k, "]"), e.values[k],
                           IsLabelValue(e.values[k]));
      }
      if (expressions.count(e.key) != 0) {
        errors.Duplicate(field + ".key", e.key);
      }
      expressions[e.key].insert(e.values.begin(), e.values.end());
    }
    if (std::find(seen.begin(), seen.end(), expressions) != seen.end()) {
      errors.Duplicate(absl::StrCat("allowedTopologies[", i, "].matchLabelExpressions"), "");
    }
    seen.push_back(expressions);
  }
  return errors.ToStatus();
}

}  // namespace ndr::kubelet

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

absl::Status ValidatePod(const Pod& pod) {
  FieldErrors errors;
  // pkg/apis/core/validation ValidatePodName = NameIsDNSSubdomain.
  ValidateName(pod.name, IsDns1123Subdomain(pod.name), &errors);
  ValidateNamespace(pod.ns, &errors);
  // Ours (see kMaxUidBytes).
  if (pod.uid.empty()) {
    errors.Required("metadata.uid");
  } else if (pod.uid.size() > kMaxUidBytes) {
    errors.TooLong("metadata.uid", kMaxUidBytes);
  } else {
    errors.InvalidEach("metadata.uid", pod.uid, IsValidPathSegmentName(pod.uid));
    if (std::any_of(pod.uid.begin(), pod.uid.end(),
                    [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      errors.Invalid("metadata.uid", pod.uid, "may not contain control characters");
    }
  }
  // ValidatePodSpec: ValidateServiceAccountName = NameIsDNSSubdomain.
  errors.InvalidEach("spec.serviceAccountName", pod.service_account,
                     IsDns1123Subdomain(pod.service_account));
  // ValidateVolumes: names are DNS-1123 labels, each once. As there, a name joins the set only
  // when its volume had no errors, so a name is reported as a duplicate of a valid volume only.
  std::set<std::string> names;
  for (size_t i = 0; i < pod.volumes.size(); ++i) {
    const PodVolume& volume = pod.volumes[i];
    const std::string path = absl::StrCat("spec.volumes[", i, "]");
    FieldErrors volume_errors;
    // validateVolumeSource first (it looks at persistentVolumeClaim before csi), then the name.
    if (volume.claim_name.has_value() && volume.csi.has_value()) {
      volume_errors.Forbidden(path + ".csi", "may not specify more than 1 volume type");
    }
    if (volume.claim_name.has_value() && volume.claim_name->empty()) {
      volume_errors.Required(path + ".persistentVolumeClaim.claimName");
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
    if (names.count(volume.name) > 0) volume_errors.Duplicate(path + ".name", volume.name);
    if (volume_errors.empty()) names.insert(volume.name);
    errors.Merge(volume_errors);
  }
  return errors.ToStatus();
}

absl::Status ValidatePersistentVolumeClaim(const PersistentVolumeClaim& claim) {
  FieldErrors errors;
  // ValidatePersistentVolumeClaim: ValidateObjectMeta with ValidatePersistentVolumeName.
  ValidateName(claim.name, IsDns1123Subdomain(claim.name), &errors);
  ValidateNamespace(claim.ns, &errors);
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
  if (pv.volume_mode != "Block" && pv.volume_mode != "Filesystem") {
    errors.NotSupported("spec.volumeMode", pv.volume_mode, {"Block", "Filesystem"});
  }
  if (pv.csi.has_value()) {
    // validateCSIPersistentVolumeSource.
    ValidateCsiDriverName(pv.csi->driver, "spec.csi.driver", &errors);
    ValidateVolumeHandle(pv.csi->volume_handle, "spec.csi.volumeHandle", &errors);
    if (pv.csi->node_publish_secret.has_value()) {
      ValidatePvSecretReference(*pv.csi->node_publish_secret, "spec.csi.nodePublishSecretRef",
                                &errors);
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
  // validateFSGroupPolicy.
  const std::vector<std::string> policies = {"File", "None", "ReadWriteOnceWithFSType"};
  if (std::find(policies.begin(), policies.end(), driver.fs_group_policy) == policies.end()) {
    errors.NotSupported("spec.fsGroupPolicy", driver.fs_group_policy, policies);
  }
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

}  // namespace ndr::kubelet

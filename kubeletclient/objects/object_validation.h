// The API server's validation of the objects kubeletclient reads from files, for every field it
// uses.
//
// kubelet never sees an object the API server has not validated. kubeletclient reads objects from
// files, where nobody has, and builds paths and requests from them, so it validates them itself,
// with the API server's rules (Kubernetes v1.26: k8s.io/apimachinery/pkg/util/validation,
// k8s.io/apimachinery/pkg/api/validation, pkg/apis/core/validation, pkg/apis/storage/validation;
// each check cites its function) and in the API server's words
// (k8s.io/apimachinery/pkg/util/validation/field: `metadata.name: Invalid value: "X": a lowercase
// RFC 1123 subdomain must ...`). Where the API server leaves a field alone but kubeletclient puts
// it in a path (a pod's UID) or sends it to a driver (a volume handle, volume attributes), a rule
// of our own applies, and its comment says so.
//
// Pure functions; thread-safe.
#ifndef NDR_KUBELETCLIENT_OBJECTS_OBJECT_VALIDATION_H_
#define NDR_KUBELETCLIENT_OBJECTS_OBJECT_VALIDATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kubeletclient/objects/k8s_types.h"

namespace ndr::kubelet {

// A value as the API server shows it in errors (Go's %q: api/go_quote.h), cut after 256 bytes
// with "..." after the closing quote: a hostile value may be megabytes long.
std::string GoQuote(absl::string_view s);

// Field errors collected while validating one object, printed as the API server prints them
// (field.Error.Error(); several as an aggregate, "[first, second]").
class FieldErrors {
 public:
  void Invalid(absl::string_view field, absl::string_view value, absl::string_view detail);
  // A number: printed unquoted, as field.Error prints int64 values.
  void InvalidInt(absl::string_view field, int64_t value, absl::string_view detail);
  void Required(absl::string_view field, absl::string_view detail = "");
  void Duplicate(absl::string_view field, absl::string_view value);
  void NotFound(absl::string_view field, absl::string_view value);
  void Forbidden(absl::string_view field, absl::string_view detail);
  void TooLong(absl::string_view field, size_t max_bytes);
  void NotSupported(absl::string_view field, absl::string_view value,
                    const std::vector<std::string>& supported);
  // One Invalid error per message, as the API server reports a value that breaks several rules.
  void InvalidEach(absl::string_view field, absl::string_view value,
                   const std::vector<std::string>& messages);

  void Merge(const FieldErrors& other);

  bool empty() const { return errors_.empty(); }
  // OK, or InvalidArgument with the errors.
  absl::Status ToStatus() const;

 private:
  std::vector<std::string> errors_;
};

// k8s.io/apimachinery/pkg/util/validation: the messages for a value that breaks the rule, or none.
std::vector<std::string> IsDns1123Label(absl::string_view value);      // at most 63
std::vector<std::string> IsDns1123Subdomain(absl::string_view value);  // at most 253
std::vector<std::string> IsConfigMapKey(absl::string_view value);      // Secret data keys
// IsQualifiedName: a label key, "[prefix/]name" (a DNS-1123 subdomain, then at most 63
// alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric).
std::vector<std::string> IsQualifiedName(absl::string_view value);
// k8s.io/apimachinery/pkg/api/validation/path: IsValidPathSegmentName.
std::vector<std::string> IsValidPathSegmentName(absl::string_view value);

// pkg/apis/core/validation ValidateCSIDriverName: a driver name in a volume source (at most 63
// bytes; lowercased, a DNS-1123 subdomain).
void ValidateCsiDriverName(absl::string_view name, absl::string_view field, FieldErrors* errors);

// A volume handle: the API server only requires it (validateCSIPersistentVolumeSource). Ours:
// also at most kMaxVolumeHandleBytes. The CSI spec's general limit for strings is 128 bytes,
// but real handles exceed it (Azure Disk's are resource IDs of some 170 bytes) and kubelet
// hashes the handle before it uses it in a path, so the bound is only against absurd input.
inline constexpr size_t kMaxVolumeHandleBytes = 1024;
void ValidateVolumeHandle(absl::string_view handle, absl::string_view field, FieldErrors* errors);

// A pod's UID, which kubelet uses as a directory name (<root>/pods/<uid>). The API server sets it
// itself and kubelet keeps a static pod's as given, checking neither; ours: a path segment name
// (IsValidPathSegmentName) without control characters, at most kMaxUidBytes.
inline constexpr size_t kMaxUidBytes = 128;

// Each part of an SELinux context in seLinuxOptions; ours (see ValidateSeLinuxOptions).
inline constexpr size_t kMaxSeLinuxFieldBytes = 256;

// volumeAttributes become a CSI volume_context. The API server does not look at them; ours: the
// CSI spec's limits for a map<string, string> (non-empty keys, at most 4 KiB in all), which a
// driver is entitled to refuse.
inline constexpr size_t kMaxCsiMapBytes = 4096;

// Whole objects, every field kubeletclient uses; OK or InvalidArgument listing every error.
absl::Status ValidatePod(const Pod& pod);
absl::Status ValidatePersistentVolumeClaim(const PersistentVolumeClaim& claim);
absl::Status ValidatePersistentVolume(const PersistentVolume& pv);
absl::Status ValidateSecret(const Secret& secret);
absl::Status ValidateCsiDriverObject(const CsiDriverObject& driver);
absl::Status ValidateVolumeAttachment(const VolumeAttachment& attachment);
absl::Status ValidateServiceAccount(const ServiceAccount& account);
absl::Status ValidateStorageClass(const StorageClass& storage_class);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_OBJECTS_OBJECT_VALIDATION_H_

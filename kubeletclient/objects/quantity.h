// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource, Quantity), for the storage
// sizes kubelet compares and writes: a PV's spec.capacity, a claim's spec.resources.requests and
// status.capacity.
//
// ParseQuantity reads the API's grammar (quantity.go ParseQuantity):
//   <quantity> ::= <sign>? <digits> [ "." <digits> ] <suffix>
//   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
//                | ("e" | "E") <sign>? <digits>
// and keeps the value as Quantity.Value() gives it: whole units, a fraction rounded up. Only
// values that fit an int64 are accepted (a storage size that does not is not one any volume
// has). String() is the canonical form the API server writes back (CanonicalizeBytes: "2048Mi"
// becomes "2Gi", "1000" becomes "1k"), for values that are whole; a fraction keeps its text.
// Pure functions; thread-safe.
#ifndef NDR_KUBELETCLIENT_OBJECTS_QUANTITY_H_
#define NDR_KUBELETCLIENT_OBJECTS_QUANTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ndr::kubelet {

class Quantity {
 public:
  enum class Format { kDecimalSi, kBinarySi, kDecimalExponent };

  Quantity() = default;
  // `value` whole units in `format`.
  static Quantity FromValue(int64_t value, Format format);

  // The value in whole units, rounded up (Quantity.Value()).
  int64_t value() const { return value_; }
  Format format() const { return format_; }
  // Whether value() is the quantity exactly (no fraction was rounded up).
  bool exact() const { return exact_; }
  // The canonical text (Quantity.String()).
  std::string String() const;

  // Compare values, as Quantity.Cmp does for whole quantities.
  friend bool operator<(const Quantity& a, const Quantity& b) { return a.value_ < b.value_; }
  friend bool operator==(const Quantity& a, const Quantity& b) {
    return a.value_ == b.value_ && a.exact_ == b.exact_;
  }

 private:
  friend absl::StatusOr<Quantity> ParseQuantity(absl::string_view text);

  int64_t value_ = 0;
  Format format_ = Format::kDecimalSi;
  bool exact_ = true;
  std::string text_;  // as written, for a quantity that is not whole
};

// The quantity `text`, or InvalidArgument with the API server's words ("quantities must match the
// regular expression ..."), or OutOfRange if it does not fit an int64.
absl::StatusOr<Quantity> ParseQuantity(absl::string_view text);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_OBJECTS_QUANTITY_H_

#include "kubeletclient/objects/quantity.h"

#include <cstdlib>
#include <limits>

#include "absl/numeric/int128.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ndr::kubelet {
namespace {

// absl's, not the compiler's unsigned __int128, which 32-bit targets (linux/arm/v7) lack.
using u128 = absl::uint128;

// quantity.go ErrFormatWrong and ErrSuffix.
constexpr char kFormatWrong[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr char kSuffixWrong[] = "unable to parse quantity's suffix";

constexpr u128 kMax128 = absl::Uint128Max();

// The suffix's power of ten and of two, and the format it implies; false if it is not one.
bool ParseSuffix(absl::string_view suffix, int* e10, int* e2, Quantity::Format* format) {
  static constexpr struct {
    const char* text;
    int e10, e2;
  } kSuffixes[] = {{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
                   {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
                   {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
                   {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}};
  for (const auto& s : kSuffixes) {
    if (suffix == s.text) {
      *e10 = s.e10;
      *e2 = s.e2;
      *format = s.e2 != 0 ? Quantity::Format::kBinarySi : Quantity::Format::kDecimalSi;
      return true;
    }
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    int exponent = 0;
    absl::string_view digits = suffix.substr(1);
    if (digits[0] == '+' || digits[0] == '-') digits.remove_prefix(1);
    if (!digits.empty() && absl::ascii_isdigit(static_cast<unsigned char>(digits[0])) &&
        absl::SimpleAtoi(suffix.substr(1), &exponent)) {
      *e10 = exponent;
      *e2 = 0;
      *format = Quantity::Format::kDecimalExponent;
      return true;
    }
  }
  return false;
}

// a * b, or false on overflow.
bool Multiply(u128 a, u128 b, u128* out) {
  if (a != 0 && b > kMax128 / a) return false;
  *out = a * b;
  return true;
}

u128 PowerOfTen(int n) {
  u128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

}  // namespace

Quantity Quantity::FromValue(int64_t value, Format format) {
  Quantity q;
  q.value_ = value;
  q.format_ = format;
  return q;
}

absl::StatusOr<Quantity> ParseQuantity(absl::string_view text) {
  absl::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    negative = rest[0] == '-';
    rest.remove_prefix(1);
  }
  std::string digits;  // integer and fraction digits
  int fraction_digits = 0;
  bool point = false, any_digit = false;
  size_t i = 0;
  for (; i < rest.size(); ++i) {
    const char c = rest[i];
    if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      any_digit = true;
      digits.push_back(c);
      if (point) ++fraction_digits;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!any_digit) return absl::InvalidArgumentError(kFormatWrong);
  int e10 = 0, e2 = 0;
  Quantity q;
  if (!ParseSuffix(rest.substr(i), &e10, &e2, &q.format_)) {
    return absl::InvalidArgumentError(
        rest.substr(i).find_first_not_of("eEinumkKMGTP+-0123456789") == absl::string_view::npos
            ? kSuffixWrong
            : kFormatWrong);
  }
  q.text_ = std::string(text);
  // The digits as an integer M, and the value M * 10^e10 * 2^e2.
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return q;  // zero
  digits.erase(0, first);
  e10 -= fraction_digits;
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++e10;
  }
  const absl::Status too_large = absl::OutOfRangeError(
      absl::StrCat("quantity ", text, " is too large: at most ",
                   std::numeric_limits<int64_t>::max(), " units are supported"));
  if (digits.size() > 38) return too_large;
  u128 m = 0;
  for (char c : digits) m = m * 10 + static_cast<unsigned>(c - '0');
  u128 value = 0;
  if (e10 >= 0) {
    if (e10 > 38 || !Multiply(m, PowerOfTen(e10), &value) ||
        !Multiply(value, static_cast<u128>(1) << e2, &value)) {
      return too_large;
    }
  } else {
    u128 numerator = 0;
    if (!Multiply(m, static_cast<u128>(1) << e2, &numerator)) return too_large;
    if (-e10 > 38) {
      value = 1;  // below one unit: rounded up
      q.exact_ = false;
    } else {
      const u128 denominator = PowerOfTen(-e10);
      value = numerator / denominator;
      if (numerator % denominator != 0) {
        ++value;  // Value() rounds up, away from zero
        q.exact_ = false;
      }
    }
  }
  if (value > static_cast<u128>(std::numeric_limits<int64_t>::max())) return too_large;
  q.value_ = static_cast<int64_t>(value);
  if (negative) q.value_ = -q.value_;
  return q;
}

std::string Quantity::String() const {
  if (!exact_) return text_;
  if (value_ == 0) return "0";
  const bool negative = value_ < 0;
  // Magnitude as unsigned, so that INT64_MIN is not negated.
  uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value_) : static_cast<uint64_t>(value_);
  std::string suffix;
  // CanonicalizeBytes: BinarySI only from 1024 up (smaller values are shown as DecimalSI).
  if (format_ == Format::kBinarySi && magnitude >= 1024) {
    static constexpr const char* kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int exponent = 0;
    while (exponent < 6 && magnitude % 1024 == 0) {
      magnitude /= 1024;
      ++exponent;
    }
    suffix = kBinary[exponent];
  } else {
    static constexpr const char* kDecimal[] = {"", "k", "M", "G", "T", "P", "E"};
    int exponent = 0;
    while (exponent < 6 && magnitude % 1000 == 0) {
      magnitude /= 1000;
      ++exponent;
    }
    if (format_ == Format::kDecimalExponent) {
      suffix = exponent == 0 ? "" : absl::StrCat("e", 3 * exponent);
    } else {
      suffix = kDecimal[exponent];
    }
  }
  return absl::StrCat(negative ? "-" : "", magnitude, suffix);
}

}  // namespace ndr::kubelet

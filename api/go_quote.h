// How Go components quote strings: strconv.Quote, which Kubernetes components use to show strings
// in logs and errors (klog's text format, field.Error values), and the two JSON string encoders
// whose output we must match byte for byte. Pure and thread-safe.
#ifndef NDR_API_GO_QUOTE_H_
#define NDR_API_GO_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ndr {

// `s` in double quotes: quotes and backslashes escaped, \a \b \f \n \r \t \v, other control
// bytes and invalid UTF-8 as \xHH, the non-printable runes Go escapes most often (C1 controls,
// U+2028, U+2029, U+FEFF) as \uHHHH; printable UTF-8 as it is.
std::string GoQuote(absl::string_view s);

// Which Go JSON encoder's string escaping to follow. Both escape quotes, backslashes and control
// bytes (\n \r \t, else \u00XX) and turn each byte of invalid UTF-8 into \ufffd.
enum class GoJsonStyle {
  // encoding/json with HTML escaping (encode.go, encodeState.string): also < > & as \u003c
  // \u003e \u0026, and U+2028, U+2029 as \u2028, \u2029. kubelet's vol_data.json.
  kEncodingJson,
  // zap's jsonEncoder.safeAddString: nothing else. component-base's JSON log format.
  kZap,
};

// Appends `s` as a JSON string, in double quotes, escaped as `style` does.
void AppendGoJsonString(absl::string_view s, GoJsonStyle style, std::string* out);

}  // namespace ndr

#endif  // NDR_API_GO_QUOTE_H_

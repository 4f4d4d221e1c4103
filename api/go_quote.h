// Go's strconv.Quote, which Kubernetes components use to show strings in logs and errors
// (klog's text format, field.Error values). Pure and thread-safe.
#ifndef NDR_API_GO_QUOTE_H_
#define NDR_API_GO_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ndr {

// `s` in double quotes: quotes and backslashes escaped, \a \b \f \n \r \t \v, other control
// bytes and invalid UTF-8 as \xHH, the non-printable runes Go escapes most often (C1 controls,
// U+2028, U+2029, U+FEFF) as \uHHHH; printable UTF-8 as it is.
std::string GoQuote(absl::string_view s);

}  // namespace ndr

#endif  // NDR_API_GO_QUOTE_H_

#include "kubeletclient/sanity/report_text.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace ndr::kubelet::sanity {

std::string ReportText(absl::string_view text, absl::string_view indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, absl::ByAnyChar("\r\n"))) {
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty()) continue;
    if (!out.empty()) absl::StrAppend(&out, "\n", indent);
    for (char c : line) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 && c != '\t') {
        absl::StrAppendFormat(&out, "\\x%02x", byte);
      } else if (byte == 0x7f) {
        out += "\\x7f";
      } else {
        out += c;
      }
    }
  }
  return out;
}

}  // namespace ndr::kubelet::sanity

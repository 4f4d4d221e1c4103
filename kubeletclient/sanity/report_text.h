// The text of a report line that may hold what a driver said: a driver's error message is input
// from a socket, so it must not be able to start a line of its own (a forged "PASS  ..." that a
// script reading the report would believe) nor hide the rest of a line.
#ifndef NDR_KUBELETCLIENT_SANITY_REPORT_TEXT_H_
#define NDR_KUBELETCLIENT_SANITY_REPORT_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ndr::kubelet::sanity {

// `text` for a report line: its lines after the first are indented by `indent` (blank lines and
// trailing blanks dropped), and other control bytes are written \xNN.
std::string ReportText(absl::string_view text, absl::string_view indent);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_REPORT_TEXT_H_

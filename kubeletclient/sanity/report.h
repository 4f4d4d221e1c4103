// How `kubeletclient sanity` reports: a text line per check as it is decided (PASS, FAIL with
// its details and the kubelet function, SKIP with why, NOT JUDGED with what stood in its way),
// and JUnit XML of the whole run.
#ifndef NDR_KUBELETCLIENT_SANITY_REPORT_H_
#define NDR_KUBELETCLIENT_SANITY_REPORT_H_

#include <ostream>

#include "kubeletclient/sanity/sanity.h"

namespace ndr::kubelet::sanity {

// "PASS  name: summary", then a FAIL's details and its kubelet line, indented.
void WriteCheck(std::ostream& out, const CheckResult& result);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_REPORT_H_

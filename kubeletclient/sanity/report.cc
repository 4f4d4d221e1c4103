#include "kubeletclient/sanity/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/sanity/report_text.h"

namespace ndr::kubelet::sanity {

void WriteCheck(std::ostream& out, const CheckResult& result) {
  const char* word = result.verdict == CheckResult::Verdict::kPass        ? "PASS"
                     : result.verdict == CheckResult::Verdict::kFail      ? "FAIL"
                     : result.verdict == CheckResult::Verdict::kNotJudged ? "NOT JUDGED"
                                                                         : "SKIP";
  // Summaries and details may quote the driver: its further lines go under the check's.
  out << word << "  " << result.name << ": " << ReportText(result.summary, "      ") << "\n";
  for (const std::string& detail : result.details) {
    if (!detail.empty()) out << "      " << ReportText(detail, "        ") << "\n";
  }
  if (result.verdict == CheckResult::Verdict::kFail && !result.kubelet.empty()) {
    out << "      kubelet: " << result.kubelet << "\n";
  }
  out.flush();
}

namespace {

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 has no place for other control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace
}  // namespace ndr::kubelet::sanity

namespace ndr::kubelet {

using sanity::XmlEscape;
using Verdict = CheckResult::Verdict;

std::string SummaryCounts(const SanityReport& report, const std::string& skipped_note) {
  std::string line = absl::StrCat(report.passed, " passed, ", report.failed, " failed, ",
                                  report.skipped, " skipped");
  if (!skipped_note.empty()) absl::StrAppend(&line, " ", skipped_note);
  if (report.not_judged > 0) {
    absl::StrAppend(&line, ", ", report.not_judged,
                    " not judged (what an earlier check of this run left stood in their way: "
                    "counted as failures)");
  }
  return line;
}

std::string JunitXml(const SanityReport& report) {
  const int tests = report.passed + report.failed + report.skipped + report.not_judged;
  double seconds = 0;
  for (const CheckResult& check : report.checks) seconds += check.seconds;
  std::string suite = "kubeletclient sanity";
  if (!report.driver.empty()) absl::StrAppend(&suite, ": ", report.driver);
  if (!report.kubelet_releases.empty()) {
    absl::StrAppend(&suite, " (kubelet ", absl::StrJoin(report.kubelet_releases, ", "), ")");
  }
  const std::string counts = absl::StrCat(
      "tests=\"", tests, "\" failures=\"", report.failed, "\" errors=\"", report.not_judged,
      "\" skipped=\"", report.skipped, "\" time=\"", absl::StrFormat("%.3f", seconds), "\"");
  std::string xml = absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ",
                                 counts, ">\n  <testsuite name=\"", XmlEscape(suite), "\" ",
                                 counts, ">\n");
  if (!report.judge.empty()) {
    absl::StrAppend(&xml, "    <properties><property name=\"judge\" value=\"",
                    XmlEscape(report.judge), "\"/></properties>\n");
  }
  for (const CheckResult& check : report.checks) {
    const size_t slash = check.name.rfind('/');
    const std::string group = slash == std::string::npos ? "" : check.name.substr(0, slash);
    absl::StrAppend(&xml, "    <testcase classname=\"sanity.", XmlEscape(group), "\" name=\"",
                    XmlEscape(check.name), "\" time=\"", absl::StrFormat("%.3f", check.seconds),
                    "\">");
    if (check.verdict == Verdict::kFail) {
      std::vector<std::string> body = check.details;
      if (!check.kubelet.empty()) body.push_back("kubelet: " + check.kubelet);
      absl::StrAppend(&xml, "<failure message=\"", XmlEscape(check.summary), "\">",
                      XmlEscape(absl::StrJoin(body, "\n")), "</failure>");
    } else if (check.verdict == Verdict::kNotJudged) {
      absl::StrAppend(&xml, "<error message=\"not judged: ", XmlEscape(check.summary),
                      "\" type=\"NotJudged\"/>");
    } else if (check.verdict == Verdict::kSkip) {
      absl::StrAppend(&xml, "<skipped message=\"", XmlEscape(check.summary), "\"/>");
    }
    absl::StrAppend(&xml, "</testcase>\n");
  }
  absl::StrAppend(&xml, "  </testsuite>\n</testsuites>\n");
  return xml;
}

}  // namespace ndr::kubelet

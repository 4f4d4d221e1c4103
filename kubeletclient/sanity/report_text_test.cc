#include "kubeletclient/sanity/report_text.h"

#include "gtest/gtest.h"

namespace ndr::kubelet::sanity {
namespace {

TEST(ReportTextTest, OneLineStaysAsItIs) {
  EXPECT_EQ(ReportText("answer: rpc error: code = NotFound", "  "),
            "answer: rpc error: code = NotFound");
}

// The image populator's umount failure, as it answered: several lines, blank ones at the end.
TEST(ReportTextTest, ADriversLinesAreIndentedUnderTheirCheck) {
  EXPECT_EQ(ReportText("Unmount failed: exit status 32\nUnmounting arguments: /t\nOutput: umount: "
                       "/t: no mount point specified.\n\n\n",
                       "        "),
            "Unmount failed: exit status 32\n        Unmounting arguments: /t\n        Output: "
            "umount: /t: no mount point specified.");
}

TEST(ReportTextTest, ADriverCannotForgeAVerdictOrHideText) {
  EXPECT_EQ(ReportText("no\r\nPASS  block/clean: fine", "    "), "no\n    PASS  block/clean: fine");
  EXPECT_EQ(ReportText("a\x1b[2Kb\tc\x7f", ""), "a\\x1b[2Kb\tc\\x7f");
}

}  // namespace
}  // namespace ndr::kubelet::sanity

// JunitXml: what CI systems read of a judgement.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletclient/sanity/sanity.h"

namespace ndr::kubelet {
namespace {

using ::testing::HasSubstr;

SanityReport TwoReleases() {
  SanityReport report;
  report.judge = "kubeletclient 1.1.0 (commit abc, built 2026-11-27T00:00:00Z)";
  report.driver = "hostpath.csi.k8s.io";
  report.kubelet_releases = {"1.29", "1.37"};
  CheckResult pass;
  pass.name = "1.29/filesystem/publish";
  pass.verdict = CheckResult::Verdict::kPass;
  pass.seconds = 0.25;
  CheckResult fail;
  fail.name = "1.37/block/stats";
  fail.verdict = CheckResult::Verdict::kFail;
  fail.summary = "capacity <wrong> & \"big\"";
  fail.details = {"request: x"};
  fail.kubelet = "csi_client.go NodeGetVolumeStats";
  fail.seconds = 1.5;
  CheckResult skip;
  skip.name = "1.37/registration/storage-health";
  skip.verdict = CheckResult::Verdict::kSkip;
  skip.summary = "not asked";
  CheckResult not_judged;
  not_judged.name = "1.37/generic-ephemeral/publish";
  not_judged.verdict = CheckResult::Verdict::kNotJudged;
  not_judged.summary = "/r/plugins/x is left from an earlier check";
  report.checks = {pass, fail, skip, not_judged};
  report.passed = report.failed = report.skipped = report.not_judged = 1;
  return report;
}

TEST(JunitXml, SuiteNamesDriverAndReleasesAndEveryTimeIsThere) {
  const std::string xml = JunitXml(TwoReleases());
  EXPECT_THAT(xml,
              HasSubstr("<testsuites tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\" "
                        "time=\"1.750\">"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"kubeletclient sanity: hostpath.csi.k8s.io "
                             "(kubelet 1.29, 1.37)\" tests=\"4\" failures=\"1\" errors=\"1\" "
                             "skipped=\"1\" time=\"1.750\">"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"judge\" value=\"kubeletclient 1.1.0 (commit abc"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"sanity.1.29/filesystem\" "
                             "name=\"1.29/filesystem/publish\" time=\"0.250\"></testcase>"));
  EXPECT_THAT(xml, HasSubstr("name=\"1.37/block/stats\" time=\"1.500\"><failure "
                             "message=\"capacity &lt;wrong&gt; &amp; &quot;big&quot;\">request: x\n"
                             "kubelet: csi_client.go NodeGetVolumeStats</failure></testcase>"));
  EXPECT_THAT(xml, HasSubstr("time=\"0.000\"><skipped message=\"not asked\"/></testcase>"));
  // A check not judged is an error, which CI systems count against the run, never a skip.
  EXPECT_THAT(xml, HasSubstr("name=\"1.37/generic-ephemeral/publish\" time=\"0.000\"><error "
                             "message=\"not judged: /r/plugins/x is left from an earlier check\" "
                             "type=\"NotJudged\"/></testcase>"));
}

TEST(JunitXml, SummaryCountsSayHowManyWereNotJudged) {
  SanityReport report = TwoReleases();
  EXPECT_EQ(SummaryCounts(report),
            "1 passed, 1 failed, 1 skipped, 1 not judged (what an earlier check of this run left "
            "stood in their way: counted as failures)");
  report.not_judged = 0;
  EXPECT_EQ(SummaryCounts(report, "(1 of them for want of host changes: x)"),
            "1 passed, 1 failed, 1 skipped (1 of them for want of host changes: x)");
}

TEST(JunitXml, NothingJudgedIsAnEmptySuiteWithoutReleaseOrDriver) {
  const std::string xml = JunitXml(SanityReport{});
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"kubeletclient sanity\" tests=\"0\" failures=\"0\" "
                             "errors=\"0\" skipped=\"0\" time=\"0.000\">"));
  EXPECT_THAT(xml, ::testing::Not(HasSubstr("<testcase")));
}

}  // namespace
}  // namespace ndr::kubelet

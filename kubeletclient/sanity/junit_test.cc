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
  report.checks = {pass, fail, skip};
  report.passed = report.failed = report.skipped = 1;
  return report;
}

TEST(JunitXml, SuiteNamesDriverAndReleasesAndEveryTimeIsThere) {
  const std::string xml = JunitXml(TwoReleases());
  EXPECT_THAT(xml,
              HasSubstr("<testsuites tests=\"3\" failures=\"1\" skipped=\"1\" time=\"1.750\">"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"kubeletclient sanity: hostpath.csi.k8s.io "
                             "(kubelet 1.29, 1.37)\" tests=\"3\" failures=\"1\" skipped=\"1\" "
                             "time=\"1.750\">"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"judge\" value=\"kubeletclient 1.1.0 (commit abc"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"sanity.1.29/filesystem\" "
                             "name=\"1.29/filesystem/publish\" time=\"0.250\"></testcase>"));
  EXPECT_THAT(xml, HasSubstr("name=\"1.37/block/stats\" time=\"1.500\"><failure "
                             "message=\"capacity &lt;wrong&gt; &amp; &quot;big&quot;\">request: x\n"
                             "kubelet: csi_client.go NodeGetVolumeStats</failure></testcase>"));
  EXPECT_THAT(xml, HasSubstr("time=\"0.000\"><skipped message=\"not asked\"/></testcase>"));
}

TEST(JunitXml, NothingJudgedIsAnEmptySuiteWithoutReleaseOrDriver) {
  const std::string xml = JunitXml(SanityReport{});
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"kubeletclient sanity\" tests=\"0\" failures=\"0\" "
                             "skipped=\"0\" time=\"0.000\">"));
  EXPECT_THAT(xml, ::testing::Not(HasSubstr("<testcase")));
}

}  // namespace
}  // namespace ndr::kubelet

// The crash report's text: klog's header and quoting, component-base's JSON, the stack block.
#include "logging/crash_report.h"

#include <csignal>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ndr::logging {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

CrashFacts Facts() {
  static const uintptr_t frames[] = {0x5581c2a3b4c1, 0x5581c2a1f0e2, 0x7f0000001000};
  static const char* const names[] = {"ndr::registrar::Registrar::Run()", "main", nullptr};
  CrashFacts facts;
  facts.signal = SIGSEGV;
  facts.code = SEGV_MAPERR;
  facts.address = 0x10;
  facts.tid = 14;
  facts.thread_name = "grpc \"pool\"";
  facts.unix_micros = 1764650000123456;  // 2025-12-02 04:33:20.123456 UTC
  facts.utc_offset_seconds = 3600;
  facts.pid = 12;
  facts.frames = frames;
  facts.names = names;
  facts.frame_count = 3;
  return facts;
}

std::string Format(const CrashFacts& facts, const CrashReportFormat& format, bool stack = true) {
  char buffer[8192];
  return std::string(buffer, FormatCrashReport(facts, format, stack, buffer, sizeof(buffer)));
}

// The report with its line number (which moves as the file is edited) as "N".
std::string WithoutLineNumber(std::string text) {
  const size_t colon = text.find("crash_report.cc:");
  if (colon == std::string::npos) return text;
  const size_t digits = colon + strlen("crash_report.cc:");
  const size_t end = text.find(']', digits);
  if (end == std::string::npos) return text;
  return text.replace(digits, end - digits, "N");
}

TEST(CrashReportTest, KlogText) {
  EXPECT_EQ(WithoutLineNumber(Format(Facts(), {})),
            "F1202 05:33:20.123456      12 crash_report.cc:N] \"Fatal signal\" signal=\"SIGSEGV\" "
            "code=\"SEGV_MAPERR\" addr=\"0x10\" tid=14 thread=\"grpc \\\"pool\\\"\" "
            "function=\"ndr::registrar::Registrar::Run()\" stack=<\n"
            "\t@ 0x00005581c2a3b4c1 ndr::registrar::Registrar::Run()\n"
            "\t@ 0x00005581c2a1f0e2 main\n"
            "\t@ 0x00007f0000001000 (unknown)\n"
            " >\n");
  EXPECT_THAT(Format(Facts(), {.add_dir_header = true}),
              StartsWith("F1202 05:33:20.123456      12 logging/crash_report.cc:"));
  EXPECT_THAT(Format(Facts(), {.skip_headers = true}), StartsWith("\"Fatal signal\" signal="));
}

TEST(CrashReportTest, TerminationMessageIsTheFirstPartWithoutHeader) {
  EXPECT_EQ(Format(Facts(), {.skip_headers = true}, false),
            "\"Fatal signal\" signal=\"SIGSEGV\" code=\"SEGV_MAPERR\" addr=\"0x10\" tid=14 "
            "thread=\"grpc \\\"pool\\\"\" function=\"ndr::registrar::Registrar::Run()\"\n");
}

TEST(CrashReportTest, ASentSignalNamesItsSenderNotAnAddress) {
  CrashFacts facts = Facts();
  facts.signal = SIGABRT;
  facts.code = SI_TKILL;
  facts.sender = 4321;
  const std::string text = Format(facts, {.skip_headers = true}, false);
  EXPECT_THAT(text, HasSubstr("signal=\"SIGABRT\" code=\"SI_TKILL\" sender=4321 tid=14"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("addr=")));
}

TEST(CrashReportTest, ComponentBaseJson) {
  const std::string line = Format(Facts(), {.json = true});
  ASSERT_EQ(line.back(), '\n');
  const nlohmann::json report = nlohmann::json::parse(line);
  EXPECT_DOUBLE_EQ(report["ts"].get<double>(), 1764650000123.456);
  EXPECT_THAT(report["caller"].get<std::string>(), StartsWith("logging/crash_report.cc:"));
  EXPECT_EQ(report["msg"], "Fatal signal");
  EXPECT_FALSE(report.contains("v"));  // errors carry no "v"
  EXPECT_EQ(report["signal"], "SIGSEGV");
  EXPECT_EQ(report["addr"], "0x10");
  EXPECT_EQ(report["tid"], 14);
  EXPECT_EQ(report["thread"], "grpc \"pool\"");
  EXPECT_EQ(report["stack"],
            "@ 0x00005581c2a3b4c1 ndr::registrar::Registrar::Run()\n"
            "@ 0x00005581c2a1f0e2 main\n"
            "@ 0x00007f0000001000 (unknown)\n");
}

TEST(CrashReportTest, CutToTheBufferAndStillOneLine) {
  char buffer[64];
  const size_t n = FormatCrashReport(Facts(), {}, true, buffer, sizeof(buffer));
  EXPECT_EQ(n, sizeof(buffer));
  EXPECT_EQ(buffer[n - 1], '\n');
}

TEST(CrashReportTest, SignalAndCodeNames) {
  EXPECT_STREQ(SignalName(SIGBUS), "SIGBUS");
  EXPECT_STREQ(SignalName(SIGTERM), "");
  EXPECT_STREQ(SignalCodeName(SIGFPE, FPE_INTDIV), "FPE_INTDIV");
  EXPECT_STREQ(SignalCodeName(SIGILL, ILL_ILLOPN), "ILL_ILLOPN");
  EXPECT_STREQ(SignalCodeName(SIGSEGV, SI_USER), "SI_USER");
  EXPECT_STREQ(SignalCodeName(SIGSEGV, 99), "");
}

}  // namespace
}  // namespace ndr::logging

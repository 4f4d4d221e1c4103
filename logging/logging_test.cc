// The two formats, byte for byte. Expected lines are written from klog v2.130
// (internal/buffer FormatHeader, klog.go printS, internal/serialize KVFormat and
// writeStringValue) and component-base v0.31 logs/json (zap's jsonEncoder, zapr with
// LogInfoLevel("v") and ErrorKey("err"), epochMillisTimeEncoder, ShortCallerEncoder).
#include "logging/logging.h"

#include <string>

#include "gflags/gflags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

DECLARE_int32(v);
DECLARE_string(vmodule);
DECLARE_string(logging_format);
DECLARE_string(log_dir);
DECLARE_bool(logtostderr);
DECLARE_bool(alsologtostderr);
DECLARE_bool(skip_headers);
DECLARE_bool(add_dir_header);
DECLARE_string(stderrthreshold);
DECLARE_string(log_backtrace_at);

namespace ndr::logging {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

// 2025-11-22 09:03:03.639649 in the local zone, which klog's header uses.
absl::Time LocalTime() {
  return absl::FromCivil(absl::CivilSecond(2025, 11, 22, 9, 3, 3), absl::LocalTimeZone()) +
         absl::Microseconds(639649);
}

TEST(TextLineTest, KlogHeaderAndStructuredPairs) {
  EXPECT_EQ(TextLine(Severity::kInfo, "registrar/reg_socket.cc", 74,
                     "Removed registration socket", {Kv("path", "/registration/x-reg.sock")},
                     LocalTime(), 4836),
            "I1122 09:03:03.639649    4836 reg_socket.cc:74] \"Removed registration socket\" "
            "path=\"/registration/x-reg.sock\"");
  // Unstructured: the text as it is. Process IDs wider than 7 digits keep their last 7.
  EXPECT_EQ(TextLine(Severity::kWarning, "x.cc", 9, "plain text, \"as is\"", {}, LocalTime(), 1),
            "W1122 09:03:03.639649       1 x.cc:9] plain text, \"as is\"");
  EXPECT_EQ(TextLine(Severity::kError, "a/b/c.cc", 1, "m", {Kv("n", 3)}, LocalTime(), 123456789),
            "E1122 09:03:03.639649 3456789 c.cc:1] \"m\" n=3");
  // err comes right after the message; numbers, booleans and durations as klog prints them;
  // strings strconv.Quote'd.
  EXPECT_EQ(TextLine(Severity::kError, "r.cc", 2, "Kubelet refused the registration",
                     {Kv("driver", "d.example.com"), Err("no \"reason\""), Kv("attempt", 2),
                      Kv("ok", false), Kv("after", absl::Seconds(90)), Kv("tab", "a\tb")},
                     LocalTime(), 7),
            "E1122 09:03:03.639649       7 r.cc:2] \"Kubelet refused the registration\" "
            "err=\"no \\\"reason\\\"\" driver=\"d.example.com\" attempt=2 ok=false "
            "after=\"1m30s\" tab=\"a\\tb\"");
  // A value with line breaks: klog's block form.
  EXPECT_EQ(TextLine(Severity::kInfo, "x.cc", 1, "m", {Kv("v", "one\ntwo")}, LocalTime(), 1),
            "I1122 09:03:03.639649       1 x.cc:1] \"m\" v=<\n\tone\n\ttwo\n >");
  EXPECT_EQ(TextLine(Severity::kInfo, "x.cc", 1, "m", {Kv("v", "one\n")}, LocalTime(), 1),
            "I1122 09:03:03.639649       1 x.cc:1] \"m\" v=<\n\tone\n >");
}

TEST(JsonLineTest, ComponentBaseKeysAndOrder) {
  const absl::Time time = absl::FromUnixMicros(1763802183639649);
  EXPECT_EQ(JsonLine(Severity::kInfo, "registrar/reg_socket.cc", 74, 0,
                     "Removed registration socket", {Kv("path", "/registration/x-reg.sock")},
                     time),
            "{\"ts\":1763802183639.649,\"caller\":\"registrar/reg_socket.cc:74\","
            "\"msg\":\"Removed registration socket\",\"v\":0,"
            "\"path\":\"/registration/x-reg.sock\"}");
  // Errors: no "v", "err" last; the caller is the last directory and the file.
  EXPECT_EQ(JsonLine(Severity::kError, "kubeletclient/csi/csi_attacher.cc", 12, 0, "Failed",
                     {Err("disk <gone> & \"lost\"\n"), Kv("n", 3)}, time),
            "{\"ts\":1763802183639.649,\"caller\":\"csi/csi_attacher.cc:12\",\"msg\":\"Failed\","
            "\"n\":3,\"err\":\"disk <gone> & \\\"lost\\\"\\n\"}");
  // A verbose message carries its level; an unstructured one loses one trailing line break;
  // control bytes and bad UTF-8 are escaped as zap does.
  EXPECT_EQ(JsonLine(Severity::kInfo, "x.cc", 3, 4, "GetInfo\n", {}, time),
            "{\"ts\":1763802183639.649,\"caller\":\"x.cc:3\",\"msg\":\"GetInfo\",\"v\":4}");
  EXPECT_EQ(JsonLine(Severity::kWarning, "x.cc", 3, 0, "a\x01\xff", {}, time),
            "{\"ts\":1763802183639.649,\"caller\":\"x.cc:3\",\"msg\":\"a\\u0001\\ufffd\",\"v\":0}");
}

// --skip_headers and --add_dir_header, as klog v2.110.1 (klog.go header, formatHeader) writes them.
TEST(TextLineTest, KlogHeaderFlags) {
  TextStyle skip, dir;
  skip.skip_headers = true;
  dir.add_dir_header = true;
  EXPECT_EQ(TextLine(Severity::kInfo, "registrar/reg_socket.cc", 74, "Removed",
                     {Kv("path", "/x")}, LocalTime(), 4836, skip),
            "\"Removed\" path=\"/x\"");
  EXPECT_EQ(TextLine(Severity::kInfo, "registrar/reg_socket.cc", 74, "Removed", {}, LocalTime(),
                     4836, dir),
            "I1122 09:03:03.639649    4836 registrar/reg_socket.cc:74] Removed");
  // The last directory only, as klog cuts the path.
  EXPECT_EQ(TextLine(Severity::kError, "kubeletclient/csi/csi_attacher.cc", 9, "m", {},
                     LocalTime(), 1, dir),
            "E1122 09:03:03.639649       1 csi/csi_attacher.cc:9] m");
}

// klog internal/verbosity (v2.110.1): VModule.Set's syntax, and setV's matching.
TEST(VmoduleTest, ParsesAsKlogDoes) {
  auto modules = ParseVmodule("registrar=4,reg_*=2,,x=0,kubeletclient/csi/*=5");
  ASSERT_THAT(modules.status(), IsOk());
  ASSERT_EQ(modules->size(), 3u) << "an empty entry and N=0 are dropped";
  EXPECT_EQ((*modules)[0].pattern, "registrar");
  EXPECT_EQ((*modules)[0].verbosity, 4);
  EXPECT_EQ((*modules)[2].pattern, "kubeletclient/csi/*");
  EXPECT_THAT(ParseVmodule("").status(), IsOk());
  for (const char* bad : {"registrar", "=4", "registrar=four", "a=1=2", "a=1,b"}) {
    EXPECT_THAT(ParseVmodule(bad).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "syntax error: expect comma-separated list of filename=N"))
        << bad;
  }
}

TEST(VmoduleTest, MatchesTheFileNameOrItsPath) {
  const std::vector<ModuleVerbosity> modules = *ParseVmodule(
      "registrar=4,reg_*=2,kubeletclient/csi/*=5,health.h=7,?ealth=6");
  // The name less its extension.
  EXPECT_EQ(VerbosityFor("registrar/registrar.cc", 0, modules), 4);
  EXPECT_EQ(VerbosityFor("registrar/registrar.h", 0, modules), 4);
  EXPECT_EQ(VerbosityFor("registrar/reg_socket.cc", 1, modules), 2);
  // A pattern with a slash against the path; '*' stops at '/'.
  EXPECT_EQ(VerbosityFor("kubeletclient/csi/csi_attacher.cc", 0, modules), 5);
  EXPECT_EQ(VerbosityFor("kubeletclient/csi/nodeinfomanager/x.cc", 3, modules), 3);
  // The extension is never part of the name matched; the first match wins.
  EXPECT_EQ(VerbosityFor("registrar/health.h", 0, modules), 6);
  // No match: --v.
  EXPECT_EQ(VerbosityFor("logging/logging.cc", 3, modules), 3);
  EXPECT_EQ(VerbosityFor("main.cc", 1, {}), 1);
}

TEST(OptionsTest, VerbosityFlags) {
  gflags::FlagSaver saver;
  FLAGS_v = 2;
  FLAGS_vmodule = "registrar=5";
  auto options = OptionsFromFlags();
  ASSERT_THAT(options.status(), IsOk());
  EXPECT_EQ(options->verbosity, 2);
  ASSERT_EQ(options->modules.size(), 1u);
  EXPECT_EQ(options->modules[0].verbosity, 5);
  FLAGS_vmodule = "registrar";
  EXPECT_THAT(OptionsFromFlags().status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "--vmodule: syntax error"));
}

// klog's flags: checked as klog checks them; set to something this program does not do, a
// notice naming the flag; headers set for JSON, an error.
TEST(OptionsTest, KlogFlags) {
  {
    gflags::FlagSaver saver;
    auto options = OptionsFromFlags();
    ASSERT_THAT(options.status(), IsOk());
    EXPECT_THAT(options->notices, ::testing::IsEmpty()) << "klog's defaults need no notice";
  }
  {
    gflags::FlagSaver saver;
    gflags::SetCommandLineOption("logtostderr", "true");
    gflags::SetCommandLineOption("skip_headers", "true");
    gflags::SetCommandLineOption("stderrthreshold", "info");
    auto options = OptionsFromFlags();
    ASSERT_THAT(options.status(), IsOk());
    EXPECT_TRUE(options->text_style.skip_headers);
    ASSERT_EQ(options->notices.size(), 1u) << "--logtostderr=true is what happens anyway";
    EXPECT_EQ(options->notices[0].flag, "--stderrthreshold=info");
  }
  {
    gflags::FlagSaver saver;
    gflags::SetCommandLineOption("logtostderr", "false");
    gflags::SetCommandLineOption("log_dir", "/var/log/x");
    gflags::SetCommandLineOption("log_backtrace_at", "main.go:12");
    auto options = OptionsFromFlags();
    ASSERT_THAT(options.status(), IsOk());
    ASSERT_EQ(options->notices.size(), 3u);
    EXPECT_EQ(options->notices[0].flag, "--logtostderr=false");
    EXPECT_THAT(options->notices[0].reason, ::testing::HasSubstr("no log files"));
    EXPECT_EQ(options->notices[1].flag, "--log_dir=/var/log/x");
    EXPECT_EQ(options->notices[2].flag, "--log_backtrace_at=main.go:12");
    EXPECT_THAT(options->notices[2].reason, ::testing::HasSubstr("no stack traces"));
  }
  for (const auto& [flag, value, error] :
       {std::tuple{"stderrthreshold", "LOUD", "--stderrthreshold: \"LOUD\" is not a severity"},
        std::tuple{"log_backtrace_at", "main:12", "--log_backtrace_at: \"main:12\": syntax"},
        std::tuple{"log_backtrace_at", "main.go:0", "--log_backtrace_at: \"main.go:0\": syntax"},
        std::tuple{"log_backtrace_at", "main.go", "--log_backtrace_at: \"main.go\": syntax"}}) {
    gflags::FlagSaver saver;
    gflags::SetCommandLineOption(flag, value);
    EXPECT_THAT(OptionsFromFlags().status(), StatusIs(absl::StatusCode::kInvalidArgument, error));
  }
  {
    gflags::FlagSaver saver;
    FLAGS_logging_format = "json";
    FLAGS_add_dir_header = true;
    EXPECT_THAT(OptionsFromFlags().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "--add_dir_header: only supported for text log format"));
  }
}

TEST(ParseQuantityTest, ComponentBaseSizes) {
  EXPECT_EQ(*ParseQuantity("0"), 0);
  EXPECT_EQ(*ParseQuantity("512"), 512);
  EXPECT_EQ(*ParseQuantity("1K"), 1000);
  EXPECT_EQ(*ParseQuantity("2Ki"), 2048);
  EXPECT_EQ(*ParseQuantity("3M"), 3000000);
  EXPECT_EQ(*ParseQuantity("5Mi"), 5 * 1048576);
  EXPECT_EQ(*ParseQuantity("1.5Ki"), 1536);
  EXPECT_THAT(ParseQuantity("abc").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "\"abc\" is not a size"));
  EXPECT_THAT(ParseQuantity("5Xi").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "unable to parse quantity's suffix"));
  EXPECT_THAT(ParseQuantity("3Gi").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than the 2Gi"));
}

}  // namespace
}  // namespace ndr::logging

// The two formats, byte for byte. Expected lines are written from klog v2.130
// (internal/buffer FormatHeader, klog.go printS, internal/serialize KVFormat and
// writeStringValue) and component-base v0.31 logs/json (zap's jsonEncoder, zapr with
// LogInfoLevel("v") and ErrorKey("err"), epochMillisTimeEncoder, ShortCallerEncoder).
#include "logging/logging.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

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

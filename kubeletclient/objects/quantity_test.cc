#include "kubeletclient/objects/quantity.h"

#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

struct Case {
  const char* text;
  int64_t value;
  const char* canonical;  // Quantity.String() in Go for the same text
};

// Values and canonical forms as k8s.io/apimachinery/pkg/api/resource gives them
// (quantity_test.go TestQuantityParse, TestQuantityString).
TEST(QuantityTest, ParsesAndCanonicalizes) {
  const Case cases[] = {
      {"0", 0, "0"},
      {"1", 1, "1"},
      {"1Gi", 1073741824, "1Gi"},
      {"2048Mi", 2147483648, "2Gi"},
      {"1536Mi", 1610612736, "1536Mi"},
      {"1.5Gi", 1610612736, "1536Mi"},
      {"1000", 1000, "1k"},
      {"1500", 1500, "1500"},
      {"10G", 10000000000, "10G"},
      {"1e3", 1000, "1e3"},
      {"1E6", 1000000, "1e6"},
      {"100Ki", 102400, "100Ki"},
      {"512", 512, "512"},
      {"1024", 1024, "1024"},  // DecimalSI stays decimal
      {"1Ei", 1152921504606846976, "1Ei"},
      {"+5M", 5000000, "5M"},
      {".5k", 500, "500"},
      {"5.", 5, "5"},
      {"0.5Ki", 512, "512"},  // BinarySI below 1024 shows as decimal
      {"1e-3", 1, "1e-3"},    // not whole: rounded up, the text kept
      {"100m", 1, "100m"},
      {"0.0000000000001", 1, "0.0000000000001"},
      {"-1Gi", -1073741824, "-1Gi"},
      {"007", 7, "7"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Quantity> q = ParseQuantity(c.text);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.status();
    EXPECT_EQ(q->value(), c.value) << c.text;
    EXPECT_EQ(q->String(), c.canonical) << c.text;
  }
}

TEST(QuantityTest, RefusesWhatTheApiRefuses) {
  for (const char* text : {"", "Gi", "1 Gi", "1GiB", "abc", "1..2", "1K", "1e", "--1", "1/2"}) {
    absl::StatusOr<Quantity> q = ParseQuantity(text);
    ASSERT_FALSE(q.ok()) << text;
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(ParseQuantity("1K").status().message(), "unable to parse quantity's suffix");
  EXPECT_EQ(ParseQuantity("1Q").status().message(), ParseQuantity("x").status().message());
  EXPECT_EQ(ParseQuantity("x").status().message(),
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

TEST(QuantityTest, ValuesBeyondInt64AreOutOfRange) {
  for (const char* text : {"8Ei", "9223372036854775808", "1e19", "1e400",
                           "123456789012345678901234567890123456789012"}) {
    EXPECT_EQ(ParseQuantity(text).status().code(), absl::StatusCode::kOutOfRange) << text;
  }
  EXPECT_EQ(ParseQuantity("9223372036854775807")->value(), INT64_MAX);
}

TEST(QuantityTest, ComparesByValue) {
  EXPECT_TRUE(*ParseQuantity("1Gi") < *ParseQuantity("2Gi"));
  EXPECT_FALSE(*ParseQuantity("1024Mi") < *ParseQuantity("1Gi"));
  EXPECT_TRUE(*ParseQuantity("1024Mi") == *ParseQuantity("1Gi"));
  EXPECT_EQ(Quantity::FromValue(3221225472, Quantity::Format::kBinarySi).String(), "3Gi");
}

}  // namespace
}  // namespace ndr::kubelet

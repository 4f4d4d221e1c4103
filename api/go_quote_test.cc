#include "api/go_quote.h"

#include <string>

#include "gtest/gtest.h"

namespace ndr {
namespace {

// Expected values are what Go's strconv.Quote returns for the same input.
TEST(GoQuoteTest, AsStrconvQuote) {
  EXPECT_EQ(GoQuote("plain"), "\"plain\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote(std::string("\a\b\f\n\r\t\v\0\x1b\x7f", 10)),
            "\"\\a\\b\\f\\n\\r\\t\\v\\x00\\x1b\\x7f\"");
  EXPECT_EQ(GoQuote("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(GoQuote("\xFF\xC3("), "\"\\xff\\xc3(\"");  // invalid UTF-8, byte by byte
  EXPECT_EQ(GoQuote("\xC2\x85\xE2\x80\xA8\xEF\xBB\xBF"), "\"\\u0085\\u2028\\ufeff\"");
  EXPECT_EQ(GoQuote(""), "\"\"");
}

// Expected values are what Go's encoding/json (HTML escaping on) and zap write for the same input.
TEST(GoJsonStringTest, EncodingJsonAndZap) {
  const std::string input = "a\"b\\<&>\n\x01\xFF caf\xC3\xA9 \xE2\x80\xA8";
  std::string encoding_json, zap;
  AppendGoJsonString(input, GoJsonStyle::kEncodingJson, &encoding_json);
  AppendGoJsonString(input, GoJsonStyle::kZap, &zap);
  EXPECT_EQ(encoding_json,
            "\"a\\\"b\\\\\\u003c\\u0026\\u003e\\n\\u0001\\ufffd caf\xC3\xA9 \\u2028\"");
  EXPECT_EQ(zap, "\"a\\\"b\\\\<&>\\n\\u0001\\ufffd caf\xC3\xA9 \xE2\x80\xA8\"");
}

}  // namespace
}  // namespace ndr

#include "api/csi_name.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr {
namespace {

using ::testing::HasSubstr;

TEST(ValidateCsiDriverNameTest, AcceptsValidNames) {
  const std::string cases[] = {
      "a",
      "sample.csi.example.com",
      "hostpath.csi.k8s.io",
      "ebs-csi.aws.com",
      "0driver9",
      std::string(63, 'x'),
  };
  for (const std::string& name : cases) {
    EXPECT_TRUE(ValidateCsiDriverName(name).ok()) << name << ": " << ValidateCsiDriverName(name);
  }
}

TEST(ValidateCsiDriverNameTest, RejectsInvalidNamesWithReason) {
  struct Case {
    std::string name;
    const char* reason;
  } cases[] = {
      {"", "is empty"},
      {std::string(64, 'x'), "64 characters long"},
      {std::string(300, 'x'), "300 characters long"},
      {"../../etc/x", "begin and end with a letter or digit"},
      {"-driver", "begin and end"},
      {"driver.", "begin and end"},
      {"a/b", "found \"/\""},
      {"a_b", "found \"_\""},
      {"a b", "found \" \""},
      {std::string("a\0b", 3), "found \"\\x00\""},
      {"a\nb", "found \"\\n\""},
  };
  for (const Case& c : cases) {
    absl::Status status = ValidateCsiDriverName(c.name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.reason)) << c.name;
  }
}

TEST(ValidateCsiDriverNameTest, LongNamesAreTruncatedInTheMessage) {
  absl::Status status = ValidateCsiDriverName(std::string(300, 'x'));
  EXPECT_LT(status.message().size(), 200u) << status;
}

}  // namespace
}  // namespace ndr

#include "kubeletclient/csi/versions.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"


namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::testing::HasSubstr;

TEST(ParseGenericTest, Table) {
  struct Case {
    const char* text;
    const char* parsed;  // nullptr: an error containing `error`
    const char* error;
  } cases[] = {
      {"1.0.0", "1.0.0", nullptr},
      {"v1.2", "1.2", nullptr},
      {"  v1.2.3-rc1", "1.2.3", nullptr},
      {"1.10.0+build", "1.10.0", nullptr},
      {"1.0.0.0", "1.0.0.0", nullptr},
      {"1.02", "1.2", nullptr},  // only the first component may not have a leading zero
      {"1", nullptr, "illegal version string \"1\""},
      {"v2", nullptr, "illegal version string"},
      {"x1.0", nullptr, "could not parse \"x1.0\" as version"},
      {"", nullptr, "could not parse \"\" as version"},
      {"01.0", nullptr, "illegal zero-prefixed version component \"01\" in \"01.0\""},
      {"1.99999999999", nullptr, "illegal non-numeric version component"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Version> v = Version::ParseGeneric(c.text);
    if (c.parsed != nullptr) {
      ASSERT_THAT(v, IsOk()) << c.text;
      EXPECT_EQ(v->String(), c.parsed) << c.text;
    } else {
      ASSERT_FALSE(v.ok()) << c.text;
      EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.error)) << c.text;
    }
  }
}

TEST(HighestSupportedVersionTest, KubeletsRule) {
  struct Case {
    std::vector<std::string> versions;
    const char* highest;  // nullptr: refused with `error`
    const char* error;
  } cases[] = {
      {{"1.0.0"}, "1.0.0", nullptr},
      {{"0.3.0", "1.0.0"}, "1.0.0", nullptr},
      {{"1.0.0", "1.2.0", "1.1.0"}, "1.2.0", nullptr},
      {{"v1.5.0-rc1"}, "1.5.0", nullptr},
      {{"1.0.0", "2.0.0"}, "1.0.0", nullptr},  // majors above 1 skipped
      {{"1.0.0", "garbage"}, "1.0.0", nullptr},
      {{}, nullptr, "kubernetes.io/csi: CSI driver reporting empty array for supported versions"},
      {{"0.3.0"}, nullptr, "highest supported version reported by driver is 0.3.0, must be v1.x"},
      {{"2.0.0"}, nullptr,
       "could not find a highest supported version from versions ([2.0.0]) reported by this "
       "driver: <nil>"},
      {{"garbage"}, nullptr,
       "could not find a highest supported version from versions ([garbage]) reported by this "
       "driver: could not parse \"garbage\" as version"},
      {{"1"}, nullptr, "illegal version string \"1\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Version> v = HighestSupportedVersion(c.versions);
    const std::string name = ::testing::PrintToString(c.versions);
    if (c.highest != nullptr) {
      ASSERT_THAT(v, IsOk()) << name;
      EXPECT_EQ(v->String(), c.highest) << name;
    } else {
      ASSERT_FALSE(v.ok()) << name;
      EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.error)) << name;
    }
  }
}

TEST(ValidateVersionsTest, KubeletsTexts) {
  EXPECT_EQ(ValidateVersions("ValidatePlugin", "d", {}, nullptr).status().message(),
            "kubernetes.io/csi: ValidatePlugin for CSI driver \"d\" failed. Plugin returned an "
            "empty list for supported versions");
  EXPECT_EQ(ValidateVersions("ValidatePlugin", "d", {"0.3.0"}, nullptr).status().message(),
            "kubernetes.io/csi: ValidatePlugin for CSI driver \"d\" failed. None of the versions "
            "specified [\"0.3.0\"] are supported. err=highest supported version reported by "
            "driver is 0.3.0, must be v1.x");
}

TEST(ValidateVersionsTest, SameNameNeedsAStrictlyHigherVersion) {
  const Version existing = *Version::ParseGeneric("1.1.0");
  EXPECT_THAT(ValidateVersions("RegisterPlugin", "d", {"1.2.0"}, &existing), IsOk());
  for (const char* same_or_lower : {"1.1.0", "1.1", "1.0.0", "v1.1.0-rc9"}) {
    absl::StatusOr<Version> v = ValidateVersions("RegisterPlugin", "d", {same_or_lower}, &existing);
    ASSERT_FALSE(v.ok()) << same_or_lower;
    EXPECT_EQ(v.status().message(),
              "kubernetes.io/csi: RegisterPlugin for CSI driver \"d\" failed. Another driver with "
              "the same name is already registered with a higher supported version: \"1.1.0\"")
        << same_or_lower;
  }
}

TEST(GoQuoteListTest, FormatsLikeGo) {
  EXPECT_EQ(GoQuoteList({"1.0.0", "2.0.0"}), "[\"1.0.0\" \"2.0.0\"]");
  EXPECT_EQ(GoQuoteList({}), "[]");
}

}  // namespace
}  // namespace ndr::kubelet

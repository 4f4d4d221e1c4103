#include "version/version.h"

#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr::version {
namespace {

// semver.org's grammar: MAJOR.MINOR.PATCH, an optional pre-release, optional build metadata.
const std::regex kSemver(
    R"((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*))"
    R"((-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)");

TEST(VersionTest, StampedValuesAreWellFormed) {
  EXPECT_TRUE(std::regex_match(std::string(Version()), kSemver)) << Version();
  EXPECT_TRUE(std::regex_match(std::string(Commit()), std::regex("[0-9a-f]{40}|unknown")))
      << Commit();
  EXPECT_TRUE(std::regex_match(std::string(BuildDate()),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << BuildDate();
}

TEST(VersionTest, DevelopmentBuildsSayWhichCommit) {
  // A build of anything but a tagged, unchanged commit names the commit in its version.
  const std::string version(Version());
  if (version.find('-') == std::string::npos) GTEST_SKIP() << "a release build: " << version;
  if (Commit() == "unknown") {
    EXPECT_THAT(version, testing::EndsWith("-dev+unknown"));
  } else {
    EXPECT_THAT(version, testing::HasSubstr("-dev+" + std::string(Commit().substr(0, 12))));
  }
}

TEST(VersionTest, Text) {
  const std::string expected = "prog " + std::string(Version()) + "\ncommit: " +
                               std::string(Commit()) + "\nbuilt: " + std::string(BuildDate()) +
                               "\n";
  EXPECT_EQ(VersionText("prog"), expected);
  EXPECT_EQ(VersionText("prog", {"one", "two"}), expected + "one\ntwo\n");
}

TEST(VersionTest, Requested) {
  struct Case {
    std::vector<const char*> args;
    bool requested;
  };
  for (const Case& c : std::vector<Case>{
           {{"p"}, false},
           {{"p", "--version"}, true},
           {{"p", "-version"}, true},
           {{"p", "--v=2", "--version"}, true},
           {{"p", "--", "--version"}, false},
           {{"p", "--versions"}, false},
           {{"p", "--version=false"}, false},
       }) {
    std::vector<char*> argv;
    for (const char* arg : c.args) argv.push_back(const_cast<char*>(arg));
    EXPECT_EQ(VersionRequested(static_cast<int>(argv.size()), argv.data()), c.requested)
        << testing::PrintToString(c.args);
  }
}

}  // namespace
}  // namespace ndr::version

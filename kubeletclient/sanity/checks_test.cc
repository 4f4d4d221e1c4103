#include "kubeletclient/sanity/checks.h"

#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr::kubelet::sanity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The order the checks run in is the order they are reported in: held here.
TEST(ChecksTest, EachGroupInTheOrderItRuns) {
  EXPECT_THAT(CheckNames(CheckGroup::kRegistration),
              ElementsAre("handshake", "node-info", "capabilities", "storage-health"));
  EXPECT_THAT(CheckNames(CheckGroup::kVolume),
              ElementsAre("publish", "target", "tokens", "restart-replay", "republish",
                          "second-pod", "read-only", "stats", "volume-health", "expand",
                          "unpublish-twice",
                          "teardown", "unpublish-removed-target", "unstage-repeated", "clean"));
  EXPECT_THAT(CheckNames(CheckGroup::kEphemeral),
              ElementsAre("publish", "target", "restart-replay", "teardown",
                          "unpublish-removed-target", "clean"));
}

TEST(ChecksTest, EveryCheckIsNamedOnceAndSaysWhatItDoes) {
  std::set<std::pair<int, std::string>> seen;
  for (const CheckInfo& check : AllChecks()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(check.group), check.name}).second) << check.name;
    EXPECT_STRNE(check.does, "") << check.name;
    EXPECT_STRNE(check.kubelet, "") << check.name;
  }
}

TEST(ChecksTest, TheListHasALinePerCheck) {
  std::ostringstream out;
  ListChecks(out);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'),
            static_cast<long>(AllChecks().size()) + 1);
  EXPECT_THAT(text, HasSubstr("registration/handshake"));
  EXPECT_THAT(text, HasSubstr("<mode>/unpublish-removed-target"));
  EXPECT_THAT(text, HasSubstr("{inline,generic-ephemeral}/restart-replay"));
  EXPECT_THAT(text, HasSubstr("controller/capabilities"));
}

}  // namespace
}  // namespace ndr::kubelet::sanity

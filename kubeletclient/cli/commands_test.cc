#include "kubeletclient/cli/commands.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gflags/gflags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet::cli {
namespace {

using ::ndr::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(CommandsTest, EveryCommandInHelpsOrder) {
  std::vector<std::string> names;
  for (const Command& command : Commands()) names.push_back(command.name);
  EXPECT_THAT(names, ElementsAre("watch", "probe", "publish", "unpublish", "republish", "expand",
                                 "stats", "jwks", "sanity"));
  EXPECT_EQ(CommandNames(),
            "watch, probe, publish, unpublish, republish, expand, stats, jwks or sanity");
}

// Each command's flags are defined: its file was linked, and no name is misspelt.
TEST(CommandsTest, EveryFlagACommandNamesIsDefined) {
  for (const Command& command : Commands()) {
    EXPECT_THAT(std::string(command.usage), StartsWith(std::string("kubeletclient ") +
                                                       command.name + " "));
    EXPECT_NE(command.run, nullptr) << command.name;
    for (const std::string& flag : command.flags) {
      gflags::CommandLineFlagInfo info;
      EXPECT_TRUE(gflags::GetCommandLineFlagInfo(flag.c_str(), &info))
          << command.name << ": --" << flag;
    }
  }
}

TEST(CommandsTest, FindCommand) {
  ASSERT_NE(FindCommand("stats"), nullptr);
  EXPECT_STREQ(FindCommand("stats")->name, "stats");
  EXPECT_EQ(FindCommand("nope"), nullptr);
  EXPECT_EQ(FindCommand(""), nullptr);
}

TEST(CommandsTest, UsageLinesAreEveryCommandsIndented) {
  const std::string lines = UsageLines();
  EXPECT_THAT(lines, StartsWith("  kubeletclient watch "));
  EXPECT_THAT(lines, HasSubstr("\n  kubeletclient sanity "));
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 9);
}

TEST(CommandsTest, HelpOfACommandOrOfTheProgram) {
  std::string arg0 = "kubeletclient", v = "--v=2", probe = "probe", help = "--help";
  char* of_probe[] = {arg0.data(), v.data(), probe.data(), help.data()};
  const std::string probe_help = Help(4, of_probe);
  EXPECT_THAT(probe_help, StartsWith("Usage:\n  kubeletclient probe --registration-socket"));
  EXPECT_THAT(probe_help, HasSubstr("\n  -notify\n"));
  EXPECT_THAT(probe_help, HasSubstr("\nLogging flags (component-base):\n"));
  char* of_all[] = {arg0.data(), help.data()};
  const std::string all = Help(2, of_all);
  EXPECT_THAT(all, HasSubstr("Run 'kubeletclient COMMAND --help' for a command's flags."));
  EXPECT_THAT(all, Not(HasSubstr("\n  -notify\n")));
}

TEST(CommandsTest, AnotherCommandsFlagsAreRefused) {
  gflags::FlagSaver saver;
  for (const Command& command : Commands()) EXPECT_THAT(CheckOwnFlags(command), IsOk());
  ASSERT_FALSE(gflags::SetCommandLineOption("junit", "x").empty());
  EXPECT_THAT(CheckOwnFlags(*FindCommand("sanity")), IsOk());
  EXPECT_EQ(CheckOwnFlags(*FindCommand("watch")).message(),
            "watch: --junit is not one of its flags; its flags are --plugin-registry-dir, "
            "--node-status-file, --node-name, --objects, --feature-gates, --kubelet-version, "
            "--get-info-timeout, --notify-timeout, --node-get-info-timeout, "
            "--ask-csi-registration (kubeletclient watch --help)");
  ASSERT_FALSE(gflags::SetCommandLineOption("format", "json").empty());
  EXPECT_EQ(CheckOwnFlags(*FindCommand("jwks")).message(),
            "jwks: --format, --junit are not its flags; its flags are --service-account-key-file "
            "(kubeletclient jwks --help)");
}

}  // namespace
}  // namespace ndr::kubelet::cli

#include "kubeletclient/sanity/secrets_file.h"

#include "gtest/gtest.h"

namespace ndr::kubelet {
namespace {

TEST(SecretsFile, ReadsCsiSanitysFormat) {
  // As csi-test's pkg/sanity documents it.
  absl::StatusOr<SecretsFile> file = ParseSecretsFile(R"(CreateVolumeSecret:
  secretKey: secretval1
DeleteVolumeSecret:
  secretKey: secretval2
NodeStageVolumeSecret:
  secretKey: secretval5
  other: "7"
CreateSnapshotSecret:
  secretKey: secretval8
)",
                                                      "secrets.yaml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_NE(file->Find("CreateVolumeSecret"), nullptr);
  EXPECT_EQ(file->Find("CreateVolumeSecret")->at("secretKey"), "secretval1");
  EXPECT_EQ(file->Find("NodeStageVolumeSecret")->size(), 2u);
  EXPECT_EQ(file->Find("NodeStageVolumeSecret")->at("other"), "7");
  EXPECT_EQ(file->Find("NodePublishVolumeSecret"), nullptr);
  EXPECT_EQ(file->unused, std::vector<std::string>{"CreateSnapshotSecret"});
}

TEST(SecretsFile, AnEmptyFileHasNoSecrets) {
  absl::StatusOr<SecretsFile> file = ParseSecretsFile("", "secrets.yaml");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->secrets.empty());
}

TEST(SecretsFile, RefusesWhatWouldSendNothing) {
  auto error = [](const std::string& text) {
    absl::StatusOr<SecretsFile> file = ParseSecretsFile(text, "s.yaml");
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(file.status().message());
  };
  EXPECT_NE(error("CreateVolumeSecrets:\n  a: b\n").find("unknown key \"CreateVolumeSecrets\""),
            std::string::npos);
  EXPECT_NE(error("- a\n- b\n").find("must be a map"), std::string::npos);
  EXPECT_NE(error("NodeStageVolumeSecret: [a]\n").find("NodeStageVolumeSecret: must be a map"),
            std::string::npos);
  EXPECT_NE(error("NodeStageVolumeSecret:\n  a: [b]\n").find("string key and value"),
            std::string::npos);
  EXPECT_NE(error("NodeStageVolumeSecret:\n  a: b\n  a: c\n").find("\"a\" is given twice"),
            std::string::npos);
  EXPECT_NE(error("a: [\n").find("s.yaml: line"), std::string::npos);
  EXPECT_NE(error("NodeStageVolumeSecret:\n  a: \"\xff\"\n").find("not UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace ndr::kubelet

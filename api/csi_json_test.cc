#include "api/csi_json.h"

#include <string>

#include "api/csi/csi.pb.h"
#include "gtest/gtest.h"

namespace ndr {
namespace {

// Each kind of request that carries secrets: the key stays, the value never shows.
template <typename Request>
void ExpectSecretsRedacted() {
  Request request;
  (*request.mutable_secrets())["password"] = "hunter2";
  const std::string json = RedactedCsiJson(request);
  EXPECT_NE(json.find("\"password\""), std::string::npos) << json;
  EXPECT_NE(json.find("(redacted)"), std::string::npos) << json;
  EXPECT_EQ(json.find("hunter2"), std::string::npos) << json;
}

TEST(RedactedCsiJson, KeepsOnlyTheKeysOfEverySecretsField) {
  ExpectSecretsRedacted<csi::v1::CreateVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::DeleteVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::ControllerPublishVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::ControllerUnpublishVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::NodeStageVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::NodePublishVolumeRequest>();
  ExpectSecretsRedacted<csi::v1::NodeExpandVolumeRequest>();
}

TEST(RedactedCsiJson, RedactsTheServiceAccountTokensOfAPublish) {
  csi::v1::NodePublishVolumeRequest request;
  (*request.mutable_volume_context())[kServiceAccountTokensKey] = "{\"aud\":{\"token\":\"ey\"}}";
  (*request.mutable_volume_context())["size"] = "1Gi";
  const std::string json = RedactedCsiJson(request);
  EXPECT_EQ(json.find("\"ey\""), std::string::npos) << json;
  EXPECT_NE(json.find("1Gi"), std::string::npos) << json;
}

TEST(RedactedCsiJson, LeavesARequestWithoutSecretsAsItIs) {
  csi::v1::CreateVolumeRequest request;
  request.set_name("pvc-1");
  (*request.mutable_parameters())["type"] = "ssd";
  EXPECT_EQ(RedactedCsiJson(request), "{\"name\":\"pvc-1\",\"parameters\":{\"type\":\"ssd\"}}");
}

}  // namespace
}  // namespace ndr

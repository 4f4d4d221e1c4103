#include "api/csi_json.h"

#include <string>
#include <vector>

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
  ExpectSecretsRedacted<csi::v1::NodeGetStorageHealthRequest>();
}

// Every request of the proto with a `secrets` field is among those above: a new one must be
// added to RedactedCsiJson and to that test.
TEST(RedactedCsiJson, KnowsEveryRequestWithSecrets) {
  const google::protobuf::FileDescriptor* file = csi::v1::CreateVolumeRequest::descriptor()->file();
  std::vector<std::string> with_secrets;
  for (int i = 0; i < file->message_type_count(); ++i) {
    if (file->message_type(i)->FindFieldByName("secrets") != nullptr) {
      with_secrets.push_back(file->message_type(i)->name());
    }
  }
  EXPECT_EQ(with_secrets,
            (std::vector<std::string>{"NodeStageVolumeRequest", "NodePublishVolumeRequest",
                                      "NodeGetStorageHealthRequest", "NodeExpandVolumeRequest",
                                      "CreateVolumeRequest", "DeleteVolumeRequest",
                                      "ControllerPublishVolumeRequest",
                                      "ControllerUnpublishVolumeRequest"}));
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

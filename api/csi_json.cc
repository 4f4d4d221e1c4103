#include "api/csi_json.h"

#include <memory>

#include "api/csi/csi.pb.h"
#include "google/protobuf/util/json_util.h"

namespace ndr {

std::string RedactedCsiJson(const google::protobuf::Message& message) {
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  copy->CopyFrom(message);
  // Every request that carries secrets keeps their keys only: each request type the CSI spec
  // gives a `secrets` field (marked csi_secret), Controller and Node alike. (Not through
  // reflection: a map field reached by reflection crashed in the ThreadSanitizer build, whose
  // protobuf is Debian's shared library under our own inline code.)
  google::protobuf::Map<std::string, std::string>* secrets = nullptr;
  if (auto* create = dynamic_cast<csi::v1::CreateVolumeRequest*>(copy.get())) {
    secrets = create->mutable_secrets();
  } else if (auto* remove = dynamic_cast<csi::v1::DeleteVolumeRequest*>(copy.get())) {
    secrets = remove->mutable_secrets();
  } else if (auto* attach = dynamic_cast<csi::v1::ControllerPublishVolumeRequest*>(copy.get())) {
    secrets = attach->mutable_secrets();
  } else if (auto* detach = dynamic_cast<csi::v1::ControllerUnpublishVolumeRequest*>(copy.get())) {
    secrets = detach->mutable_secrets();
  } else if (auto* stage = dynamic_cast<csi::v1::NodeStageVolumeRequest*>(copy.get())) {
    secrets = stage->mutable_secrets();
  } else if (auto* publish = dynamic_cast<csi::v1::NodePublishVolumeRequest*>(copy.get())) {
    secrets = publish->mutable_secrets();
    auto tokens = publish->mutable_volume_context()->find(kServiceAccountTokensKey);
    if (tokens != publish->mutable_volume_context()->end()) tokens->second = "(redacted)";
  } else if (auto* expand = dynamic_cast<csi::v1::NodeExpandVolumeRequest*>(copy.get())) {
    secrets = expand->mutable_secrets();
  } else if (auto* storage = dynamic_cast<csi::v1::NodeGetStorageHealthRequest*>(copy.get())) {
    secrets = storage->mutable_secrets();
  }
  if (secrets != nullptr) {
    for (auto& [key, value] : *secrets) value = "(redacted)";
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(*copy, &text, options);
  return text;
}

}  // namespace ndr

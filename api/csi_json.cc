#include "api/csi_json.h"

#include <memory>

#include "api/csi/csi.pb.h"
#include "google/protobuf/util/json_util.h"

namespace ndr {

std::string RedactedCsiJson(const google::protobuf::Message& message) {
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  copy->CopyFrom(message);
  // Every request that carries secrets keeps their keys only: the CSI spec names each such field
  // `secrets` (a map<string, string> marked csi_secret), Controller and Node requests alike.
  const google::protobuf::Descriptor* descriptor = copy->GetDescriptor();
  const google::protobuf::Reflection* reflection = copy->GetReflection();
  if (const google::protobuf::FieldDescriptor* secrets = descriptor->FindFieldByName("secrets");
      secrets != nullptr && secrets->is_map()) {
    for (int i = 0; i < reflection->FieldSize(*copy, secrets); ++i) {
      google::protobuf::Message* entry = reflection->MutableRepeatedMessage(copy.get(), secrets, i);
      entry->GetReflection()->SetString(entry, entry->GetDescriptor()->map_value(), "(redacted)");
    }
  }
  if (auto* publish = dynamic_cast<csi::v1::NodePublishVolumeRequest*>(copy.get())) {
    auto tokens = publish->mutable_volume_context()->find(kServiceAccountTokensKey);
    if (tokens != publish->mutable_volume_context()->end()) tokens->second = "(redacted)";
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(*copy, &text, options);
  return text;
}

}  // namespace ndr

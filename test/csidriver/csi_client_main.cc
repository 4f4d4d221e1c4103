// csi-client: asks a CSI driver who it is and prints each answer as JSON.
//
//   csi-client --endpoint=unix:///csi/csi.sock [--timeout=5s]
//
// Calls Identity.GetPluginInfo, Identity.GetPluginCapabilities, Identity.Probe,
// Node.NodeGetInfo and Node.NodeGetCapabilities, in that order; exits 1 at the first failure.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/endpoint.h"
#include "gflags/gflags.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"

DEFINE_string(endpoint, "unix:///csi/csi.sock", "CSI endpoint: a socket path or a unix:// URL.");
DEFINE_string(timeout, "5s", "Deadline of each call, e.g. 1s or 500ms.");

namespace {

template <typename Response>
bool Print(const std::string& call, const grpc::Status& status, const Response& response) {
  if (!status.ok()) {
    std::cerr << "csi-client: " << call << " on " << FLAGS_endpoint << " failed: "
              << status.error_code() << " " << status.error_message() << std::endl;
    return false;
  }
  google::protobuf::util::JsonPrintOptions json;
  json.always_print_primitive_fields = true;
  json.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(response, &text, json);
  std::cout << call << " " << text << std::endl;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("csi-client --endpoint=unix:///csi/csi.sock [--timeout=5s]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::Duration timeout;
  if (!absl::ParseDuration(FLAGS_timeout, &timeout) || timeout <= absl::ZeroDuration()) {
    std::cerr << "csi-client: --timeout: \"" << FLAGS_timeout
              << "\" is not a positive duration such as 5s or 500ms" << std::endl;
    return 1;
  }
  absl::StatusOr<std::string> path = ndr::UnixSocketPath(FLAGS_endpoint, "--endpoint");
  if (!path.ok()) {
    std::cerr << "csi-client: " << path.status().message() << std::endl;
    return 1;
  }
  auto channel = grpc::CreateChannel(ndr::GrpcUnixTarget(*path), grpc::InsecureChannelCredentials());
  auto identity = csi::v1::Identity::NewStub(channel);
  auto node = csi::v1::Node::NewStub(channel);
  auto deadline = [&] { return absl::ToChronoTime(absl::Now() + timeout); };

  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    csi::v1::GetPluginInfoResponse response;
    if (!Print("GetPluginInfo",
               identity->GetPluginInfo(&context, csi::v1::GetPluginInfoRequest(), &response),
               response)) {
      return 1;
    }
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    csi::v1::GetPluginCapabilitiesResponse response;
    if (!Print("GetPluginCapabilities",
               identity->GetPluginCapabilities(&context, {}, &response), response)) {
      return 1;
    }
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    csi::v1::ProbeResponse response;
    if (!Print("Probe", identity->Probe(&context, {}, &response), response)) return 1;
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    csi::v1::NodeGetInfoResponse response;
    if (!Print("NodeGetInfo", node->NodeGetInfo(&context, {}, &response), response)) return 1;
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    csi::v1::NodeGetCapabilitiesResponse response;
    if (!Print("NodeGetCapabilities", node->NodeGetCapabilities(&context, {}, &response),
               response)) {
      return 1;
    }
  }
  return 0;
}

#include "registrar/health.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "api/endpoint.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "registrar/services.h"

namespace ndr::registrar {

HttpResponse CheckHealth(const std::string& socket_path, const std::string& expected_name,
                         absl::Duration timeout) {
  struct stat st;
  if (socket_path.empty()) {
    return {404, "registration socket does not exist yet: waiting for the CSI driver\n"};
  }
  if (lstat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return {404, absl::StrCat("registration socket ", socket_path, " does not exist\n")};
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = pluginregistration::Registration::NewStub(grpc::CreateCustomChannel(
      GrpcUnixTarget(socket_path), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  context.AddMetadata(kHealthCheckMetadata, "1");
  pluginregistration::PluginInfo info;
  grpc::Status status = stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
  if (!status.ok()) {
    return {500, absl::StrCat("GetInfo on ", socket_path, " failed: ", status.error_message(),
                              "\n")};
  }
  if (info.name() != expected_name) {
    return {500, absl::StrCat("GetInfo on ", socket_path, " returned driver name \"", info.name(),
                              "\", expected \"", expected_name, "\"\n")};
  }
  return {200, "ok"};
}

}  // namespace ndr::registrar

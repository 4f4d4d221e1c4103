#include "kubeletclient/cli/jwks.h"

#include <iostream>
#include <memory>

#include "absl/status/statusor.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/token/jwt.h"

namespace ndr::kubelet::cli {
namespace {

int Run() {
  if (FLAGS_service_account_key_file.empty()) {
    return Fail("jwks: --service-account-key-file is required");
  }
  absl::StatusOr<std::unique_ptr<token::SigningKey>> key =
      token::SigningKey::Load(FLAGS_service_account_key_file);
  if (!key.ok()) return Fail(key.status().message());
  std::cout << (*key)->Jwks().dump(2) << "\n";
  return 0;
}

}  // namespace

Command Jwks() {
  return {"jwks", "kubeletclient jwks --service-account-key-file=PEM",
          {"service_account_key_file"}, &Run};
}

}  // namespace ndr::kubelet::cli

#include "kubeletclient/util/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace ndr::kubelet {

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace ndr::kubelet

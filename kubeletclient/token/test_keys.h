// Fresh keys for tests, made by OpenSSL: a test never ships a key, and never reuses one.
#ifndef NDR_KUBELETCLIENT_TOKEN_TEST_KEYS_H_
#define NDR_KUBELETCLIENT_TOKEN_TEST_KEYS_H_

#include <string>

namespace ndr::token {

// A new key of `type` ("RSA" with `bits`, "EC" on `curve` such as "P-256", or "ED25519") as
// PEM: PKCS#8 "PRIVATE KEY", the traditional form ("RSA PRIVATE KEY", "EC PRIVATE KEY") with
// `pkcs8` false, or only its "PUBLIC KEY" with `public_only`.
std::string NewKeyPem(const char* type, const char* curve = nullptr, unsigned bits = 2048,
                      bool pkcs8 = true, bool public_only = false);

}  // namespace ndr::token

#endif  // NDR_KUBELETCLIENT_TOKEN_TEST_KEYS_H_

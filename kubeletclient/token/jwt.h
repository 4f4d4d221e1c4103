// JSON Web Tokens as the Kubernetes API server signs service-account tokens
// (pkg/serviceaccount/jwt.go JWTTokenGenerator, on go-jose): compact JWS, RS256 for an RSA key,
// ES256, ES384 or ES512 for an EC key on P-256, P-384 or P-521, the header's `kid` the key's ID
// as the API server computes it (keyIDFromPublicKey: unpadded base64url of the SHA-256 of the
// public key's DER SubjectPublicKeyInfo), and the public keys as the API server's JWKS document
// (/openid/v1/jwks, pkg/serviceaccount/openidmetadata.go). All cryptography is OpenSSL's; nothing
// here computes a signature itself.
//
// Verification is for the other side (the sample driver, tests): a token is checked against a
// JWKS document, taken as hostile input.
//
// Key material is never printed, logged or put in an error message. Thread-compatible.
#ifndef NDR_KUBELETCLIENT_TOKEN_JWT_H_
#define NDR_KUBELETCLIENT_TOKEN_JWT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace ndr::token {

// A private key that signs tokens.
class SigningKey {
 public:
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  // The first private key in the PEM file `path` (PKCS#8 "PRIVATE KEY", "RSA PRIVATE KEY" or
  // "EC PRIVATE KEY", unencrypted), as --service-account-signing-key-file takes it. A file that
  // is missing, holds no private key, or a key of another type or curve is an error naming the
  // file and what is wrong, never its contents.
  static absl::StatusOr<std::unique_ptr<SigningKey>> Load(const std::string& path);
  // The same from PEM text; `source` names it in errors.
  static absl::StatusOr<std::unique_ptr<SigningKey>> FromPem(const std::string& pem,
                                                            const std::string& source);

  const std::string& algorithm() const { return algorithm_; }  // RS256, ES256, ES384, ES512
  const std::string& key_id() const { return key_id_; }

  // header.payload.signature, with header {"alg", "kid"} and `claims` as the payload.
  absl::StatusOr<std::string> Sign(const nlohmann::json& claims) const;

  // {"keys": [the public key as a JWK: use, kty, kid, alg, and n/e or crv/x/y]}, in the API
  // server's member order.
  nlohmann::ordered_json Jwks() const;

 private:
  struct Key;
  explicit SigningKey(std::unique_ptr<Key> key);

  std::unique_ptr<Key> key_;
  std::string algorithm_;
  std::string key_id_;
};

// What a token must satisfy to be accepted.
struct Expectations {
  std::string audience;  // must be among `aud`, if set
  std::string issuer;    // must be `iss`, if set
  absl::Time now = absl::Now();
};

// The claims of `token` if its signature verifies with the key of `jwks` (a JWKS document) that
// its header's `kid` names, its `alg` is that key's, and it is valid at `expect.now` (nbf <= now <
// exp), for `expect`'s audience and issuer; else an error saying which check failed.
absl::StatusOr<nlohmann::json> Verify(const std::string& token, const nlohmann::json& jwks,
                                      const Expectations& expect);

// Unpadded base64url (RFC 7515's encoding of every JWS part).
std::string Base64Url(const std::string& bytes);

}  // namespace ndr::token

#endif  // NDR_KUBELETCLIENT_TOKEN_JWT_H_

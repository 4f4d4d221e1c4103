#include "kubeletclient/token/jwt.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletclient/token/test_keys.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::token {
namespace {

using json = nlohmann::json;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

json Claims(int64_t now) {
  return {{"iss", "https://kubernetes.default.svc"},
          {"sub", "system:serviceaccount:shop:web"},
          {"aud", {"vault"}},
          {"iat", now},
          {"nbf", now},
          {"exp", now + 3600}};
}

struct KeyCase {
  const char* type;
  const char* curve;
  const char* algorithm;
  size_t signature_bytes;  // 0: the RSA modulus's size
};

class SignAndVerifyTest : public ::testing::TestWithParam<KeyCase> {};

TEST_P(SignAndVerifyTest, RoundTripAndEveryCheck) {
  const KeyCase& c = GetParam();
  absl::StatusOr<std::unique_ptr<SigningKey>> key =
      SigningKey::FromPem(NewKeyPem(c.type, c.curve), "test.pem");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ((*key)->algorithm(), c.algorithm);
  const json jwks = json::parse((*key)->Jwks().dump());
  const absl::Time now = absl::FromUnixSeconds(1700000000);
  absl::StatusOr<std::string> token = (*key)->Sign(Claims(1700000000));
  ASSERT_TRUE(token.ok()) << token.status();

  std::vector<std::string> parts = absl::StrSplit(*token, '.');
  ASSERT_EQ(parts.size(), 3u);
  std::string header, signature;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[0], &header));
  EXPECT_EQ(json::parse(header), json({{"alg", c.algorithm}, {"kid", (*key)->key_id()}}));
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[2], &signature));
  if (c.signature_bytes != 0) {
    EXPECT_EQ(signature.size(), c.signature_bytes);  // ECDSA: R || S; RSA: the modulus's size
  }
  EXPECT_EQ(parts[2].find('='), std::string::npos);

  Expectations expect{"vault", "https://kubernetes.default.svc", now};
  absl::StatusOr<json> claims = Verify(*token, jwks, expect);
  ASSERT_TRUE(claims.ok()) << claims.status();
  EXPECT_EQ(*claims, Claims(1700000000));

  // Each check fails on its own.
  Expectations other_audience = expect;
  other_audience.audience = "other";
  EXPECT_THAT(Verify(*token, jwks, other_audience).status().message(), HasSubstr("audience"));
  Expectations other_issuer = expect;
  other_issuer.issuer = "https://other";
  EXPECT_THAT(Verify(*token, jwks, other_issuer).status().message(), HasSubstr("issuer"));
  Expectations later = expect;
  later.now = now + absl::Hours(1);
  EXPECT_THAT(Verify(*token, jwks, later).status().message(), HasSubstr("expired"));
  Expectations earlier = expect;
  earlier.now = now - absl::Seconds(1);
  EXPECT_THAT(Verify(*token, jwks, earlier).status().message(), HasSubstr("not valid yet"));

  // A payload changed after signing.
  json forged = Claims(1700000000);
  forged["sub"] = "system:serviceaccount:kube-system:admin";
  const std::string tampered = parts[0] + "." + Base64Url(forged.dump()) + "." + parts[2];
  EXPECT_EQ(Verify(tampered, jwks, expect).status().code(), absl::StatusCode::kPermissionDenied);
  // Another key's JWKS, with this key's kid: the signature does not verify.
  absl::StatusOr<std::unique_ptr<SigningKey>> other =
      SigningKey::FromPem(NewKeyPem(c.type, c.curve), "other.pem");
  ASSERT_TRUE(other.ok());
  json other_jwks = json::parse((*other)->Jwks().dump());
  other_jwks["keys"][0]["kid"] = (*key)->key_id();
  EXPECT_EQ(Verify(*token, other_jwks, expect).status().code(),
            absl::StatusCode::kPermissionDenied);
  // "alg": "none" and a header naming another algorithm are refused before anything else.
  const std::string none = Base64Url(json({{"alg", "none"}, {"kid", (*key)->key_id()}}).dump()) +
                           "." + parts[1] + ".";
  EXPECT_FALSE(Verify(none, jwks, expect).ok());
  const std::string hs = Base64Url(json({{"alg", "HS256"}, {"kid", (*key)->key_id()}}).dump()) +
                         "." + parts[1] + "." + parts[2];
  EXPECT_THAT(Verify(hs, jwks, expect).status().message(), HasSubstr("is not its key's"));
  // An unknown kid.
  EXPECT_EQ(Verify(*token, json::parse((*other)->Jwks().dump()), expect).status().code(),
            absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Keys, SignAndVerifyTest,
                         ::testing::Values(KeyCase{"RSA", nullptr, "RS256", 256},
                                           KeyCase{"EC", "P-256", "ES256", 64},
                                           KeyCase{"EC", "P-384", "ES384", 96},
                                           KeyCase{"EC", "P-521", "ES512", 132}),
                         [](const ::testing::TestParamInfo<KeyCase>& info) {
                           return std::string(info.param.algorithm);
                         });

// keyIDFromPublicKey (pkg/serviceaccount/jwt.go): unpadded base64url of the SHA-256 of the DER
// SubjectPublicKeyInfo, computed here from the PEM public key without the library's code.
TEST(SigningKeyTest, KeyIdIsTheApiServersAndJwksHasTheRsaNumbers) {
  const std::string pem = NewKeyPem("RSA", nullptr, 2048, /*pkcs8=*/false);
  absl::StatusOr<std::unique_ptr<SigningKey>> key = SigningKey::FromPem(pem, "rsa.pem");
  ASSERT_TRUE(key.ok()) << key.status();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(pkey, &der);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, length, digest);
  OPENSSL_free(der);
  EVP_PKEY_free(pkey);
  std::string expected;
  absl::WebSafeBase64Escape(std::string(reinterpret_cast<char*>(digest), sizeof(digest)),
                            &expected);
  EXPECT_EQ((*key)->key_id(), expected);
  EXPECT_EQ(expected.size(), 43u);
  const nlohmann::ordered_json jwk = (*key)->Jwks()["keys"][0];
  // The API server's member order.
  std::vector<std::string> members;
  for (const auto& item : jwk.items()) members.push_back(item.key());
  EXPECT_EQ(members, (std::vector<std::string>{"use", "kty", "kid", "alg", "n", "e"}));
  EXPECT_EQ(jwk["e"], "AQAB");
  std::string n;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(jwk["n"].get<std::string>(), &n));
  EXPECT_EQ(n.size(), 256u);
}

TEST(SigningKeyTest, BadKeyFilesSayWhatIsWrongAndNeverShowTheKey) {
  TempDir dir("jwtkeys");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.Join(name)) << text;
    return dir.Join(name);
  };
  struct Bad {
    std::string path;
    const char* says;
  };
  const std::string private_pem = NewKeyPem("EC", "P-256");
  const Bad bad[] = {
      {dir.Join("missing.pem"), "no such file"},
      {write("garbage.pem", "not a key at all\n"), "holds no PEM private key"},
      {write("public.pem", NewKeyPem("RSA", nullptr, 2048, true, /*public_only=*/true)),
       "holds a public key, not a private key"},
      {write("k256.pem", NewKeyPem("EC", "secp256k1")), "is an EC key on curve secp256k1"},
      {write("ed25519.pem", NewKeyPem("ED25519")), "is neither an RSA nor an EC key"},
      {write("truncated.pem", private_pem.substr(0, private_pem.size() / 2)),
       "holds no PEM private key"},
  };
  for (const Bad& b : bad) {
    absl::StatusOr<std::unique_ptr<SigningKey>> key = SigningKey::Load(b.path);
    ASSERT_FALSE(key.ok()) << b.path;
    EXPECT_THAT(key.status().message(), HasSubstr(b.path));
    EXPECT_THAT(key.status().message(), HasSubstr(b.says));
    EXPECT_THAT(key.status().message(), ::testing::Not(HasSubstr("MII")));  // no key bytes
  }
}

TEST(VerifyTest, HostileTokensAndJwksAreErrorsNotCrashes) {
  absl::StatusOr<std::unique_ptr<SigningKey>> key =
      SigningKey::FromPem(NewKeyPem("EC", "P-256"), "k.pem");
  ASSERT_TRUE(key.ok());
  const json jwks = json::parse((*key)->Jwks().dump());
  const std::string token = *(*key)->Sign(Claims(1700000000));
  Expectations expect;
  expect.now = absl::FromUnixSeconds(1700000001);
  for (const std::string& t : {std::string(""), std::string("a.b"), std::string("..."),
                               std::string("!!.??.**"), token + "x", "e30." + token}) {
    EXPECT_FALSE(Verify(t, jwks, expect).ok()) << t;
  }
  for (const json& j : {json(nullptr), json::array(), json({{"keys", 5}}),
                        json({{"keys", {{{"kid", (*key)->key_id()}, {"kty", "EC"}}}}}),
                        json({{"keys", {{{"kid", (*key)->key_id()}, {"kty", "oct"}}}}})}) {
    EXPECT_FALSE(Verify(token, j, expect).ok()) << j.dump();
  }
}

}  // namespace
}  // namespace ndr::token

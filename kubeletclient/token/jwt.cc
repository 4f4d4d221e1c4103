#include "kubeletclient/token/jwt.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubeletclient/util/files.h"

namespace ndr::token {
namespace {

using json = nlohmann::json;

// A PEM key file is a few kilobytes; anything far bigger is not one.
constexpr size_t kMaxKeyFileBytes = 1024 * 1024;

// What each algorithm is made of: the key type, the digest, and for ECDSA the curve (as OpenSSL
// and as JWK name it) and the size of each of the signature's two numbers.
struct Algorithm {
  const char* name;
  int key_type;
  const EVP_MD* (*digest)();
  const char* openssl_curve;  // EC only
  const char* jwk_curve;      // EC only
  size_t coordinate_bytes;    // EC only
};

const Algorithm kAlgorithms[] = {
    {"RS256", EVP_PKEY_RSA, EVP_sha256, nullptr, nullptr, 0},
    {"ES256", EVP_PKEY_EC, EVP_sha256, "prime256v1", "P-256", 32},
    {"ES384", EVP_PKEY_EC, EVP_sha384, "secp384r1", "P-384", 48},
    {"ES512", EVP_PKEY_EC, EVP_sha512, "secp521r1", "P-521", 66},
};

// The algorithm the API server signs with for `key` (jwt.go signerFromECDSAPrivateKey and
// signerFromRSAPrivateKey), or an error for keys it does not sign with.
absl::StatusOr<const Algorithm*> AlgorithmOf(EVP_PKEY* key) {
  const int type = EVP_PKEY_get_base_id(key);
  if (type == EVP_PKEY_RSA) return &kAlgorithms[0];
  if (type != EVP_PKEY_EC) {
    return absl::InvalidArgumentError(
        "is neither an RSA nor an EC key; the API server signs service-account tokens with RSA "
        "(RS256) or EC (ES256, ES384, ES512) keys only");
  }
  char curve[80] = {};
  size_t length = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof(curve),
                                     &length) != 1) {
    return absl::InvalidArgumentError("is an EC key whose curve OpenSSL cannot name");
  }
  for (const Algorithm& a : kAlgorithms) {
    if (a.openssl_curve != nullptr && std::string(curve) == a.openssl_curve) return &a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("is an EC key on curve ", curve,
                   "; the API server signs with keys on P-256, P-384 or P-521 only"));
}

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

absl::StatusOr<std::string> FromBase64Url(absl::string_view part, absl::string_view what) {
  std::string bytes;
  if (part.find_first_of("+/=") != absl::string_view::npos ||
      !absl::WebSafeBase64Unescape(part, &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not unpadded base64url"));
  }
  return bytes;
}

// A number as big-endian bytes, left-padded to `width` if given.
std::string BigEndian(const BIGNUM* n, size_t width = 0) {
  std::string out(width != 0 ? width : static_cast<size_t>(BN_num_bytes(n)), '\0');
  BN_bn2binpad(n, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
  return out;
}

std::string KeyId(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(key, &der);
  if (length <= 0) return "";
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(length), digest);
  OPENSSL_free(der);
  return Base64Url(std::string(reinterpret_cast<char*>(digest), sizeof(digest)));
}

// A JWS ECDSA signature (R || S, each `width` bytes) as OpenSSL's DER form, and back.
absl::StatusOr<std::string> JoseToDer(const std::string& signature, size_t width) {
  if (signature.size() != 2 * width) {
    return absl::InvalidArgumentError("signature has the wrong length for its algorithm");
  }
  ECDSA_SIG* sig = ECDSA_SIG_new();
  const auto* bytes = reinterpret_cast<const unsigned char*>(signature.data());
  BIGNUM* r = BN_bin2bn(bytes, static_cast<int>(width), nullptr);
  BIGNUM* s = BN_bin2bn(bytes + width, static_cast<int>(width), nullptr);
  ECDSA_SIG_set0(sig, r, s);
  unsigned char* der = nullptr;
  const int length = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (length <= 0) return absl::InternalError(OpenSslError());
  std::string out(reinterpret_cast<char*>(der), static_cast<size_t>(length));
  OPENSSL_free(der);
  return out;
}

absl::StatusOr<std::string> DerToJose(const std::string& der, size_t width) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) return absl::InternalError(OpenSslError());
  const BIGNUM *r = nullptr, *s = nullptr;
  ECDSA_SIG_get0(sig, &r, &s);
  std::string out = BigEndian(r, width) + BigEndian(s, width);
  ECDSA_SIG_free(sig);
  return out;
}

std::string JsonString(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string()
             ? object[key].get<std::string>()
             : "";
}

// A public key from a JWK (hostile input), with its algorithm.
absl::StatusOr<EVP_PKEY*> PublicKeyFromJwk(const json& jwk, const Algorithm** algorithm) {
  const std::string kty = JsonString(jwk, "kty");
  OSSL_PARAM_BLD* build = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> numbers;
  absl::Cleanup free_build = [&] {
    OSSL_PARAM_BLD_free(build);
    for (BIGNUM* n : numbers) BN_free(n);
  };
  std::string point;  // EC: the uncompressed point, alive until the key is built
  const char* openssl_type = nullptr;
  if (kty == "RSA") {
    *algorithm = &kAlgorithms[0];
    openssl_type = "RSA";
    for (const auto& [member, param] :
         {std::pair{"n", OSSL_PKEY_PARAM_RSA_N}, std::pair{"e", OSSL_PKEY_PARAM_RSA_E}}) {
      absl::StatusOr<std::string> bytes = FromBase64Url(JsonString(jwk, member), "JWK member");
      if (!bytes.ok() || bytes->empty()) {
        return absl::InvalidArgumentError(absl::StrCat("JWK's \"", member, "\" is missing or bad"));
      }
      numbers.push_back(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes->data()),
                                  static_cast<int>(bytes->size()), nullptr));
      OSSL_PARAM_BLD_push_BN(build, param, numbers.back());
    }
  } else if (kty == "EC") {
    const std::string crv = JsonString(jwk, "crv");
    *algorithm = nullptr;
    for (const Algorithm& a : kAlgorithms) {
      if (a.jwk_curve != nullptr && crv == a.jwk_curve) *algorithm = &a;
    }
    if (*algorithm == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("JWK's curve \"", crv, "\" is not supported"));
    }
    openssl_type = "EC";
    point = "\x04";
    for (const char* member : {"x", "y"}) {
      absl::StatusOr<std::string> bytes = FromBase64Url(JsonString(jwk, member), "JWK member");
      if (!bytes.ok() || bytes->size() != (*algorithm)->coordinate_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("JWK's \"", member, "\" is missing or bad"));
      }
      point += *bytes;
    }
    OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME,
                                    (*algorithm)->openssl_curve, 0);
    OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
  } else {
    return absl::InvalidArgumentError(absl::StrCat("JWK's kty \"", kty, "\" is not supported"));
  }
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(build);
  EVP_PKEY_CTX* context = EVP_PKEY_CTX_new_from_name(nullptr, openssl_type, nullptr);
  EVP_PKEY* key = nullptr;
  const bool built = params != nullptr && context != nullptr &&
                     EVP_PKEY_fromdata_init(context) == 1 &&
                     EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) == 1;
  EVP_PKEY_CTX_free(context);
  OSSL_PARAM_free(params);
  if (!built) {
    return absl::InvalidArgumentError(absl::StrCat("JWK is not a valid key: ", OpenSslError()));
  }
  return key;
}

}  // namespace

std::string Base64Url(const std::string& bytes) {
  std::string out;
  absl::WebSafeBase64Escape(bytes, &out);  // unpadded
  return out;
}

struct SigningKey::Key {
  ~Key() { EVP_PKEY_free(pkey); }
  EVP_PKEY* pkey = nullptr;
  const Algorithm* algorithm = nullptr;
};

SigningKey::SigningKey(std::unique_ptr<Key> key) : key_(std::move(key)) {
  algorithm_ = key_->algorithm->name;
  key_id_ = KeyId(key_->pkey);
}

SigningKey::~SigningKey() = default;

absl::StatusOr<std::unique_ptr<SigningKey>> SigningKey::Load(const std::string& path) {
  std::string pem;
  if (absl::Status s = kubelet::ReadFileUpTo(path, kMaxKeyFileBytes, &pem); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("service-account key file ", s.message()));
  }
  return FromPem(pem, path);
}

absl::StatusOr<std::unique_ptr<SigningKey>> SigningKey::FromPem(const std::string& pem,
                                                                const std::string& source) {
  auto error = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("service-account key file ", source, ": ", problem));
  };
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  // No passphrase callback answers: an encrypted key fails here instead of prompting.
  EVP_PKEY* pkey =
      PEM_read_bio_PrivateKey(bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (pkey == nullptr) {
    if (pem.find("PUBLIC KEY-----") != std::string::npos) {
      return error(
          "holds a public key, not a private key: tokens are signed with the private key (the "
          "API server's --service-account-signing-key-file)");
    }
    if (pem.find("ENCRYPTED") != std::string::npos) {
      return error("holds an encrypted private key; give an unencrypted one");
    }
    return error(
        "holds no PEM private key (expected -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or "
        "EC PRIVATE KEY)");
  }
  auto key = std::make_unique<Key>();
  key->pkey = pkey;
  absl::StatusOr<const Algorithm*> algorithm = AlgorithmOf(pkey);
  if (!algorithm.ok()) return error(algorithm.status().message());
  key->algorithm = *algorithm;
  return std::unique_ptr<SigningKey>(new SigningKey(std::move(key)));
}

absl::StatusOr<std::string> SigningKey::Sign(const json& claims) const {
  const json header = {{"alg", algorithm_}, {"kid", key_id_}};
  const std::string input = Base64Url(header.dump()) + "." + Base64Url(claims.dump());
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  absl::Cleanup free_context = [context] { EVP_MD_CTX_free(context); };
  size_t length = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(input.data());
  if (EVP_DigestSignInit(context, nullptr, key_->algorithm->digest(), nullptr, key_->pkey) != 1 ||
      EVP_DigestSign(context, nullptr, &length, data, input.size()) != 1) {
    return absl::InternalError(absl::StrCat("signing a token: ", OpenSslError()));
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(context, reinterpret_cast<unsigned char*>(signature.data()), &length, data,
                     input.size()) != 1) {
    return absl::InternalError(absl::StrCat("signing a token: ", OpenSslError()));
  }
  signature.resize(length);
  if (key_->algorithm->key_type == EVP_PKEY_EC) {
    absl::StatusOr<std::string> jose = DerToJose(signature, key_->algorithm->coordinate_bytes);
    if (!jose.ok()) return jose.status();
    signature = *jose;
  }
  return input + "." + Base64Url(signature);
}

nlohmann::ordered_json SigningKey::Jwks() const {
  // go-jose's JSONWebKey member order: use, kty, kid, crv, alg, then the key's numbers.
  nlohmann::ordered_json jwk = {{"use", "sig"}};
  auto number = [this](const char* param, size_t width = 0) {
    BIGNUM* n = nullptr;
    EVP_PKEY_get_bn_param(key_->pkey, param, &n);
    std::string bytes = n == nullptr ? "" : BigEndian(n, width);
    BN_free(n);
    return Base64Url(bytes);
  };
  if (key_->algorithm->key_type == EVP_PKEY_RSA) {
    jwk["kty"] = "RSA";
    jwk["kid"] = key_id_;
    jwk["alg"] = algorithm_;
    jwk["n"] = number(OSSL_PKEY_PARAM_RSA_N);
    jwk["e"] = number(OSSL_PKEY_PARAM_RSA_E);
  } else {
    jwk["kty"] = "EC";
    jwk["kid"] = key_id_;
    jwk["crv"] = key_->algorithm->jwk_curve;
    jwk["alg"] = algorithm_;
    jwk["x"] = number(OSSL_PKEY_PARAM_EC_PUB_X, key_->algorithm->coordinate_bytes);
    jwk["y"] = number(OSSL_PKEY_PARAM_EC_PUB_Y, key_->algorithm->coordinate_bytes);
  }
  nlohmann::ordered_json jwks;
  jwks["keys"] = nlohmann::ordered_json::array({jwk});
  return jwks;
}

absl::StatusOr<json> Verify(const std::string& token, const json& jwks,
                            const Expectations& expect) {
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3) return absl::InvalidArgumentError("token is not a compact JWS");
  absl::StatusOr<std::string> header_text = FromBase64Url(parts[0], "token header");
  if (!header_text.ok()) return header_text.status();
  const json header = json::parse(*header_text, nullptr, /*allow_exceptions=*/false);
  const std::string alg = JsonString(header, "alg"), kid = JsonString(header, "kid");
  if (alg.empty()) return absl::InvalidArgumentError("token header has no \"alg\"");
  // Find the key the header names.
  const json* jwk = nullptr;
  if (jwks.is_object() && jwks.contains("keys") && jwks["keys"].is_array()) {
    for (const json& candidate : jwks["keys"]) {
      if (candidate.is_object() && JsonString(candidate, "kid") == kid) jwk = &candidate;
    }
  }
  if (jwk == nullptr) {
    return absl::NotFoundError(absl::StrCat("no key with kid \"", kid, "\" in the JWKS"));
  }
  const Algorithm* algorithm = nullptr;
  absl::StatusOr<EVP_PKEY*> key = PublicKeyFromJwk(*jwk, &algorithm);
  if (!key.ok()) return key.status();
  absl::Cleanup free_key = [&key] { EVP_PKEY_free(*key); };
  const std::string jwk_alg = JsonString(*jwk, "alg");
  if (alg != algorithm->name || (!jwk_alg.empty() && jwk_alg != alg)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token's alg \"", alg, "\" is not its key's (", algorithm->name, ")"));
  }
  absl::StatusOr<std::string> signature = FromBase64Url(parts[2], "token signature");
  if (!signature.ok()) return signature.status();
  if (algorithm->key_type == EVP_PKEY_EC) {
    absl::StatusOr<std::string> der = JoseToDer(*signature, algorithm->coordinate_bytes);
    if (!der.ok()) return der.status();
    signature = *der;
  }
  const std::string input = absl::StrCat(parts[0], ".", parts[1]);
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  const bool verified =
      EVP_DigestVerifyInit(context, nullptr, algorithm->digest(), nullptr, *key) == 1 &&
      EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature->data()),
                       signature->size(), reinterpret_cast<const unsigned char*>(input.data()),
                       input.size()) == 1;
  EVP_MD_CTX_free(context);
  ERR_clear_error();
  if (!verified) return absl::PermissionDeniedError("token signature does not verify");
  absl::StatusOr<std::string> payload = FromBase64Url(parts[1], "token payload");
  if (!payload.ok()) return payload.status();
  json claims = json::parse(*payload, nullptr, /*allow_exceptions=*/false);
  if (!claims.is_object()) return absl::InvalidArgumentError("token payload is not a JSON object");
  const int64_t now = absl::ToUnixSeconds(expect.now);
  if (!claims.contains("exp") || !claims["exp"].is_number_integer()) {
    return absl::InvalidArgumentError("token has no \"exp\"");
  }
  if (now >= claims["exp"].get<int64_t>()) {
    return absl::PermissionDeniedError("token has expired");
  }
  if (claims.contains("nbf") &&
      (!claims["nbf"].is_number_integer() || now < claims["nbf"].get<int64_t>())) {
    return absl::PermissionDeniedError("token is not valid yet (nbf)");
  }
  if (!expect.issuer.empty() && JsonString(claims, "iss") != expect.issuer) {
    return absl::PermissionDeniedError(
        absl::StrCat("token's issuer is \"", JsonString(claims, "iss"), "\", not \"",
                     expect.issuer, "\""));
  }
  if (!expect.audience.empty()) {
    bool found = JsonString(claims, "aud") == expect.audience;
    if (claims.contains("aud") && claims["aud"].is_array()) {
      for (const json& aud : claims["aud"]) found = found || aud == expect.audience;
    }
    if (!found) {
      return absl::PermissionDeniedError(
          absl::StrCat("token is not for audience \"", expect.audience, "\""));
    }
  }
  return claims;
}

}  // namespace ndr::token

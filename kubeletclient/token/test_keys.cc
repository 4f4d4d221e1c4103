#include "kubeletclient/token/test_keys.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <iostream>

namespace ndr::token {

std::string NewKeyPem(const char* type, const char* curve, unsigned bits, bool pkcs8,
                      bool public_only) {
  EVP_PKEY* key = curve != nullptr ? EVP_PKEY_Q_keygen(nullptr, nullptr, type, curve)
                  : std::string(type) == "RSA"
                      ? EVP_PKEY_Q_keygen(nullptr, nullptr, type, size_t{bits})
                      : EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  if (key == nullptr) {
    std::cerr << "NewKeyPem: OpenSSL could not make a " << type << " key\n";
    abort();
  }
  BIO* bio = BIO_new(BIO_s_mem());
  if (public_only) {
    PEM_write_bio_PUBKEY(bio, key);
  } else if (pkcs8) {
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PrivateKey_traditional(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  }
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(length));
  BIO_free(bio);
  EVP_PKEY_free(key);
  return pem;
}

}  // namespace ndr::token

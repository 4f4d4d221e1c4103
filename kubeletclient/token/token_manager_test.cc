#include "kubeletclient/token/token_manager.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletclient/token/test_keys.h"

namespace ndr::token {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

std::unique_ptr<SigningKey> NewKey() { return *SigningKey::FromPem(NewKeyPem("EC", "P-256"), "test"); }

class TokenManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    objects_.service_accounts[{"shop", "web"}] = {"shop", "web", "sa-uid-1"};
  }

  BoundTokenRequest Request(std::vector<std::string> audiences,
                            std::optional<int64_t> seconds = std::nullopt) {
    return {"shop", "web", std::move(audiences), seconds, "web-0", "pod-uid-1"};
  }

  std::unique_ptr<SigningKey> key_ = NewKey();
  kubelet::ObjectSet objects_;
  TokenIssuer issuer_{key_.get(), "https://kubernetes.default.svc.cluster.local", &objects_};
  absl::Time now_ = absl::FromUnixSeconds(1700000000);
  TokenManager manager_{&issuer_, [this] { return now_; }};
};

// claims.go Claims and token.go Create: a bound token for the pod, the API server's default
// expiration, the issuer as the audience when none is asked for.
TEST_F(TokenManagerTest, MintsBoundTokensAsTheApiServer) {
  absl::StatusOr<TokenManager::Result> got = manager_.Get(Request({}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->reused);
  EXPECT_EQ(got->token.expiration_seconds, 3600);
  EXPECT_EQ(got->token.expiration, now_ + absl::Hours(1));
  const json jwks = json::parse(key_->Jwks().dump());
  absl::StatusOr<json> claims =
      Verify(got->token.token, jwks,
             {"https://kubernetes.default.svc.cluster.local",
              "https://kubernetes.default.svc.cluster.local", now_});
  ASSERT_TRUE(claims.ok()) << claims.status();
  EXPECT_EQ(*claims,
            json::parse(R"({
    "aud": ["https://kubernetes.default.svc.cluster.local"],
    "exp": 1700003600, "iat": 1700000000, "nbf": 1700000000,
    "iss": "https://kubernetes.default.svc.cluster.local",
    "sub": "system:serviceaccount:shop:web",
    "kubernetes.io": {"namespace": "shop",
                      "pod": {"name": "web-0", "uid": "pod-uid-1"},
                      "serviceaccount": {"name": "web", "uid": "sa-uid-1"}}})"));
}

// token_manager.go requiresRefresh: reused until 80% of the lifetime has passed.
TEST_F(TokenManagerTest, ReusedUntilEightyPercentOfItsLifetime) {
  const std::string first = manager_.Get(Request({"vault"}, 3600))->token.token;
  now_ += absl::Seconds(2880);  // exactly 80%
  absl::StatusOr<TokenManager::Result> same = manager_.Get(Request({"vault"}, 3600));
  EXPECT_TRUE(same->reused);
  EXPECT_EQ(same->token.token, first);
  // Another audience is another token.
  EXPECT_FALSE(manager_.Get(Request({"other"}, 3600))->reused);
  now_ += absl::Seconds(1);  // past 80%
  absl::StatusOr<TokenManager::Result> fresh = manager_.Get(Request({"vault"}, 3600));
  EXPECT_FALSE(fresh->reused);
  EXPECT_NE(fresh->token.token, first);
  EXPECT_EQ(fresh->token.expiration, now_ + absl::Hours(1));
}

// ... or 24 hours after it was issued, whatever its lifetime.
TEST_F(TokenManagerTest, RefreshedAfterTwentyFourHours) {
  const int64_t week = 7 * 24 * 3600;
  ASSERT_TRUE(manager_.Get(Request({"vault"}, week)).ok());
  now_ += absl::Hours(24);
  EXPECT_TRUE(manager_.Get(Request({"vault"}, week))->reused);
  now_ += absl::Seconds(1);
  EXPECT_FALSE(manager_.Get(Request({"vault"}, week))->reused);
}

TEST_F(TokenManagerTest, WhatTheApiServerRefusesIsAnError) {
  BoundTokenRequest unknown = Request({"vault"});
  unknown.service_account = "nobody";
  EXPECT_THAT(manager_.Get(unknown).status().message(),
              HasSubstr("failed to fetch token: serviceaccounts \"nobody\" not found"));
  EXPECT_THAT(manager_.Get(Request({"vault"}, 599)).status().message(),
              HasSubstr("spec.expirationSeconds: Invalid value: 599: may not specify a duration "
                        "less than 10 minutes"));
  EXPECT_THAT(manager_.Get(Request({"vault"}, -5)).status().message(),
              HasSubstr("Invalid value: -5"));
  EXPECT_THAT(manager_.Get(Request({"vault"}, (int64_t{1} << 32) + 1)).status().message(),
              HasSubstr("larger than 2^32 seconds"));
}

}  // namespace
}  // namespace ndr::token

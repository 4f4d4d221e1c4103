#include "kubeletclient/token/token_manager.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ndr::token {
namespace {

using json = nlohmann::json;

// pkg/apis/authentication/validation ValidateTokenRequest's bounds.
constexpr int64_t kMinTokenSeconds = 10 * 60;
constexpr int64_t kMaxTokenSeconds = int64_t{1} << 32;
// token_manager.go maxTTL.
constexpr absl::Duration kMaxTtl = absl::Hours(24);

}  // namespace

TokenIssuer::TokenIssuer(const SigningKey* key, std::string issuer,
                         const kubelet::ObjectSet* objects)
    : key_(key), issuer_(std::move(issuer)), objects_(objects) {}

absl::StatusOr<IssuedToken> TokenIssuer::Issue(const BoundTokenRequest& request,
                                               absl::Time now) const {
  // token.go Create: the ServiceAccount first.
  auto account = objects_->service_accounts.find({request.ns, request.service_account});
  if (account == objects_->service_accounts.end()) {
    return absl::NotFoundError(absl::StrCat("serviceaccounts \"", request.service_account,
                                            "\" not found (no ServiceAccount ", request.ns, "/",
                                            request.service_account, " among the --objects)"));
  }
  const int64_t seconds = request.expiration_seconds.value_or(kDefaultExpirationSeconds);
  if (seconds < kMinTokenSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("TokenRequest.authentication.k8s.io \"\" is invalid: "
                     "spec.expirationSeconds: Invalid value: ",
                     seconds, ": may not specify a duration less than 10 minutes"));
  }
  if (seconds > kMaxTokenSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("TokenRequest.authentication.k8s.io \"\" is invalid: "
                     "spec.expirationSeconds: Invalid value: ",
                     seconds, ": may not specify a duration larger than 2^32 seconds"));
  }
  // No audience: the API server's own (--api-audiences, which defaults to the issuer).
  const std::vector<std::string> audiences =
      request.audiences.empty() ? std::vector<std::string>{issuer_} : request.audiences;
  // claims.go Claims, with the issuer jwt.go's generator adds. go-jose v2 writes the audience as
  // a list even when it has one member.
  const int64_t issued_at = absl::ToUnixSeconds(now);
  json claims = {
      {"iss", issuer_},
      {"sub", absl::StrCat("system:serviceaccount:", request.ns, ":", request.service_account)},
      {"aud", audiences},
      {"iat", issued_at},
      {"nbf", issued_at},
      {"exp", issued_at + seconds},
      {"kubernetes.io",
       {{"namespace", request.ns},
        {"pod", {{"name", request.pod_name}, {"uid", request.pod_uid}}},
        {"serviceaccount",
         {{"name", account->second.name}, {"uid", account->second.uid}}}}}};
  absl::StatusOr<std::string> token = key_->Sign(claims);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat("failed to generate token: ", token.status().message()));
  }
  IssuedToken issued;
  issued.token = *std::move(token);
  issued.expiration = absl::FromUnixSeconds(issued_at + seconds);
  issued.expiration_seconds = seconds;
  return issued;
}

TokenManager::TokenManager(const TokenIssuer* issuer, std::function<absl::Time()> now)
    : issuer_(issuer), now_(std::move(now)) {}

bool TokenManager::RequiresRefresh(const IssuedToken& token, absl::Time now) const {
  const absl::Time issued = token.expiration - absl::Seconds(token.expiration_seconds);
  if (now > issued + kMaxTtl) return true;
  // Within 20% of the lifetime of the expiration.
  return now > token.expiration - absl::Seconds(token.expiration_seconds * 20 / 100);
}

absl::StatusOr<TokenManager::Result> TokenManager::Get(const BoundTokenRequest& request) {
  // keyFunc: service account, namespace, audiences, expiration and the bound object.
  const std::string key = absl::StrCat(
      request.service_account, "\n", request.ns, "\n", absl::StrJoin(request.audiences, "\t"),
      "\n", request.expiration_seconds.value_or(0), "\n", request.pod_name, "\n", request.pod_uid);
  const absl::Time now = now_();
  auto cached = cache_.find(key);
  if (cached != cache_.end() && !RequiresRefresh(cached->second, now)) {
    return Result{cached->second, /*reused=*/true};
  }
  absl::StatusOr<IssuedToken> issued = issuer_->Issue(request, now);
  if (!issued.ok()) {
    if (cached == cache_.end()) {
      return absl::Status(issued.status().code(),
                          absl::StrCat("failed to fetch token: ", issued.status().message()));
    }
    if (now >= cached->second.expiration) {
      return absl::Status(issued.status().code(),
                          absl::StrCat("token expired and refresh failed: ",
                                       issued.status().message()));
    }
    return Result{cached->second, /*reused=*/true};  // "Couldn't update token": the old one
  }
  cache_[key] = *issued;
  return Result{*std::move(issued), /*reused=*/false};
}

}  // namespace ndr::token

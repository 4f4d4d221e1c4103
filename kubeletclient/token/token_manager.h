// Service-account tokens for CSI drivers, as kubelet gets them (pkg/kubelet/token/
// token_manager.go) from the API server's TokenRequest API (pkg/registry/core/serviceaccount/
// storage/token.go, pkg/serviceaccount/claims.go), both played here:
//
// TokenIssuer is the API server's side: it checks a request as the API server does (the
// ServiceAccount exists; at least 10 minutes; no audience means its own, the issuer) and mints a
// bound token: a JWT signed with the service-account key (jwt.h) whose claims are v1.26's: iss,
// sub (system:serviceaccount:<ns>:<name>), aud, exp, iat, nbf and kubernetes.io {namespace, pod
// {name, uid}, serviceaccount {name, uid}}.
//
// TokenManager is kubelet's cache in front of it: a token for the same service account,
// audiences, expiration and pod is handed out again until it needs refreshing: when 80% of its
// lifetime has passed, or 24 hours since it was issued (requiresRefresh; kubelet also subtracts a
// random jitter of up to 10 s, which is left out here so that the same clock gives the same
// answer). The cache lives as long as the TokenManager: one kubeletclient command.
//
// Tokens are secrets: nothing here logs them. Thread-compatible.
#ifndef NDR_KUBELETCLIENT_TOKEN_TOKEN_MANAGER_H_
#define NDR_KUBELETCLIENT_TOKEN_TOKEN_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/token/jwt.h"

namespace ndr::token {

// authentication/v1 TokenRequestSpec's default expirationSeconds (SetDefaults_TokenRequestSpec).
inline constexpr int64_t kDefaultExpirationSeconds = 3600;

// What kubelet asks for (csi_mounter.go podServiceAccountTokenAttrs): a token for the pod's
// service account, bound to the pod.
struct BoundTokenRequest {
  std::string ns;
  std::string service_account;
  std::vector<std::string> audiences;         // empty: the API server's own
  std::optional<int64_t> expiration_seconds;  // unset: the API server's default, 3600
  std::string pod_name;
  std::string pod_uid;
};

// authentication/v1 TokenRequestStatus.
struct IssuedToken {
  std::string token;
  absl::Time expiration;
  int64_t expiration_seconds = 0;  // the request's, after defaulting
};

class TokenIssuer {
 public:
  // `key` must outlive the issuer. `issuer` is the API server's --service-account-issuer.
  TokenIssuer(const SigningKey* key, std::string issuer, const kubelet::ObjectSet* objects);

  // The token, or the API server's error for the request (`serviceaccounts "x" not found`,
  // `spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10
  // minutes`).
  absl::StatusOr<IssuedToken> Issue(const BoundTokenRequest& request, absl::Time now) const;

  const std::string& issuer() const { return issuer_; }

 private:
  const SigningKey* key_;
  const std::string issuer_;
  const kubelet::ObjectSet* objects_;
};

class TokenManager {
 public:
  // `issuer` must outlive the manager; `now` is the clock tokens are issued and judged by.
  TokenManager(const TokenIssuer* issuer, std::function<absl::Time()> now);

  // GetServiceAccountToken: the cached token unless it requires a refresh, else a new one. What
  // the issuer refuses is an error, "failed to fetch token: ...", as kubelet words it.
  struct Result {
    IssuedToken token;
    bool reused = false;  // handed out before
  };
  absl::StatusOr<Result> Get(const BoundTokenRequest& request);

 private:
  bool RequiresRefresh(const IssuedToken& token, absl::Time now) const;

  const TokenIssuer* issuer_;
  std::function<absl::Time()> now_;
  std::map<std::string, IssuedToken> cache_;
};

}  // namespace ndr::token

#endif  // NDR_KUBELETCLIENT_TOKEN_TOKEN_MANAGER_H_

// What every volume command of kubeletclient (publish, unpublish, republish, expand, stats)
// shares: its inputs, read and validated before any socket is touched; the registration
// handshake with every plugin in the registry directory (so the command knows each driver's
// endpoint and whether it wants pod information; the only call this makes on a driver is
// NodeGetInfo); the service-account token source; and the pieces of its JSON report.
#ifndef NDR_KUBELETCLIENT_VOLUME_COMMAND_H_
#define NDR_KUBELETCLIENT_VOLUME_COMMAND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/csi/driver_registry.h"
#include "kubeletclient/csi/publisher.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "kubeletclient/pluginmanager/handshake.h"
#include "kubeletclient/token/token_manager.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {

struct PublishCommand {
  std::string pod_file;
  std::vector<std::string> object_paths;
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  NodeOptions node;
  HandshakeTimeouts handshake;
  CsiHandlerOptions csi;
  // The API server's service-account signing key (PEM) and issuer, for CSIDrivers with
  // tokenRequests; no key: such volumes are refused.
  std::string service_account_key_file;
  std::string service_account_issuer = "https://kubernetes.default.svc.cluster.local";
};

struct CommandOutcome {
  bool ok = false;     // every volume succeeded
  std::string json;    // what happened, secrets redacted (or another format's text)
  std::string error;   // why nothing was done, when nothing could be
  std::vector<std::string> volume_errors;  // "volume "x": why", for each volume that failed
};

// The pod and the objects, read and validated.
struct Inputs {
  Pod pod;
  ObjectSet objects;
};
absl::StatusOr<Inputs> ReadInputs(const PublishCommand& command);

// Registers every plugin socket in the registry directory into `registry`; what each handshake
// found, for the report.
absl::StatusOr<nlohmann::ordered_json> RegisterAll(const PublishCommand& command,
                                                   DriverRegistry* registry);

// The service-account token source of a command: the signing key, the API server's TokenRequest
// and kubelet's token cache over `objects` (which must outlive it). Empty when no key file was
// given; an error when the key file is bad.
struct TokenSource {
  std::unique_ptr<token::SigningKey> key;
  std::unique_ptr<token::TokenIssuer> issuer;
  std::unique_ptr<token::TokenManager> manager;
};
absl::StatusOr<TokenSource> StartTokenSource(const PublishCommand& command,
                                             const ObjectSet& objects,
                                             std::function<absl::Time()> clock);

// kubelet.go setupDataDirs, at kubelet's start: the root directory exists (0750) and is on a
// shared mount (hostutil::MakeRShared), so that what drivers mount below it propagates, as
// drivers that check their mounts' propagation need. Only where `node` may change the host;
// `made` says whether the root was bind-mounted on itself (kubelet leaves it so).
absl::Status SetUpRootDir(const NodeOptions& node, bool* made);

// Pieces of the report.
nlohmann::ordered_json ReportHead(const Pod& pod, nlohmann::ordered_json registrations,
                                  const NodeOptions& node);
// What a command knows of a CSI volume before it sends anything.
nlohmann::ordered_json DescribePlan(const VolumePlan& plan);
// The calls, host steps, notes and claim status of one volume, added to `entry`.
void ReportOutcome(const VolumeOutcome& volume, nlohmann::ordered_json* entry);

// `Pod ns/name: <why>; <nothing_done>`, naming the pod's file.
std::string Refusal(const Pod& pod, const absl::Status& status, const char* nothing_done);

// The planned volume of the pod named `name` that the command can act on (a CSI volume, planned
// without an error), or why not.
absl::StatusOr<VolumePlan*> FindPlannedVolume(PodPlan* plan, const Pod& pod,
                                              const std::string& name);

// Whether the volume of `plan` is published for its pod on this node, as kubelet's files say
// (the pod's vol_data.json for this volume, or its block volume's entry); if not, why.
absl::Status CheckPublished(const VolumePlan& plan);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_VOLUME_COMMAND_H_

// A small but real CSI node plugin, used by the demo and by every integration test.
//
// It serves the CSI Identity and Node services (and with --controller the Controller service,
// sample_controller.h). Its volumes are directories of files: on
// NodePublishVolume it creates the target directory and writes one file per volume_context entry
// (so a pod that asked for pod information finds its own name, namespace, UID and service account
// there, a small cousin of the secrets-store style of driver), and on NodeUnpublishVolume it
// removes what it created. Requests are validated as the CSI spec demands: a missing field is
// INVALID_ARGUMENT, the same target published with other arguments is ALREADY_EXISTS, and both
// calls are idempotent.
//
// What was published to a target is recorded in a hidden file inside it (kMarkerFile), so the
// driver keeps its idempotency across restarts. Secrets are never written to disk or logged.
//
// With stage_unstage it advertises STAGE_UNSTAGE_VOLUME, as block-storage drivers do:
// NodeStageVolume prepares the staging directory (the CO creates it; the driver records the
// volume, its capability and its publish context in kStagedFile there), NodeUnstageVolume
// clears it, and NodePublishVolume of a volume that is not staged at the staging path it names
// is FAILED_PRECONDITION, as the spec says, unless volume_context marks it an inline ephemeral
// volume (csi.storage.k8s.io/ephemeral: "true"), which kubelet never stages.
//
// Raw block volumes (a VolumeCapability with access_type block), as kubelet's block path
// (pkg/volume/csi/csi_block.go) uses them. Each volume is a disk image in the data directory
// (DriverOptions::data_dir; block_volume.h): a sparse 1 MiB file named after the volume ID,
// created by NodeStageVolume, or by NodePublishVolume for a driver that does not stage, and kept
// when the volume is unstaged (it is the volume's data). The target_path of NodePublishVolume is
// a FILE that the driver creates in the directory kubelet made for it:
//   - when the process can change the host (root in the host's user namespace; see
//     DriverOptions::change_host), the image gets a loop device (an attached one is reused) and
//     the target becomes a bind mount of that device, as csi-driver-host-path does, so that
//     kubelet finds a block device there;
//   - otherwise the target is an empty regular file, and every such publish logs a WARNING:
//     kubelet's mapping would fail on a real node.
// What was published at each block target is recorded in the data directory's index
// (kBlockIndexFile), written before anything is created, so that a publish that failed half-way
// is completed by a retry or undone by NodeUnpublishVolume. NodeUnpublishVolume unmounts and
// removes the target file and, once no published target of the volume remains, detaches the
// image's loop device; NodeUnstageVolume makes sure of that too. volume_context is recorded but
// no files are written for a block volume (there is no directory to write them to);
// reject_pod_info still applies.
//
// After the mount, as kubelet uses a node plugin (pkg/volume/csi expander.go, csi_metrics.go):
//   - EXPAND_VOLUME: NodeExpandVolume of a published volume grows a block volume's disk image
//     (never shrinks it; an attached loop device is told its new size) and records a mount
//     volume's new capacity in the data directory; the answer is the capacity it has now;
//   - GET_VOLUME_STATS: NodeGetVolumeStats of a published volume path: for a mount volume, its
//     capacity (as recorded by an expansion, else the file system's), the bytes of the files in
//     it, and statfs(2)'s inodes; for a block volume (kubelet asks at
//     volumeDevices/<pv>/dev/<pod uid>), the disk image's size;
//   - VOLUME_CONDITION: abnormal when a file the driver wrote into a mount volume is gone, or a
//     block volume's disk image is;
//   - GET_VOLUME_HEALTH, GET_STORAGE_HEALTH (the spec after v1.12, kubelet v1.37 with
//     CSIVolumeHealth): NodeGetVolumeHealth says the same as the volume condition, as DEGRADED
//     (PublishedFileMissing) or INACCESSIBLE (DiskImageMissing), and NOT_FOUND for a volume it
//     does not have; NodeGetStorageHealth reports STORAGE_DEGRADED (LowFreeSpace) when the data
//     directory's file system has less than 5% free.
// Service-account tokens (kubelet's csi.storage.k8s.io/serviceAccount.tokens volume context,
// for CSIDrivers with tokenRequests) are never written out or logged: the driver records, per
// audience, the expiration and the claims of a token that verifies against
// DriverOptions::token_jwks (else why it does not) in kTokensRecordFile in the target, and a
// republish with fresh tokens is the same publish (requiresRepublish drivers get one on every
// pod sync), which only renews that record.
//
// Thread-safe: gRPC calls handlers concurrently; stage, unstage, publish, unpublish and expand
// are serialized.
#ifndef NDR_TEST_CSIDRIVER_SAMPLE_DRIVER_H_
#define NDR_TEST_CSIDRIVER_SAMPLE_DRIVER_H_

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/csi/csi.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "test/csidriver/block_volume.h"
#include "test/csidriver/call_record.h"

namespace ndr::sample {

inline constexpr char kDefaultDriverName[] = "sample.csi.example.com";
inline constexpr char kMarkerFile[] = ".sample-csi-volume";
inline constexpr char kStagedFile[] = ".sample-csi-staged";
inline constexpr char kPodInfoPrefix[] = "csi.storage.k8s.io/";
inline constexpr size_t kMaxNodeIdLength = 256;
// The volume-context key kubelet hands tokens in, and the record of them in a target.
inline constexpr char kTokensKey[] = "csi.storage.k8s.io/serviceAccount.tokens";
inline constexpr char kTokensRecordFile[] = ".sample-csi-tokens.json";
// With a controller (DriverOptions::controller): the publish-context key of
// ControllerPublishVolume that says which node a volume is attached to.
inline constexpr char kAttachedToKey[] = "sample.csi.example.com/attached-to";

// Deliberate departures from what kubelet needs of a node plugin, each switched on by name
// (DriverOptions::faults, --faults), so that the tools that judge drivers (`kubeletclient
// sanity`) can be shown to catch them:
//   stage-not-idempotent       a second NodeStageVolume of a staged volume, even with the same
//                              arguments (kubelet's replay after a restart), is ALREADY_EXISTS
//   unpublish-missing-target   NodeUnpublishVolume of a target that does not exist is NOT_FOUND
//   block-target-directory     a block NodePublishVolume (without host changes) makes a
//                              directory at target_path where kubelet needs a file
//   stats-used-over-capacity   NodeGetVolumeStats of a mount volume reports more bytes used
//                              than its capacity
//   block-stats-of-dev         NodeGetVolumeStats of a block volume reports the size of /dev's
//                              file system as its capacity, not its device's size
//   read-only-refused          a readonly NodePublishVolume of a persistent volume is INTERNAL,
//                              as a driver that cannot mount read-only a device staged
//                              read-write answers
//   stats-internal             every NodeGetVolumeStats is INTERNAL
//   storage-unreachable        NodeGetStorageHealth reports its data directory unreachable
//                              (not a fault of the driver's answer: a condition to report)
//   volume-inaccessible        NodeGetVolumeHealth reports every volume INACCESSIBLE (a
//                              condition to report, as storage-unreachable)
//   empty-node-id              NodeGetInfo answers an empty node ID, which kubelet refuses to
//                              register for good
inline constexpr const char* kFaults[] = {"stage-not-idempotent", "unpublish-missing-target",
                                          "block-target-directory", "stats-used-over-capacity",
                                          "block-stats-of-dev", "read-only-refused",
                                          "stats-internal", "storage-unreachable",
                                          "volume-inaccessible", "empty-node-id"};

enum class BlockPublish {
  kLoopBind,  // a loop device over the disk image, bind-mounted on a file at the target
  kSymlink,   // the target is a symbolic link to that loop device's node
  kFile,      // the disk image itself bind-mounted on a regular file at the target: no device
};

// "loop-bind", "symlink" or "file" (--block-publish); nullopt for anything else.
std::optional<BlockPublish> ParseBlockPublish(absl::string_view text);

struct DriverOptions {
  // GetPluginInfo's name; must be a valid CSI driver name.
  std::string name = kDefaultDriverName;
  // GetPluginInfo's vendor_version.
  std::string vendor_version = "1.0.0";
  // NodeGetInfo's node_id; non-empty, at most 256 bytes.
  std::string node_id;
  // NodeGetInfo's max_volumes_per_node; 0 means no limit.
  int64_t max_volumes_per_node = 0;
  // NodeGetInfo's max_volumes_per_node from the second call on: a driver whose capacity on the
  // node changes, as Kubernetes' mock driver's can, for kubelet's periodic NodeGetInfo
  // (CSIDriver nodeAllocatableUpdatePeriodSeconds); nullopt: always max_volumes_per_node.
  std::optional<int64_t> later_max_volumes_per_node;
  // NodeGetInfo's accessible_topology segments; when set, the plugin also advertises the
  // VOLUME_ACCESSIBILITY_CONSTRAINTS capability, as the spec requires.
  std::map<std::string, std::string> topology;
  // Refuse csi.storage.k8s.io/* volume_context keys with INVALID_ARGUMENT, as a persistent-storage
  // driver that does not expect pod information would.
  bool reject_pod_info = false;
  // Advertise STAGE_UNSTAGE_VOLUME and require NodeStageVolume before NodePublishVolume.
  bool stage_unstage = false;
  // Where block volumes' disk images and the index of published block targets live; created on
  // demand with mode 0700. Must be absolute. Empty: block volumes are refused with
  // FAILED_PRECONDITION (the sample-csi-driver binary never leaves it empty: its default is
  // "sample-csi-data" beside the --endpoint socket).
  std::string data_dir;
  // Whether block publishes attach loop devices and bind-mount them (this needs root in the
  // host's user namespace). nullopt: decided once, when NodeService is made, with
  // hostutil::CanChangeHost. Tests force false to get the plain-file behaviour as any user.
  std::optional<bool> change_host;
  // The JWKS document (the API server's /openid/v1/jwks, `kubeletclient jwks`) that tokens are
  // verified against; null: tokens are recorded as unverified.
  nlohmann::json token_jwks;
  // Faults to commit (kFaults); none by default.
  std::set<std::string> faults;
  // NodeGetStorageHealth reports STORAGE_DEGRADED (LowFreeSpace) when less than this percentage
  // of the data directory's file system is free; 0: never (a recording of kubelet's requests that
  // must not depend on the machine's disk).
  int low_free_space_percent = 5;
  // Serve the Controller service too (sample_controller.h), and advertise CONTROLLER_SERVICE.
  // The volumes it creates ("sample-<name>") are then staged and published only with the publish
  // context of their ControllerPublishVolume to this node.
  bool controller = false;
  // How a block volume is put at its target when the driver can change the host. All three are
  // what CSI drivers do; kubelet can map and unmap only the first two (see --block-publish).
  BlockPublish block_publish = BlockPublish::kLoopBind;
  // With stage_unstage: record a stage in data_dir and put the staging directory's content there
  // only at the first NodePublishVolume (and remove it at NodeUnstageVolume), as drivers that
  // mount lazily do.
  bool lazy_staging = false;
  // Advertise none of GET_VOLUME_STATS, VOLUME_CONDITION, GET_VOLUME_HEALTH, GET_STORAGE_HEALTH.
  bool no_stats = false;
  // With controller: CreateVolume refuses a block access type (INVALID_ARGUMENT), as a driver
  // with filesystem volumes only does.
  bool filesystem_only = false;
  // Serve read-only inline volumes only, as secrets-store and image drivers do: NodePublishVolume
  // refuses (INVALID_ARGUMENT) a volume that is not readonly or has no "source" in its
  // volume_context; the deployment's CSIDriver lists only Ephemeral.
  bool inline_only = false;
  // Refuse (FAILED_PRECONDITION) to stage or publish where the path's directory is not on a
  // shared mount, as drivers that mount in their own mount namespace and check the propagation
  // of kubelet's directory do (kubelet makes its root directory shared at start).
  bool require_shared_propagation = false;
  // Advertise VOLUME_MOUNT_GROUP: a volume_mount_group in NodeStageVolume or NodePublishVolume
  // (a decimal group ID; kubelet sends the pod's fsGroup) gives the published directory that
  // group and the setgid bit, as kubelet's own fsGroup change would, and kubelet leaves the
  // ownership to the driver. Without it, a request carrying volume_mount_group is refused
  // (INVALID_ARGUMENT): a CO must not send it to a driver that did not advertise it.
  bool volume_mount_group = false;
  // Answer every NodeStageVolume with this code, after recording it, staging nothing (as
  // Kubernetes' mock driver does when its test asks). A final code (INVALID_ARGUMENT, ...) and a
  // code that leaves the driver's state uncertain (DEADLINE_EXCEEDED, ...) make kubelet behave
  // differently afterwards; nullopt: stage normally.
  std::optional<absl::StatusCode> stage_error;
  // Where every request received is recorded (--record), or null.
  std::shared_ptr<CallRecord> record;
};

// "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", ...: a gRPC status code's name, not OK
// (--stage-error); nullopt for anything else.
std::optional<absl::StatusCode> ParseErrorCode(absl::string_view text);

// Checks options for values the spec forbids (invalid name, empty or over-long node ID, negative
// limit, empty topology keys) and a relative data_dir.
absl::Status ValidateDriverOptions(const DriverOptions& options);

// Parses "key=value,key2=value2" into a topology map; empty input gives an empty map.
absl::StatusOr<std::map<std::string, std::string>> ParseTopology(const std::string& text);

// The file name a volume_context key is written to: the key with '/' replaced by '_'.
// Fails for keys that could not safely be file names.
absl::StatusOr<std::string> FileNameForKey(const std::string& key);

class IdentityService final : public csi::v1::Identity::Service {
 public:
  explicit IdentityService(const DriverOptions& options) : options_(options) {}

  grpc::Status GetPluginInfo(grpc::ServerContext* context,
                             const csi::v1::GetPluginInfoRequest* request,
                             csi::v1::GetPluginInfoResponse* response) override;
  grpc::Status GetPluginCapabilities(grpc::ServerContext* context,
                                     const csi::v1::GetPluginCapabilitiesRequest* request,
                                     csi::v1::GetPluginCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext* context, const csi::v1::ProbeRequest* request,
                     csi::v1::ProbeResponse* response) override;

 private:
  const DriverOptions options_;
};

class NodeService final : public csi::v1::Node::Service {
 public:
  // Decides whether block publishes may change the host (options.change_host).
  explicit NodeService(const DriverOptions& options);

  grpc::Status NodeStageVolume(grpc::ServerContext* context,
                               const csi::v1::NodeStageVolumeRequest* request,
                               csi::v1::NodeStageVolumeResponse* response) override;
  grpc::Status NodeUnstageVolume(grpc::ServerContext* context,
                                 const csi::v1::NodeUnstageVolumeRequest* request,
                                 csi::v1::NodeUnstageVolumeResponse* response) override;
  grpc::Status NodePublishVolume(grpc::ServerContext* context,
                                 const csi::v1::NodePublishVolumeRequest* request,
                                 csi::v1::NodePublishVolumeResponse* response) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext* context,
                                   const csi::v1::NodeUnpublishVolumeRequest* request,
                                   csi::v1::NodeUnpublishVolumeResponse* response) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext* context,
                                   const csi::v1::NodeGetCapabilitiesRequest* request,
                                   csi::v1::NodeGetCapabilitiesResponse* response) override;
  grpc::Status NodeGetInfo(grpc::ServerContext* context,
                           const csi::v1::NodeGetInfoRequest* request,
                           csi::v1::NodeGetInfoResponse* response) override;
  grpc::Status NodeGetVolumeStats(grpc::ServerContext* context,
                                  const csi::v1::NodeGetVolumeStatsRequest* request,
                                  csi::v1::NodeGetVolumeStatsResponse* response) override;
  grpc::Status NodeGetVolumeHealth(grpc::ServerContext* context,
                                   const csi::v1::NodeGetVolumeHealthRequest* request,
                                   csi::v1::NodeGetVolumeHealthResponse* response) override;
  grpc::Status NodeGetStorageHealth(grpc::ServerContext* context,
                                    const csi::v1::NodeGetStorageHealthRequest* request,
                                    csi::v1::NodeGetStorageHealthResponse* response) override;
  grpc::Status NodeExpandVolume(grpc::ServerContext* context,
                                const csi::v1::NodeExpandVolumeRequest* request,
                                csi::v1::NodeExpandVolumeResponse* response) override;

 private:
  // With a controller: a volume it created must carry this node's kAttachedToKey.
  absl::Status CheckAttached(
      const std::string& volume_id,
      const google::protobuf::Map<std::string, std::string>& publish_context) const;
  std::string StageRecord(const std::string& staging) const;
  absl::Status Stage(const csi::v1::NodeStageVolumeRequest& request);
  absl::Status Unstage(const csi::v1::NodeUnstageVolumeRequest& request);
  absl::Status Publish(const csi::v1::NodePublishVolumeRequest& request);
  absl::Status Unpublish(const csi::v1::NodeUnpublishVolumeRequest& request);

  // Block volumes (see the comment at the top).
  // The path of `volume_id`'s disk image, made sure to exist (FAILED_PRECONDITION without a
  // data directory).
  absl::StatusOr<std::string> EnsureVolumeImage(const std::string& volume_id);
  // The index of published block targets; empty without a data directory.
  absl::StatusOr<BlockIndex> LoadIndex();
  // NodePublishVolume of a block volume, the request already validated.
  absl::Status PublishBlock(const csi::v1::NodePublishVolumeRequest& request);
  // NodeUnpublishVolume of a target that exists and is not a directory (`st`: its lstat).
  absl::Status UnpublishBlock(const csi::v1::NodeUnpublishVolumeRequest& request,
                              const struct stat& st);
  // Drops `target` (of `volume_id`, already removed from disk) from `index`, releases the
  // volume's loop device if no other target uses it, then saves the index.
  absl::Status ForgetBlockTarget(BlockIndex index, const std::string& target,
                                 const std::string& volume_id);
  // When block publishes change the host and `index` holds no target of `volume_id`: detaches
  // every loop device attached to its disk image.
  absl::Status ReleaseLoopDevice(const std::string& volume_id, const BlockIndex& index);
  absl::StatusOr<std::string> ImagePath(const std::string& volume_id) const;
  // Where a mount volume's expanded capacity is recorded.
  absl::StatusOr<std::string> CapacityPath(const std::string& volume_id) const;
  absl::StatusOr<csi::v1::NodeGetVolumeStatsResponse> Stats(const std::string& volume_id,
                                                            const std::string& path);
  absl::StatusOr<int64_t> Expand(const csi::v1::NodeExpandVolumeRequest& request);
  // The record of the tokens in `tokens_json` (hostile: kubelet's, or anyone's), for
  // kTokensRecordFile: per audience, the expiration and the claims of a token that verifies.
  absl::StatusOr<std::string> TokensRecord(const std::string& tokens_json) const;
  std::string IndexPath() const;

  const DriverOptions options_;
  // Whether block publishes attach and mount (options_.change_host or CanChangeHost), and why
  // not, for the warning.
  bool change_host_ = false;
  std::string why_not_change_host_;
  // Held for the whole of every call that changes the node's state: Stage, Unstage, Publish,
  // Unpublish and Expand, and so around the block-volume functions they call (EnsureVolumeImage
  // to ReleaseLoopDevice), which must not be called without it. Said in words, not with clang's
  // thread-safety attributes, which need a capability type: std::mutex is not one, and abseil's
  // Mutex is not instrumented for TSan in Debian's build.
  std::mutex mu_;
  std::atomic<int> node_get_info_calls_{0};
};

}  // namespace ndr::sample

#endif  // NDR_TEST_CSIDRIVER_SAMPLE_DRIVER_H_

#include "test/csidriver/sample_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>

#include <dirent.h>

#include <algorithm>
#include <functional>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/csi_name.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "kubeletclient/token/jwt.h"
#include "logging/logging.h"

namespace ndr::sample {
namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(err)));
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// --require-shared-propagation: the directory `path` is in must be on a shared mount.
absl::Status CheckSharedPropagation(const std::string& path) {
  absl::StatusOr<bool> shared = hostutil::IsOnSharedMount(Parent(path));
  if (!shared.ok()) return shared.status();
  if (!*shared) {
    return absl::FailedPreconditionError(absl::StrCat(
        "mount propagation for ", Parent(path),
        " is not shared: this driver's mounts would not reach the host (kubelet makes its root "
        "directory shared at start)"));
  }
  return absl::OkStatus();
}

// Removes everything under the directory `dir` (not `dir` itself): what a pod wrote into a
// published volume, which in this driver is the target directory itself. Symbolic links are
// removed, never followed, and nothing on another filesystem is touched: a mount found inside is
// left, and the caller's rmdir of `dir` then fails and says so.
absl::Status RemoveContents(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", dir, errno);
  struct stat top;
  if (fstat(fd, &top) != 0) {
    const int saved = errno;
    close(fd);
    return ErrnoError("stat", dir, saved);
  }
  DIR* stream = fdopendir(fd);
  if (stream == nullptr) {
    const int saved = errno;
    close(fd);
    return ErrnoError("read directory", dir, saved);
  }
  absl::Status status;
  std::vector<std::string> names;
  while (struct dirent* entry = readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    struct stat st;
    if (fstatat(dirfd(stream), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      status = ErrnoError("stat", path, errno);
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != top.st_dev) continue;  // a mount: not ours to empty
      if (status = RemoveContents(path); !status.ok()) break;
    }
    if (unlinkat(dirfd(stream), name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0) {
      status = ErrnoError("remove", path, errno);
      break;
    }
  }
  closedir(stream);
  return status;
}

absl::Status WriteWholeFile(const std::string& path, absl::string_view contents, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("create", path, errno);
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return ErrnoError("write", path, err);
    }
    written += n;
  }
  fchmod(fd, mode);  // Also when the file existed with other permissions.
  if (close(fd) != 0) return ErrnoError("close", path, errno);
  return absl::OkStatus();
}

bool ReadWholeFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

// A canonical description of what is published at a target: every argument that must match for a
// repeated NodePublishVolume to be the same call. Secrets are left out; they never touch disk.
std::string Fingerprint(const csi::v1::NodePublishVolumeRequest& request) {
  std::map<std::string, std::string> context(request.volume_context().begin(),
                                             request.volume_context().end());
  // Tokens change on every republish without making it another publish, and never touch disk.
  context.erase(kTokensKey);
  std::string text = absl::StrCat("volume_id ", absl::CEscape(request.volume_id()), "\n",
                                  "readonly ", request.readonly() ? "true" : "false", "\n",
                                  "capability ", request.volume_capability().ShortDebugString(),
                                  "\n");
  for (const auto& [key, value] : context) {
    absl::StrAppend(&text, "context ", key, " ", absl::CEscape(value), "\n");
  }
  return text;
}

// The group of a request's volume_mount_group: nullopt when it has none, INVALID_ARGUMENT when
// the driver did not advertise VOLUME_MOUNT_GROUP or the value is not a decimal group ID.
absl::StatusOr<std::optional<gid_t>> MountGroup(const csi::v1::VolumeCapability& capability,
                                                bool advertised) {
  if (!capability.has_mount() || capability.mount().volume_mount_group().empty()) {
    return std::optional<gid_t>();
  }
  const std::string& text = capability.mount().volume_mount_group();
  if (!advertised) {
    return absl::InvalidArgumentError(absl::StrCat(
        "volume_mount_group \"", absl::CEscape(text),
        "\" sent, but this driver does not advertise VOLUME_MOUNT_GROUP (run it with "
        "--volume-mount-group)"));
  }
  uint32_t gid = 0;
  if (text.size() > 10 || !absl::SimpleAtoi(text, &gid) ||
      text.find_first_not_of("0123456789") != std::string::npos ||
      gid == static_cast<uint32_t>(-1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "volume_mount_group \"", absl::CEscape(text),
        "\" is not a group ID (this driver takes a decimal number, as kubelet sends the pod's "
        "fsGroup)"));
  }
  return std::optional<gid_t>(static_cast<gid_t>(gid));
}

// The checks NodeStageVolume and NodePublishVolume share: a volume ID, an absolute path, a
// mount or block capability with an access mode.
absl::Status CheckVolumeArgs(const std::string& volume_id, const std::string& path_field,
                             const std::string& path, bool has_capability,
                             const csi::v1::VolumeCapability& capability) {
  if (volume_id.empty()) return absl::InvalidArgumentError("volume_id is required");
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(path_field, " is required"));
  if (path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(path_field, " \"", path, "\" is not absolute"));
  }
  if (!has_capability) return absl::InvalidArgumentError("volume_capability is required");
  if (!capability.has_access_mode() ||
      capability.access_mode().mode() == csi::v1::VolumeCapability::AccessMode::UNKNOWN) {
    return absl::InvalidArgumentError("volume_capability.access_mode is required");
  }
  if (!capability.has_mount() && !capability.has_block()) {
    return absl::InvalidArgumentError("volume_capability.access_type (mount or block) is required");
  }
  return absl::OkStatus();
}

// What is staged at a staging path: the volume and everything that must match for a repeated
// NodeStageVolume to be the same call. The first line names the volume.
std::string StagedFingerprint(const csi::v1::NodeStageVolumeRequest& request) {
  std::string text = absl::StrCat("volume_id ", absl::CEscape(request.volume_id()), "\n",
                                  "capability ", request.volume_capability().ShortDebugString(),
                                  "\n");
  std::map<std::string, std::string> context(request.publish_context().begin(),
                                             request.publish_context().end());
  for (const auto& [key, value] : context) {
    absl::StrAppend(&text, "publish_context ", key, " ", absl::CEscape(value), "\n");
  }
  return text;
}

// Creates `path` as an empty regular file (mode 0640) unless there is one already; anything
// else there is FAILED_PRECONDITION.
absl::Status CreateTargetFile(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd >= 0) {
    if (close(fd) != 0) return ErrnoError("close", path, errno);
    return absl::OkStatus();
  }
  if (errno != EEXIST) return ErrnoError("create target file", path, errno);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return ErrnoError("stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("target_path ", path, " exists and is not a regular file"));
  }
  return absl::OkStatus();
}

// The volume ID and context keys recorded in a marker file.
struct Marker {
  std::string volume_id;
  std::vector<std::string> keys;
};

Marker ParseMarker(const std::string& text) {
  Marker marker;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "volume_id ")) {
      absl::CUnescape(line, &marker.volume_id);
    } else if (absl::ConsumePrefix(&line, "context ")) {
      marker.keys.emplace_back(line.substr(0, line.find(' ')));
    }
  }
  return marker;
}

}  // namespace

absl::Status ValidateDriverOptions(const DriverOptions& options) {
  if (absl::Status s = ValidateCsiDriverName(options.name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--drivername: ", s.message()));
  }
  if (options.node_id.empty()) {
    return absl::InvalidArgumentError("--nodeid: must not be empty");
  }
  if (options.node_id.size() > kMaxNodeIdLength) {
    return absl::InvalidArgumentError(absl::StrCat("--nodeid: ", options.node_id.size(),
                                                   " bytes long; CSI allows at most ",
                                                   kMaxNodeIdLength));
  }
  if (options.max_volumes_per_node < 0) {
    return absl::InvalidArgumentError("--max-volumes-per-node: must not be negative");
  }
  if (options.later_max_volumes_per_node.value_or(0) < 0) {
    return absl::InvalidArgumentError("--later-max-volumes-per-node: must not be negative");
  }
  if (options.low_free_space_percent < 0 || options.low_free_space_percent > 100) {
    return absl::InvalidArgumentError(absl::StrCat("--low-free-space-percent: ",
                                                   options.low_free_space_percent,
                                                   " is not a percentage from 0 to 100"));
  }
  for (const std::string& fault : options.faults) {
    if (std::find(std::begin(kFaults), std::end(kFaults), fault) == std::end(kFaults)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--faults: \"", fault, "\" is not one of ", absl::StrJoin(kFaults, ", ")));
    }
  }
  if (!options.data_dir.empty() && options.data_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir: \"", options.data_dir, "\" is not an absolute path"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> ParseTopology(const std::string& text) {
  std::map<std::string, std::string> topology;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    absl::StripAsciiWhitespace(&kv.first);
    absl::StripAsciiWhitespace(&kv.second);
    if (kv.first.empty() || item.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--topology: \"", item, "\" is not key=value"));
    }
    if (!topology.emplace(kv.first, kv.second).second) {
      return absl::InvalidArgumentError(absl::StrCat("--topology: key \"", kv.first,
                                                     "\" is given twice"));
    }
  }
  return topology;
}

absl::StatusOr<std::string> FileNameForKey(const std::string& key) {
  if (key.empty() || key.size() > 253 || key[0] == '.' || key[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("volume_context key \"", absl::CHexEscape(key),
                     "\" cannot be a file name: it is empty, too long, or starts with '.' or '/'"));
  }
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' && c != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("volume_context key \"", absl::CHexEscape(key),
                       "\" cannot be a file name: only letters, digits, '-', '_', '.' and '/' "
                       "are allowed"));
    }
  }
  return absl::StrReplaceAll(key, {{"/", "_"}});
}

grpc::Status IdentityService::GetPluginInfo(grpc::ServerContext*,
                                            const csi::v1::GetPluginInfoRequest* request,
                                            csi::v1::GetPluginInfoResponse* response) {
  if (options_.record) options_.record->Add("GetPluginInfo", *request);
  NDR_VLOG(4) << "GetPluginInfo";
  response->set_name(options_.name);
  response->set_vendor_version(options_.vendor_version);
  return grpc::Status::OK;
}

grpc::Status IdentityService::GetPluginCapabilities(
    grpc::ServerContext*, const csi::v1::GetPluginCapabilitiesRequest* request,
    csi::v1::GetPluginCapabilitiesResponse* response) {
  if (options_.record) options_.record->Add("GetPluginCapabilities", *request);
  NDR_VLOG(4) << "GetPluginCapabilities";
  if (options_.controller) {
    response->add_capabilities()->mutable_service()->set_type(
        csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
  }
  if (!options_.topology.empty()) {
    response->add_capabilities()->mutable_service()->set_type(
        csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);
  }
  return grpc::Status::OK;
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const csi::v1::ProbeRequest* request,
                                    csi::v1::ProbeResponse* response) {
  if (options_.record) options_.record->Add("Probe", *request);
  NDR_VLOG(4) << "Probe";
  response->mutable_ready()->set_value(true);
  return grpc::Status::OK;
}

NodeService::NodeService(const DriverOptions& options) : options_(options) {
  if (options_.change_host.has_value()) {
    change_host_ = *options_.change_host;
    if (!change_host_) why_not_change_host_ = "DriverOptions.change_host is false";
  } else {
    change_host_ = hostutil::CanChangeHost(&why_not_change_host_);
  }
  if (change_host_) {
    NDR_LOG(INFO) << "Block volumes are published as bind mounts of loop devices";
  } else {
    NDR_LOG(INFO) << "Block volumes are published as plain files, not devices: "
                  << why_not_change_host_;
  }
}

grpc::Status NodeService::NodeGetCapabilities(grpc::ServerContext*,
                                              const csi::v1::NodeGetCapabilitiesRequest* request,
                                              csi::v1::NodeGetCapabilitiesResponse* response) {
  if (options_.record) options_.record->Add("NodeGetCapabilities", *request);
  // Without --stage-unstage no STAGE_UNSTAGE_VOLUME: like every ephemeral driver, only publish
  // and unpublish.
  NDR_VLOG(4) << "NodeGetCapabilities";
  if (options_.stage_unstage) {
    response->add_capabilities()->mutable_rpc()->set_type(
        csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
  }
  if (options_.volume_mount_group) {
    response->add_capabilities()->mutable_rpc()->set_type(
        csi::v1::NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP);
  }
  response->add_capabilities()->mutable_rpc()->set_type(
      csi::v1::NodeServiceCapability::RPC::EXPAND_VOLUME);
  if (!options_.no_stats) {
    for (auto type : {csi::v1::NodeServiceCapability::RPC::GET_VOLUME_STATS,
                      csi::v1::NodeServiceCapability::RPC::VOLUME_CONDITION,
                      csi::v1::NodeServiceCapability::RPC::GET_VOLUME_HEALTH,
                      csi::v1::NodeServiceCapability::RPC::GET_STORAGE_HEALTH}) {
      response->add_capabilities()->mutable_rpc()->set_type(type);
    }
  }
  return grpc::Status::OK;
}

grpc::Status NodeService::NodeStageVolume(grpc::ServerContext*,
                                          const csi::v1::NodeStageVolumeRequest* request,
                                          csi::v1::NodeStageVolumeResponse*) {
  if (options_.record) options_.record->Add("NodeStageVolume", *request);
  NDR_LOG(INFO) << "NodeStageVolume volume_id=" << request->volume_id()
            << " staging_target_path=" << request->staging_target_path()
            << " publish_context_keys=" << request->publish_context().size()
            << " secrets=" << request->secrets().size() << " (values not logged)";
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status status =
      options_.stage_error.has_value()
          ? absl::Status(*options_.stage_error, "NodeStageVolume fails on purpose (--stage-error)")
          : Stage(*request);
  if (!status.ok()) NDR_LOG(WARNING) << "NodeStageVolume " << request->volume_id() << ": " << status;
  return ToGrpc(status);
}

absl::Status NodeService::CheckAttached(
    const std::string& volume_id,
    const google::protobuf::Map<std::string, std::string>& publish_context) const {
  if (!options_.controller || !absl::StartsWith(volume_id, "sample-")) return absl::OkStatus();
  auto attached = publish_context.find(kAttachedToKey);
  if (attached == publish_context.end() || attached->second != options_.node_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "volume ", volume_id, " is not attached to node ", options_.node_id,
        " (publish_context has no ", kAttachedToKey, " naming it: ControllerPublishVolume first)"));
  }
  return absl::OkStatus();
}

// Where the stage of `staging` is recorded: in the staging directory, or with --lazy-staging in
// the data directory (the staging directory gets its content at the first publish).
std::string NodeService::StageRecord(const std::string& staging) const {
  if (!options_.lazy_staging) return absl::StrCat(staging, "/", kStagedFile);
  return absl::StrCat(options_.data_dir, "/staged-",
                      absl::Hex(std::hash<std::string>{}(staging), absl::kZeroPad16));
}

absl::Status NodeService::Stage(const csi::v1::NodeStageVolumeRequest& request) {
  if (!options_.stage_unstage) {
    return absl::UnimplementedError("this driver does not stage (run it with --stage-unstage)");
  }
  const std::string& staging = request.staging_target_path();
  if (absl::Status s = CheckVolumeArgs(request.volume_id(), "staging_target_path", staging,
                                       request.has_volume_capability(),
                                       request.volume_capability());
      !s.ok()) {
    return s;
  }
  if (absl::StatusOr<std::optional<gid_t>> group =
          MountGroup(request.volume_capability(), options_.volume_mount_group);
      !group.ok()) {
    return group.status();
  }
  if (options_.require_shared_propagation && change_host_) {
    if (absl::Status s = CheckSharedPropagation(request.staging_target_path()); !s.ok()) return s;
  }
  if (!IsDirectory(staging)) {
    return absl::FailedPreconditionError(
        absl::StrCat("staging_target_path ", staging, " is not a directory (the CO creates it)"));
  }
  if (absl::Status s = CheckAttached(request.volume_id(), request.publish_context()); !s.ok()) {
    return s;
  }
  const std::string staged_path = StageRecord(staging);
  const std::string fingerprint = StagedFingerprint(request);
  std::string recorded;
  const bool staged = ReadWholeFile(staged_path, &recorded);
  if (staged && options_.faults.count("stage-not-idempotent") > 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("volume ", request.volume_id(), " is already staged at ", staging));
  }
  if (staged && recorded != fingerprint) {
    return absl::AlreadyExistsError(absl::StrCat(
        "staging_target_path ", staging, " already holds a volume staged otherwise: ",
        recorded.substr(0, recorded.find('\n'))));
  }
  // A block volume's data is its disk image: there before the stage is recorded, and again on a
  // repeated stage.
  if (request.volume_capability().has_block()) {
    if (absl::StatusOr<std::string> image = EnsureVolumeImage(request.volume_id()); !image.ok()) {
      return image.status();
    }
  }
  if (staged) return absl::OkStatus();  // Already staged just so.
  if (options_.lazy_staging) {
    if (absl::Status s = EnsureDataDir(options_.data_dir); !s.ok()) return s;
  }
  return WriteWholeFile(staged_path, fingerprint, 0444);
}

grpc::Status NodeService::NodeUnstageVolume(grpc::ServerContext*,
                                            const csi::v1::NodeUnstageVolumeRequest* request,
                                            csi::v1::NodeUnstageVolumeResponse*) {
  if (options_.record) options_.record->Add("NodeUnstageVolume", *request);
  NDR_LOG(INFO) << "NodeUnstageVolume volume_id=" << request->volume_id()
            << " staging_target_path=" << request->staging_target_path();
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status status = Unstage(*request);
  if (!status.ok()) NDR_LOG(WARNING) << "NodeUnstageVolume " << request->volume_id() << ": " << status;
  return ToGrpc(status);
}

absl::Status NodeService::Unstage(const csi::v1::NodeUnstageVolumeRequest& request) {
  if (!options_.stage_unstage) {
    return absl::UnimplementedError("this driver does not stage (run it with --stage-unstage)");
  }
  if (request.volume_id().empty()) return absl::InvalidArgumentError("volume_id is required");
  if (request.staging_target_path().empty()) {
    return absl::InvalidArgumentError("staging_target_path is required");
  }
  const std::string staged_path = StageRecord(request.staging_target_path());
  if (options_.lazy_staging) {
    // What the first publish put in the staging directory goes with the stage.
    const std::string content = absl::StrCat(request.staging_target_path(), "/", kStagedFile);
    if (unlink(content.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("remove", content, errno);
    }
  }
  std::string recorded;
  const bool staged = ReadWholeFile(staged_path, &recorded);
  if (staged && recorded.rfind(absl::StrCat("volume_id ", absl::CEscape(request.volume_id()), "\n"),
                               0) != 0) {
    return absl::NotFoundError(absl::StrCat("volume ", request.volume_id(), " is not staged at ",
                                            request.staging_target_path(), " (",
                                            recorded.substr(0, recorded.find('\n')), " is)"));
  }
  // No loop device of a block volume outlives its stage (the CO unpublishes every target first;
  // one still published keeps it). Before the record goes, and also when it is gone already, so
  // that a retry after a failed detach detaches. The disk image stays: it is the volume's data.
  absl::StatusOr<BlockIndex> index = LoadIndex();
  if (!index.ok()) return index.status();
  if (absl::Status s = ReleaseLoopDevice(request.volume_id(), *index); !s.ok()) return s;
  if (!staged) return absl::OkStatus();  // Already unstaged.
  if (unlink(staged_path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove", staged_path, errno);
  }
  return absl::OkStatus();
}

grpc::Status NodeService::NodeGetInfo(grpc::ServerContext*,
                                      const csi::v1::NodeGetInfoRequest* request,
                                      csi::v1::NodeGetInfoResponse* response) {
  if (options_.record) options_.record->Add("NodeGetInfo", *request);
  NDR_VLOG(4) << "NodeGetInfo";
  response->set_node_id(options_.faults.count("empty-node-id") > 0 ? "" : options_.node_id);
  const bool first = node_get_info_calls_.fetch_add(1) == 0;
  response->set_max_volumes_per_node(first || !options_.later_max_volumes_per_node.has_value()
                                         ? options_.max_volumes_per_node
                                         : *options_.later_max_volumes_per_node);
  if (!options_.topology.empty()) {
    response->mutable_accessible_topology()->mutable_segments()->insert(
        options_.topology.begin(), options_.topology.end());
  }
  return grpc::Status::OK;
}

grpc::Status NodeService::NodePublishVolume(grpc::ServerContext*,
                                            const csi::v1::NodePublishVolumeRequest* request,
                                            csi::v1::NodePublishVolumeResponse*) {
  if (options_.record) options_.record->Add("NodePublishVolume", *request);
  std::vector<std::string> secret_keys;
  for (const auto& [key, value] : request->secrets()) secret_keys.push_back(key);
  NDR_LOG(INFO) << "NodePublishVolume volume_id=" << request->volume_id()
            << " target_path=" << request->target_path() << " readonly=" << request->readonly()
            << " volume_context_keys=" << request->volume_context().size()
            << " secrets=[" << absl::StrJoin(secret_keys, ",") << "] (values not logged)";
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status status = Publish(*request);
  if (!status.ok()) NDR_LOG(WARNING) << "NodePublishVolume " << request->volume_id() << ": " << status;
  return ToGrpc(status);
}

absl::Status NodeService::Publish(const csi::v1::NodePublishVolumeRequest& request) {
  if (absl::Status s = CheckVolumeArgs(request.volume_id(), "target_path", request.target_path(),
                                       request.has_volume_capability(),
                                       request.volume_capability());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::optional<gid_t>> mount_group =
      MountGroup(request.volume_capability(), options_.volume_mount_group);
  if (!mount_group.ok()) return mount_group.status();
  if (options_.require_shared_propagation && change_host_) {
    if (absl::Status s = CheckSharedPropagation(request.target_path()); !s.ok()) return s;
  }
  if (options_.inline_only) {
    if (!request.readonly()) {
      return absl::InvalidArgumentError(
          "this driver serves read-only inline volumes only: set readOnly: true on the pod's "
          "csi volume");
    }
    if (auto source = request.volume_context().find("source");
        source == request.volume_context().end() || source->second.empty()) {
      return absl::InvalidArgumentError(
          "volume attribute \"source\" is required: what to put in the volume");
    }
  }
  // The spec: FAILED_PRECONDITION when STAGE_UNSTAGE_VOLUME is set and the volume was not
  // staged. Inline (ephemeral) volumes are never staged: kubelet marks them with
  // csi.storage.k8s.io/ephemeral, as drivers that serve both kinds (csi-driver-host-path) read it.
  auto ephemeral = request.volume_context().find(absl::StrCat(kPodInfoPrefix, "ephemeral"));
  const bool is_ephemeral = ephemeral != request.volume_context().end() &&
                            ephemeral->second == "true";
  if (!is_ephemeral && request.readonly() && options_.faults.count("read-only-refused") > 0) {
    return absl::InternalError(absl::StrCat("cannot publish volume ", request.volume_id(),
                                            " read-only: its device is in use read-write"));
  }
  if (!is_ephemeral) {
    if (absl::Status s = CheckAttached(request.volume_id(), request.publish_context()); !s.ok()) {
      return s;
    }
  }
  if (options_.stage_unstage && !is_ephemeral) {
    std::string staged;
    const std::string& staging = request.staging_target_path();
    if (staging.empty() || !ReadWholeFile(StageRecord(staging), &staged) ||
        staged.rfind(absl::StrCat("volume_id ", absl::CEscape(request.volume_id()), "\n"), 0) !=
            0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "volume ", request.volume_id(), " is not staged",
          staging.empty() ? " (no staging_target_path)" : absl::StrCat(" at ", staging),
          "; NodeStageVolume comes first"));
    }
    // --lazy-staging: the staging directory's content comes now, with the first publish.
    const std::string content = absl::StrCat(staging, "/", kStagedFile);
    std::string present;
    if (options_.lazy_staging && !ReadWholeFile(content, &present)) {
      if (absl::Status s = WriteWholeFile(content, staged, 0444); !s.ok()) return s;
    }
  }
  const bool block = request.volume_capability().has_block();
  std::map<std::string, std::string> files;  // file name -> contents
  for (const auto& [key, value] : request.volume_context()) {
    if (options_.reject_pod_info && absl::StartsWith(key, kPodInfoPrefix)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "volume_context key \"", key,
          "\" carries pod information, which this driver does not accept (--reject-pod-info)"));
    }
    if (block) continue;  // A block volume has no directory to write files to.
    if (key == kTokensKey) continue;  // recorded below, never written out
    absl::StatusOr<std::string> name = FileNameForKey(key);
    if (!name.ok()) return name.status();
    files[*name] = value;
  }
  if (block) return PublishBlock(request);

  std::optional<std::string> tokens_record;
  if (auto tokens = request.volume_context().find(kTokensKey);
      tokens != request.volume_context().end()) {
    absl::StatusOr<std::string> record = TokensRecord(tokens->second);
    if (!record.ok()) return record.status();
    tokens_record = *std::move(record);
  }
  const std::string& target = request.target_path();
  const std::string marker_path = absl::StrCat(target, "/", kMarkerFile);
  const std::string tokens_path = absl::StrCat(target, "/", kTokensRecordFile);
  const std::string fingerprint = Fingerprint(request);
  std::string recorded;
  if (ReadWholeFile(marker_path, &recorded)) {
    if (recorded == fingerprint) {
      // Already published just so: a republish, which renews the tokens.
      if (tokens_record.has_value()) return WriteWholeFile(tokens_path, *tokens_record, 0444);
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(
        absl::StrCat("target_path ", target, " is already published with other arguments (volume ",
                     ParseMarker(recorded).volume_id, ")"));
  }
  if (!IsDirectory(Parent(target))) {
    return absl::FailedPreconditionError(
        absl::StrCat("parent directory of target_path ", target, " does not exist"));
  }
  if (mkdir(target.c_str(), 0750) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir", target, errno);
  }
  if (!IsDirectory(target)) {
    // The same target published as a block volume: the spec's ALREADY_EXISTS.
    if (absl::StatusOr<BlockIndex> index = LoadIndex(); index.ok() && index->count(target) > 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("target_path ", target, " is already published as a block volume (volume ",
                       ParseMarker(index->at(target)).volume_id, ")"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("target_path ", target, " exists and is not a directory"));
  }
  if (mount_group->has_value()) {
    // What kubelet's fsGroup change (SetVolumeOwnership) would do to the volume's root: the
    // group, group access and the setgid bit, so that files made in it get the group too.
    if (chown(target.c_str(), static_cast<uid_t>(-1), **mount_group) != 0) {
      return ErrnoError("chown", target, errno);
    }
    if (chmod(target.c_str(), request.readonly() ? 02750 : 02770) != 0) {
      return ErrnoError("chmod", target, errno);
    }
  }
  const mode_t mode = request.readonly() ? 0444 : 0644;
  for (const auto& [name, contents] : files) {
    if (absl::Status s = WriteWholeFile(absl::StrCat(target, "/", name), contents, mode); !s.ok()) {
      return s;
    }
  }
  if (tokens_record.has_value()) {
    if (absl::Status s = WriteWholeFile(tokens_path, *tokens_record, 0444); !s.ok()) return s;
  }
  // The marker goes last: a target without it was not completely published, and a retry redoes it.
  return WriteWholeFile(marker_path, fingerprint, 0444);
}

grpc::Status NodeService::NodeUnpublishVolume(grpc::ServerContext*,
                                              const csi::v1::NodeUnpublishVolumeRequest* request,
                                              csi::v1::NodeUnpublishVolumeResponse*) {
  if (options_.record) options_.record->Add("NodeUnpublishVolume", *request);
  NDR_LOG(INFO) << "NodeUnpublishVolume volume_id=" << request->volume_id()
            << " target_path=" << request->target_path();
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status status = Unpublish(*request);
  if (!status.ok()) {
    NDR_LOG(WARNING) << "NodeUnpublishVolume " << request->volume_id() << ": " << status;
  }
  return ToGrpc(status);
}

absl::Status NodeService::Unpublish(const csi::v1::NodeUnpublishVolumeRequest& request) {
  if (request.volume_id().empty()) {
    return absl::InvalidArgumentError("volume_id is required");
  }
  if (request.target_path().empty()) {
    return absl::InvalidArgumentError("target_path is required");
  }
  const std::string& target = request.target_path();
  struct stat st;
  if (lstat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError("stat", target, errno);
    if (options_.faults.count("unpublish-missing-target") > 0) {
      return absl::NotFoundError(absl::StrCat("target_path ", target, " does not exist"));
    }
    // Already unpublished. A block target whose unpublish stopped after removing it is still in
    // the index (the line goes last): finish that now.
    absl::StatusOr<BlockIndex> index = LoadIndex();
    if (!index.ok()) return index.status();
    auto entry = index->find(target);
    if (entry == index->end() || ParseMarker(entry->second).volume_id != request.volume_id()) {
      return absl::OkStatus();
    }
    return ForgetBlockTarget(*std::move(index), target, request.volume_id());
  }
  if (!S_ISDIR(st.st_mode)) return UnpublishBlock(request, st);
  const std::string marker_path = absl::StrCat(target, "/", kMarkerFile);
  std::string recorded;
  if (!ReadWholeFile(marker_path, &recorded)) {
    // Possibly a publish that failed half-way; remove only an empty directory, never foreign data.
    if (rmdir(target.c_str()) == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "target_path ", target, " was not published by this driver; leaving it untouched"));
  }
  Marker marker = ParseMarker(recorded);
  if (marker.volume_id != request.volume_id()) {
    return absl::NotFoundError(absl::StrCat("volume ", request.volume_id(),
                                            " is not published at ", target, " (volume ",
                                            marker.volume_id, " is)"));
  }
  for (const std::string& key : marker.keys) {
    absl::StatusOr<std::string> name = FileNameForKey(key);
    if (!name.ok()) continue;
    std::string path = absl::StrCat(target, "/", *name);
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove", path, errno);
  }
  const std::string tokens_path = absl::StrCat(target, "/", kTokensRecordFile);
  if (unlink(tokens_path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove", tokens_path, errno);
  }
  if (unlink(marker_path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove", marker_path, errno);
  }
  // What the pod wrote into the volume goes with it: the target directory is this driver's
  // volume, not a mount over one (found by a real kubelet, test/e2e/real-node.sh: a pod's file
  // left the directory non-empty and every NodeUnpublishVolume failed).
  if (absl::Status s = RemoveContents(target); !s.ok()) return s;
  if (rmdir(target.c_str()) != 0) return ErrnoError("remove directory", target, errno);
  return absl::OkStatus();
}

// Block volumes.

absl::StatusOr<std::string> NodeService::ImagePath(const std::string& volume_id) const {
  absl::StatusOr<std::string> name = ImageFileName(volume_id);
  if (!name.ok()) return name.status();
  return absl::StrCat(options_.data_dir, "/", *name);
}

std::string NodeService::IndexPath() const {
  return absl::StrCat(options_.data_dir, "/", kBlockIndexFile);
}

absl::StatusOr<std::string> NodeService::EnsureVolumeImage(const std::string& volume_id) {
  if (options_.data_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "block volume ", volume_id,
        ": this driver has no data directory for disk images (DriverOptions.data_dir)"));
  }
  absl::StatusOr<std::string> image = ImagePath(volume_id);
  if (!image.ok()) return image.status();
  if (absl::Status s = EnsureDataDir(options_.data_dir); !s.ok()) return s;
  if (absl::Status s = EnsureImage(*image); !s.ok()) return s;
  return image;
}

absl::StatusOr<BlockIndex> NodeService::LoadIndex() {
  if (options_.data_dir.empty()) return BlockIndex();
  return ReadBlockIndex(IndexPath());
}

std::optional<absl::StatusCode> ParseErrorCode(absl::string_view text) {
  for (int code = 1; code <= 16; ++code) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) == text) {
      return static_cast<absl::StatusCode>(code);
    }
  }
  return std::nullopt;
}

std::optional<BlockPublish> ParseBlockPublish(absl::string_view text) {
  if (text == "loop-bind") return BlockPublish::kLoopBind;
  if (text == "symlink") return BlockPublish::kSymlink;
  if (text == "file") return BlockPublish::kFile;
  return std::nullopt;
}

absl::Status NodeService::PublishBlock(const csi::v1::NodePublishVolumeRequest& request) {
  const std::string& target = request.target_path();
  const std::string& volume_id = request.volume_id();
  absl::StatusOr<BlockIndex> index = LoadIndex();
  if (!index.ok()) return index.status();
  const std::string fingerprint = Fingerprint(request);
  auto entry = index->find(target);
  if (entry != index->end() && entry->second != fingerprint) {
    return absl::AlreadyExistsError(
        absl::StrCat("target_path ", target, " is already published with other arguments (volume ",
                     ParseMarker(entry->second).volume_id, ")"));
  }
  // A target published just so is published again: every step below keeps what is done, so a
  // repeated call changes nothing and one after a failure finishes the job.
  const bool recorded = entry != index->end();
  if (!recorded) {
    if (!IsDirectory(Parent(target))) {
      return absl::FailedPreconditionError(
          absl::StrCat("parent directory of target_path ", target, " does not exist"));
    }
    // The target must be free, or an empty file, which holds nothing to lose.
    struct stat st;
    if (lstat(target.c_str(), &st) == 0) {
      std::string marker;
      if (S_ISDIR(st.st_mode) && ReadWholeFile(absl::StrCat(target, "/", kMarkerFile), &marker)) {
        return absl::AlreadyExistsError(
            absl::StrCat("target_path ", target, " is already published as a mount volume (volume ",
                         ParseMarker(marker).volume_id, ")"));
      }
      if (!S_ISREG(st.st_mode) || st.st_size != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "target_path ", target, " exists and was not published by this driver; leaving it "
            "untouched"));
      }
    } else if (errno != ENOENT) {
      return ErrnoError("stat", target, errno);
    }
  }
  absl::StatusOr<std::string> image = EnsureVolumeImage(volume_id);
  if (!image.ok()) return image.status();
  if (!recorded) {
    // Recorded before anything is made at the target: a publish that fails from here on leaves
    // a target that a retry completes and NodeUnpublishVolume undoes.
    (*index)[target] = fingerprint;
    if (absl::Status s = WriteBlockIndex(IndexPath(), *index); !s.ok()) return s;
  }

  if (!change_host_) {
    NDR_LOG(WARNING) << "NodePublishVolume " << volume_id << ": block target_path " << target
                     << " is a plain file, not a device (" << why_not_change_host_
                     << "; attaching a loop device and bind-mounting it needs root on the host), "
                        "so kubelet's mapping of it would fail on a real node";
    if (options_.faults.count("block-target-directory") > 0) {
      if (mkdir(target.c_str(), 0750) != 0 && errno != EEXIST) {
        return ErrnoError("create target directory", target, errno);
      }
      return absl::OkStatus();
    }
    return CreateTargetFile(target);
  }
  if (options_.block_publish == BlockPublish::kFile) {
    // The disk image itself at the target: a regular file, as the CSI spec allows ("make the
    // volume available at target_path"), but no device.
    if (hostutil::IsMountPoint(target)) return absl::OkStatus();  // Already published.
    if (absl::Status s = CreateTargetFile(target); !s.ok()) return s;
    if (absl::Status s = hostutil::BindMount(*image, target); !s.ok()) return s;
    NDR_LOG(INFO) << "Bind-mounted the disk image of volume " << volume_id << " at target_path "
                  << target;
    return absl::OkStatus();
  }
  // Readonly is recorded (it is part of the fingerprint), not enforced: a read-only remount of
  // the bind mount would not stop writes through the device node, and the loop device, shared by
  // every target of the volume, cannot be read-only for one of them.
  //
  // The loop device already attached to the image is reused (another target of the volume, or
  // an earlier try at this one).
  absl::StatusOr<std::optional<std::string>> found = hostutil::FindLoopDevice(*image);
  if (!found.ok()) return found.status();
  std::string device;
  if (found->has_value()) {
    device = **found;
  } else {
    absl::StatusOr<std::string> attached = hostutil::AttachLoopDevice(*image);
    if (!attached.ok()) return attached.status();
    device = *attached;
    NDR_LOG(INFO) << "Attached loop device " << device << " to disk image " << *image;
  }
  struct stat device_st;
  if (stat(device.c_str(), &device_st) != 0) return ErrnoError("stat", device, errno);
  if (options_.block_publish == BlockPublish::kSymlink) {
    char link[PATH_MAX + 1] = {};
    const ssize_t n = readlink(target.c_str(), link, PATH_MAX);
    if (n > 0 && std::string(link, n) == device) return absl::OkStatus();  // Already published.
    // What is there is ours (recorded above): an empty file, or a link to a device since detached.
    if (unlink(target.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("remove target", target, errno);
    }
    if (symlink(device.c_str(), target.c_str()) != 0) return ErrnoError("symlink", target, errno);
    NDR_LOG(INFO) << "Linked target_path " << target << " of volume " << volume_id
                  << " to loop device " << device;
    return absl::OkStatus();
  }
  struct stat target_st;
  if (lstat(target.c_str(), &target_st) == 0 && S_ISBLK(target_st.st_mode)) {
    if (target_st.st_rdev == device_st.st_rdev) return absl::OkStatus();  // Already published.
    // Our bind mount of a loop device that was detached since: the image has another one now.
    if (!hostutil::IsMountPoint(target)) {
      return absl::FailedPreconditionError(
          absl::StrCat("target_path ", target, " is a block device that is not ", device,
                       " and not mounted there by this driver; leaving it untouched"));
    }
    if (absl::Status s = hostutil::Unmount(target); !s.ok()) return s;
  }
  if (absl::Status s = CreateTargetFile(target); !s.ok()) return s;
  if (absl::Status s = hostutil::BindMount(device, target); !s.ok()) return s;
  NDR_LOG(INFO) << "Bind-mounted loop device " << device << " of volume " << volume_id
                << " at target_path " << target;
  return absl::OkStatus();
}

absl::Status NodeService::UnpublishBlock(const csi::v1::NodeUnpublishVolumeRequest& request,
                                         const struct stat& st) {
  const std::string& target = request.target_path();
  absl::StatusOr<BlockIndex> index = LoadIndex();
  if (!index.ok()) return index.status();
  auto entry = index->find(target);
  if (entry == index->end()) {
    // Possibly a publish that failed half-way; remove only an empty file that nothing is
    // mounted on, never foreign data.
    if (S_ISREG(st.st_mode) && st.st_size == 0 && !hostutil::IsMountPoint(target) &&
        unlink(target.c_str()) == 0) {
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "target_path ", target, " was not published by this driver; leaving it untouched"));
  }
  const std::string volume_id = ParseMarker(entry->second).volume_id;
  if (volume_id != request.volume_id()) {
    return absl::NotFoundError(absl::StrCat("volume ", request.volume_id(), " is not published at ",
                                            target, " (volume ", volume_id, " is)"));
  }
  if (hostutil::IsMountPoint(target)) {
    if (absl::Status s = hostutil::Unmount(target); !s.ok()) return s;
    NDR_LOG(INFO) << "Unmounted target_path " << target << " of volume " << volume_id;
  }
  if (unlink(target.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove target file", target, errno);
  }
  return ForgetBlockTarget(*std::move(index), target, volume_id);
}

absl::Status NodeService::ForgetBlockTarget(BlockIndex index, const std::string& target,
                                            const std::string& volume_id) {
  index.erase(target);
  // The line goes last: if the detach fails, a retried unpublish (of a target now gone) finds
  // the line and tries again.
  if (absl::Status s = ReleaseLoopDevice(volume_id, index); !s.ok()) return s;
  return WriteBlockIndex(IndexPath(), index);
}

absl::Status NodeService::ReleaseLoopDevice(const std::string& volume_id, const BlockIndex& index) {
  if (!change_host_ || options_.data_dir.empty()) return absl::OkStatus();
  for (const auto& [target, fingerprint] : index) {
    if (ParseMarker(fingerprint).volume_id == volume_id) return absl::OkStatus();  // Still used.
  }
  absl::StatusOr<std::string> image_path = ImagePath(volume_id);
  if (!image_path.ok()) return absl::OkStatus();  // an ID no image was ever made for
  const std::string& image = *image_path;
  std::set<std::string> detached;
  for (;;) {
    absl::StatusOr<std::optional<std::string>> device = hostutil::FindLoopDevice(image);
    if (!device.ok()) return device.status();
    if (!device->has_value()) return absl::OkStatus();
    if (!detached.insert(**device).second) {
      // LOOP_CLR_FD of a device that another process holds open only marks it: the kernel
      // detaches it at the last close.
      NDR_LOG(WARNING) << "Loop device " << **device << " of disk image " << image
                       << " is still open elsewhere; it is detached when it is closed";
      return absl::OkStatus();
    }
    if (absl::Status s = hostutil::DetachLoopDevice(**device); !s.ok()) return s;
    NDR_LOG(INFO) << "Detached loop device " << **device << " from disk image " << image;
  }
}

}  // namespace ndr::sample

namespace ndr::sample {

// After the mount: expansion, stats, health, tokens.

absl::StatusOr<std::string> NodeService::CapacityPath(const std::string& volume_id) const {
  if (options_.data_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "volume ", volume_id,
        ": this driver has no data directory to record capacities in (DriverOptions.data_dir)"));
  }
  absl::StatusOr<std::string> name = ImageFileName(volume_id);  // "<name>.img", no '/'
  if (!name.ok()) return name.status();
  return absl::StrCat(options_.data_dir, "/", name->substr(0, name->size() - 4), ".capacity");
}

grpc::Status NodeService::NodeExpandVolume(grpc::ServerContext*,
                                           const csi::v1::NodeExpandVolumeRequest* request,
                                           csi::v1::NodeExpandVolumeResponse* response) {
  if (options_.record) options_.record->Add("NodeExpandVolume", *request);
  NDR_LOG(INFO) << "NodeExpandVolume volume_id=" << request->volume_id()
                << " volume_path=" << request->volume_path()
                << " required_bytes=" << request->capacity_range().required_bytes()
                << " secrets=" << request->secrets().size() << " (values not logged)";
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<int64_t> capacity = Expand(*request);
  if (!capacity.ok()) {
    NDR_LOG(WARNING) << "NodeExpandVolume " << request->volume_id() << ": " << capacity.status();
    return ToGrpc(capacity.status());
  }
  response->set_capacity_bytes(*capacity);
  return grpc::Status::OK;
}

absl::StatusOr<int64_t> NodeService::Expand(const csi::v1::NodeExpandVolumeRequest& request) {
  if (request.volume_id().empty()) return absl::InvalidArgumentError("volume_id is required");
  if (request.volume_path().empty()) return absl::InvalidArgumentError("volume_path is required");
  const int64_t required = request.capacity_range().required_bytes();
  const int64_t limit = request.capacity_range().limit_bytes();
  if (required < 0 || limit < 0 || (limit > 0 && required > limit)) {
    return absl::OutOfRangeError(absl::StrCat("capacity_range [", required, ", ", limit,
                                              "] is not a range of sizes"));
  }
  struct stat st;
  if (lstat(request.volume_path().c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("volume_path ", request.volume_path(), " does not exist"));
  }
  const bool block = request.volume_capability().has_block() || !S_ISDIR(st.st_mode);
  if (block) {
    // The disk image grows (sparse); an attached loop device learns its new size.
    absl::StatusOr<std::string> image = ImagePath(request.volume_id());
    if (!image.ok()) return image.status();
    struct stat image_st;
    if (stat(image->c_str(), &image_st) != 0) {
      return absl::NotFoundError(absl::StrCat("block volume ", request.volume_id(),
                                              " has no disk image (", *image, ")"));
    }
    if (required <= image_st.st_size) return static_cast<int64_t>(image_st.st_size);
    if (truncate(image->c_str(), required) != 0) return ErrnoError("truncate", *image, errno);
    if (change_host_) {
      absl::StatusOr<std::optional<std::string>> device = hostutil::FindLoopDevice(*image);
      if (!device.ok()) return device.status();
      if (device->has_value()) {
        if (absl::Status s = hostutil::RefreshLoopDeviceCapacity(**device); !s.ok()) return s;
      }
    }
    NDR_LOG(INFO) << "Grew the disk image of block volume " << request.volume_id() << " to "
                  << required << " bytes";
    return required;
  }
  // A mount volume must be one this driver published (its marker), at that path.
  std::string marker;
  if (!ReadWholeFile(absl::StrCat(request.volume_path(), "/", kMarkerFile), &marker) ||
      ParseMarker(marker).volume_id != request.volume_id()) {
    return absl::NotFoundError(absl::StrCat("volume ", request.volume_id(),
                                            " is not published at ", request.volume_path()));
  }
  absl::StatusOr<std::string> path = CapacityPath(request.volume_id());
  if (!path.ok()) return path.status();
  if (absl::Status s = EnsureDataDir(options_.data_dir); !s.ok()) return s;
  std::string recorded;
  int64_t capacity = 0;
  if (ReadWholeFile(*path, &recorded)) {
    absl::SimpleAtoi(absl::StripAsciiWhitespace(recorded), &capacity);
  }
  if (required <= capacity) return capacity;  // never shrunk
  if (absl::Status s = WriteWholeFile(*path, absl::StrCat(required, "\n"), 0600); !s.ok()) return s;
  return required;
}

grpc::Status NodeService::NodeGetVolumeStats(grpc::ServerContext*,
                                             const csi::v1::NodeGetVolumeStatsRequest* request,
                                             csi::v1::NodeGetVolumeStatsResponse* response) {
  if (options_.record) options_.record->Add("NodeGetVolumeStats", *request);
  NDR_VLOG(4) << "NodeGetVolumeStats volume_id=" << request->volume_id()
              << " volume_path=" << request->volume_path();
  if (request->volume_id().empty()) return ToGrpc(absl::InvalidArgumentError("volume_id is required"));
  if (request->volume_path().empty()) {
    return ToGrpc(absl::InvalidArgumentError("volume_path is required"));
  }
  if (options_.faults.count("stats-internal") > 0) {
    // As a driver whose statistics tool is called wrongly (csi-digitalocean v4.16.0's
    // `blockdev getsize64`) answers.
    return ToGrpc(absl::InternalError(absl::StrCat(
        "failed to retrieve capacity statistics for volume path ", request->volume_path())));
  }
  absl::StatusOr<csi::v1::NodeGetVolumeStatsResponse> stats =
      Stats(request->volume_id(), request->volume_path());
  if (!stats.ok()) return ToGrpc(stats.status());
  *response = *std::move(stats);
  return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetVolumeHealth(grpc::ServerContext*,
                                              const csi::v1::NodeGetVolumeHealthRequest* request,
                                              csi::v1::NodeGetVolumeHealthResponse* response) {
  if (options_.record) options_.record->Add("NodeGetVolumeHealth", *request);
  NDR_VLOG(4) << "NodeGetVolumeHealth volume_id=" << request->volume_id()
              << " volume_publish_path=" << request->volume_publish_path()
              << " staging_target_path=" << request->staging_target_path();
  if (request->volume_id().empty()) {
    return ToGrpc(absl::InvalidArgumentError("volume_id is required"));
  }
  csi::v1::VolumeHealth* health = response->mutable_volume_health();
  health->set_volume_id(request->volume_id());
  if (options_.faults.count("volume-inaccessible") > 0) {
    auto* entry = health->add_health_statuses();
    entry->set_status(csi::v1::INACCESSIBLE);
    entry->set_reason("VolumeInaccessible");
    entry->set_message(absl::StrCat("volume ", request->volume_id(),
                                    " cannot be reached (the driver's volume-inaccessible fault)"));
    return grpc::Status::OK;
  }
  // The same judgement as the volume condition of NodeGetVolumeStats: at the publish path when
  // there is one (kubelet gives none for a block volume), else the block volume's disk image.
  const std::string& publish = request->volume_publish_path();
  if (!publish.empty()) {
    // Stats: NOT_FOUND when nothing of this volume is published there.
    absl::StatusOr<csi::v1::NodeGetVolumeStatsResponse> stats = Stats(request->volume_id(), publish);
    if (!stats.ok()) return ToGrpc(stats.status());
    if (stats->volume_condition().abnormal()) {
      auto* entry = health->add_health_statuses();
      entry->set_status(csi::v1::DEGRADED);
      entry->set_reason("PublishedFileMissing");
      entry->set_message(stats->volume_condition().message());
    }
    return grpc::Status::OK;
  }
  absl::StatusOr<std::string> image = ImagePath(request->volume_id());
  if (!image.ok()) return ToGrpc(image.status());
  if (access(image->c_str(), F_OK) != 0) {
    if (request->staging_target_path().empty()) {
      return ToGrpc(absl::NotFoundError(
          absl::StrCat("volume ", request->volume_id(), " is not known to this node")));
    }
    auto* entry = health->add_health_statuses();
    entry->set_status(csi::v1::INACCESSIBLE);
    entry->set_reason("DiskImageMissing");
    entry->set_message(absl::StrCat("the disk image of volume ", request->volume_id(), " is gone"));
  }
  return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetStorageHealth(grpc::ServerContext*,
                                               const csi::v1::NodeGetStorageHealthRequest* request,
                                               csi::v1::NodeGetStorageHealthResponse* response) {
  if (options_.record) options_.record->Add("NodeGetStorageHealth", *request);
  NDR_VLOG(4) << "NodeGetStorageHealth secrets=" << request->secrets_size() << " (values not logged)";
  if (options_.faults.count("storage-unreachable") > 0) {
    auto* entry = response->add_backend_health();
    entry->set_status(csi::v1::STORAGE_UNREACHABLE);
    entry->set_reason("DataDirUnreachable");
    entry->set_message(absl::StrCat("the data directory ", options_.data_dir, " cannot be reached"));
    return grpc::Status::OK;
  }
  // The data directory is made with the first volume: until then its parent's file system is
  // where it will be.
  std::string where = options_.data_dir;
  struct statfs fs;
  while (statfs(where.c_str(), &fs) != 0) {
    const size_t slash = where.find_last_of('/');
    if (errno != ENOENT || slash == std::string::npos || where == "/") {
      return ToGrpc(ErrnoError("statfs", where, errno));
    }
    where = slash == 0 ? "/" : where.substr(0, slash);
  }
  const unsigned percent = static_cast<unsigned>(options_.low_free_space_percent);
  if (fs.f_blocks > 0 && fs.f_bavail * 100 < fs.f_blocks * percent) {
    auto* entry = response->add_backend_health();
    entry->set_status(csi::v1::STORAGE_DEGRADED);
    entry->set_reason("LowFreeSpace");
    entry->set_message(absl::StrCat("less than ", percent, "% of ", options_.data_dir,
                                    "'s file system is free"));
  }
  return grpc::Status::OK;
}

absl::StatusOr<csi::v1::NodeGetVolumeStatsResponse> NodeService::Stats(
    const std::string& volume_id, const std::string& path) {
  csi::v1::NodeGetVolumeStatsResponse response;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("volume_path ", path, " does not exist"));
  }
  csi::v1::VolumeCondition* condition = response.mutable_volume_condition();
  if (!S_ISDIR(st.st_mode)) {
    // A block volume, asked about at its device: the disk image's size is its capacity.
    absl::StatusOr<std::string> image = ImagePath(volume_id);
    if (!image.ok()) return image.status();
    struct stat image_st;
    csi::v1::VolumeUsage* usage = response.add_usage();
    usage->set_unit(csi::v1::VolumeUsage::BYTES);
    if (stat(image->c_str(), &image_st) != 0) {
      condition->set_abnormal(true);
      condition->set_message(absl::StrCat("the disk image of block volume ", volume_id,
                                          " is gone"));
      return response;
    }
    usage->set_total(image_st.st_size);
    if (options_.faults.count("block-stats-of-dev") > 0) {
      // statfs of the device node's file system, as a driver that asks statfs of any path does.
      struct statfs dev;
      if (statfs("/dev", &dev) == 0) usage->set_total(static_cast<int64_t>(dev.f_blocks) * dev.f_frsize);
    }
    condition->set_message("the disk image is in place");
    return response;
  }
  std::string marker_text;
  if (!ReadWholeFile(absl::StrCat(path, "/", kMarkerFile), &marker_text) ||
      ParseMarker(marker_text).volume_id != volume_id) {
    return absl::NotFoundError(absl::StrCat("volume ", volume_id, " is not published at ", path));
  }
  struct statfs fs;
  if (statfs(path.c_str(), &fs) != 0) return ErrnoError("statfs", path, errno);
  // Used: the bytes of the files in the volume; capacity: what an expansion recorded, else the
  // file system's.
  int64_t used = 0;
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* entry = readdir(dir)) {
      struct stat file;
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (lstat(absl::StrCat(path, "/", name).c_str(), &file) == 0 && S_ISREG(file.st_mode)) {
        used += file.st_size;
      }
    }
    closedir(dir);
  }
  const int64_t fs_total = static_cast<int64_t>(fs.f_blocks) * fs.f_frsize;
  const int64_t fs_available = static_cast<int64_t>(fs.f_bavail) * fs.f_frsize;
  int64_t capacity = fs_total;
  std::string recorded;
  if (absl::StatusOr<std::string> capacity_path = CapacityPath(volume_id);
      capacity_path.ok() && ReadWholeFile(*capacity_path, &recorded)) {
    absl::SimpleAtoi(absl::StripAsciiWhitespace(recorded), &capacity);
  }
  csi::v1::VolumeUsage* bytes = response.add_usage();
  bytes->set_unit(csi::v1::VolumeUsage::BYTES);
  bytes->set_total(capacity);
  if (options_.faults.count("stats-used-over-capacity") > 0) used = capacity + 4096;
  bytes->set_used(used);
  bytes->set_available(std::max<int64_t>(0, std::min(capacity - used, fs_available)));
  csi::v1::VolumeUsage* inodes = response.add_usage();
  inodes->set_unit(csi::v1::VolumeUsage::INODES);
  inodes->set_total(static_cast<int64_t>(fs.f_files));
  inodes->set_available(static_cast<int64_t>(fs.f_ffree));
  inodes->set_used(static_cast<int64_t>(fs.f_files - fs.f_ffree));
  // Health: every file written at publish is still there.
  for (const std::string& key : ParseMarker(marker_text).keys) {
    absl::StatusOr<std::string> name = FileNameForKey(key);
    if (!name.ok()) continue;
    if (access(absl::StrCat(path, "/", *name).c_str(), F_OK) != 0) {
      condition->set_abnormal(true);
      condition->set_message(absl::StrCat("file ", *name, " written at publish is gone"));
      return response;
    }
  }
  condition->set_message("every file written at publish is in place");
  return response;
}

absl::StatusOr<std::string> NodeService::TokensRecord(const std::string& tokens_json) const {
  const nlohmann::json tokens = nlohmann::json::parse(tokens_json, nullptr, false);
  const auto bad = [] {
    return absl::InvalidArgumentError(
        absl::StrCat("volume_context ", kTokensKey,
                     " is not a JSON object of audience -> {\"token\", \"expirationTimestamp\"}"));
  };
  if (!tokens.is_object()) return bad();
  nlohmann::json record = nlohmann::json::object();
  for (const auto& [audience, status] : tokens.items()) {
    if (!status.is_object() || !status.contains("token") || !status["token"].is_string() ||
        !status.contains("expirationTimestamp") || !status["expirationTimestamp"].is_string()) {
      return bad();
    }
    nlohmann::json entry = {{"expirationTimestamp", status["expirationTimestamp"]}};
    if (options_.token_jwks.is_null()) {
      entry["verified"] = false;
      entry["error"] = "no JWKS to verify it with (--token-jwks)";
    } else {
      token::Expectations expect;
      expect.audience = audience;  // "" (the API server's audiences): not checked
      absl::StatusOr<nlohmann::json> claims =
          token::Verify(status["token"].get<std::string>(), options_.token_jwks, expect);
      entry["verified"] = claims.ok();
      if (claims.ok()) {
        entry["claims"] = *claims;
      } else {
        entry["error"] = std::string(claims.status().message());
      }
    }
    record[audience] = entry;
  }
  return record.dump(2) + "\n";
}

}  // namespace ndr::sample

#include "kubeletclient/csi/publisher.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/endpoint.h"
#include "google/protobuf/util/json_util.h"
#include "kubeletclient/util/files.h"
#include "kubeletclient/util/grpc_status.h"
#include "kubeletclient/objects/object_validation.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

using json = nlohmann::ordered_json;

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), length));
}

// vol_data.json is a few hundred bytes; anything much bigger was not written by us.
constexpr size_t kMaxVolDataBytes = 64 * 1024;

// mkdir -p with `mode` for the directories it creates.
absl::Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("failed to create dir ", prefix, ": ",
                                              strerror(errno)));
    }
    if (at == std::string::npos) return absl::OkStatus();
  }
}

// kubelet's supportsVolumeLifecycleMode, with its texts.
absl::Status SupportsMode(const std::string& driver, const std::string& mode,
                          const CsiDriverObject* object) {
  if (object == nullptr) {
    if (mode == "Persistent") return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "volume mode ", GoQuote(mode), " not supported by driver ", driver,
        " (no CSIDriver object)"));
  }
  const auto& modes = object->volume_lifecycle_modes;
  if (std::find(modes.begin(), modes.end(), mode) != modes.end()) return absl::OkStatus();
  std::vector<std::string> quoted;
  for (const std::string& m : modes) quoted.push_back(GoQuote(m));
  return absl::FailedPreconditionError(absl::StrCat("volume mode ", GoQuote(mode),
                                                    " not supported by driver ", driver,
                                                    " (only supports [", absl::StrJoin(quoted, " "),
                                                    "])"));
}

// kubelet's asCSIAccessModeV1 for a PV's first access mode.
csi::v1::VolumeCapability::AccessMode::Mode AccessMode(const std::string& mode) {
  using Mode = csi::v1::VolumeCapability::AccessMode;
  if (mode == "ReadOnlyMany") return Mode::MULTI_NODE_READER_ONLY;
  if (mode == "ReadWriteMany") return Mode::MULTI_NODE_MULTI_WRITER;
  if (mode == "ReadWriteOncePod") return Mode::SINGLE_NODE_SINGLE_WRITER;
  return Mode::SINGLE_NODE_WRITER;  // ReadWriteOnce, and kubelet's default
}

absl::StatusOr<std::map<std::string, std::string>> SecretData(const ObjectSet& objects,
                                                               const std::string& ns,
                                                               const std::string& name,
                                                               const std::string& pod_ns) {
  auto it = objects.secrets.find({ns, name});
  if (it != objects.secrets.end()) return it->second.data;
  std::string hint;
  for (const auto& [key, secret] : objects.secrets) {
    if (key.second == name) {
      hint = absl::StrCat(" (a Secret of that name exists in namespace \"", key.first,
                          "\", but secrets are looked up in the pod's namespace \"", pod_ns,
                          "\" only)");
    }
  }
  return absl::NotFoundError(absl::StrCat("fetching NodePublishSecretRef ", ns, "/", name,
                                          " failed: secret \"", name, "\" not found", hint));
}

}  // namespace

std::string EphemeralVolumeHandle(const std::string& pod_uid, const std::string& volume_name) {
  return "csi-" + Sha256Hex(pod_uid + volume_name);
}

std::string AttachmentName(const std::string& handle, const std::string& driver,
                           const std::string& node) {
  return "csi-" + Sha256Hex(handle + driver + node);
}

absl::StatusOr<std::vector<VolumePlan>> PlanVolumes(const Pod& pod, const ObjectSet& objects,
                                                    const DriverRegistry::Snapshot& drivers,
                                                    const NodeOptions& options) {
  std::vector<VolumePlan> plans;
  for (const PodVolume& volume : pod.volumes) {
    if (!volume.csi.has_value() && !volume.claim_name.has_value()) continue;
    const std::string where = absl::StrCat("volume \"", volume.name, "\": ");
    VolumePlan plan;
    plan.pod_volume = volume.name;
    std::string spec_name, handle, fs_type, access = "ReadWriteOnce";
    bool read_only = false;
    std::map<std::string, std::string> attributes;
    std::vector<std::string> mount_flags;
    std::optional<std::pair<std::string, std::string>> secret_ref;
    if (volume.csi.has_value()) {
      plan.mode = "Ephemeral";
      plan.driver = volume.csi->driver;
      spec_name = volume.name;
      handle = EphemeralVolumeHandle(pod.uid, volume.name);
      fs_type = volume.csi->fs_type;
      read_only = volume.csi->read_only;
      attributes = volume.csi->volume_attributes;
      if (volume.csi->node_publish_secret_name.has_value()) {
        secret_ref = std::make_pair(pod.ns, *volume.csi->node_publish_secret_name);
      }
    } else {
      auto claim = objects.claims.find({pod.ns, *volume.claim_name});
      if (claim == objects.claims.end()) {
        return absl::NotFoundError(absl::StrCat(where, "PersistentVolumeClaim ", pod.ns, "/",
                                                *volume.claim_name,
                                                " is not among the --objects"));
      }
      if (claim->second.volume_name.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, "PersistentVolumeClaim ", pod.ns, "/", *volume.claim_name,
            " is not bound (spec.volumeName is empty)"));
      }
      auto pv = objects.volumes.find(claim->second.volume_name);
      if (pv == objects.volumes.end()) {
        return absl::NotFoundError(absl::StrCat(where, "PersistentVolume ",
                                                claim->second.volume_name,
                                                " is not among the --objects"));
      }
      if (!pv->second.csi.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "PersistentVolume ", pv->first, " has no spec.csi: not a CSI volume"));
      }
      const PersistentVolume::Csi& csi = *pv->second.csi;
      plan.mode = "Persistent";
      plan.driver = csi.driver;
      spec_name = pv->first;  // kubelet names a PV's directory after the PV
      handle = csi.volume_handle;
      fs_type = csi.fs_type;
      read_only = volume.claim_read_only || csi.read_only;
      attributes = csi.volume_attributes;
      secret_ref = csi.node_publish_secret;
      mount_flags = pv->second.mount_options;
      if (!pv->second.access_modes.empty()) access = pv->second.access_modes[0];
    }

    auto object = objects.csi_drivers.find(plan.driver);
    const CsiDriverObject* csi_driver =
        object == objects.csi_drivers.end() ? nullptr : &object->second;
    if (absl::Status s = SupportsMode(plan.driver, plan.mode, csi_driver); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(where, s.message()));
    }
    if (plan.mode == "Ephemeral" && options.allowed_inline_drivers.count(plan.driver) == 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          where, "inline CSI volumes of driver ", plan.driver,
          " are not allowed on this node (allowed: [",
          absl::StrJoin(options.allowed_inline_drivers, " "), "]; see --allowed-inline-drivers)"));
    }
    auto registered = drivers.find(plan.driver);
    if (registered == drivers.end()) {
      return absl::NotFoundError(absl::StrCat(where, "driver name ", plan.driver,
                                              " not found in the list of registered CSI "
                                              "drivers"));
    }
    if (plan.mode == "Persistent" &&
        (csi_driver == nullptr || csi_driver->attach_required.value_or(true))) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, "driver ", plan.driver,
          " requires attaching volumes (its CSIDriver object does not say attachRequired: "
          "false); kubeletclient does not attach"));
    }
    plan.endpoint = registered->second.endpoint;

    absl::StatusOr<PodVolumePaths> paths = PodVolumePathsFor(options.root_dir, pod.uid, spec_name);
    if (!paths.ok()) {
      return absl::Status(paths.status().code(), where + std::string(paths.status().message()));
    }
    plan.paths = *std::move(paths);
    csi::v1::NodePublishVolumeRequest& request = plan.request;
    request.set_volume_id(handle);
    request.set_target_path(plan.paths.mount);
    auto* mount = request.mutable_volume_capability()->mutable_mount();
    mount->set_fs_type(fs_type);
    for (const std::string& flag : mount_flags) mount->add_mount_flags(flag);
    request.mutable_volume_capability()->mutable_access_mode()->set_mode(AccessMode(access));
    request.set_readonly(read_only);
    if (secret_ref.has_value()) {
      absl::StatusOr<std::map<std::string, std::string>> data =
          SecretData(objects, secret_ref->first, secret_ref->second, pod.ns);
      if (!data.ok()) return absl::Status(data.status().code(), where + std::string(data.status().message()));
      request.mutable_secrets()->insert(data->begin(), data->end());
    }
    auto& context = *request.mutable_volume_context();
    context.insert(attributes.begin(), attributes.end());
    const bool wants_pod_info = (csi_driver != nullptr && csi_driver->pod_info_on_mount.value_or(false)) ||
                                registered->second.requires_publish_pod.value_or(false);
    if (wants_pod_info) {
      // Overwrites whatever the pod put there: a pod can never claim another pod's identity.
      context[kPodNameKey] = pod.name;
      context[kPodNamespaceKey] = pod.ns;
      context[kPodUidKey] = pod.uid;
      context[kServiceAccountKey] = pod.service_account;
      context[kEphemeralKey] = plan.mode == "Ephemeral" ? "true" : "false";
    }
    plan.vol_data = {{"specVolID", spec_name},
                     {"volumeHandle", handle},
                     {"driverName", plan.driver},
                     {"nodeName", options.node_name},
                     {"attachmentID", AttachmentName(handle, plan.driver, options.node_name)},
                     {"volumeLifecycleMode", plan.mode}};
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string RedactedRequestJson(const csi::v1::NodePublishVolumeRequest& request) {
  csi::v1::NodePublishVolumeRequest redacted = request;
  for (auto& [key, value] : *redacted.mutable_secrets()) value = "(redacted)";
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(redacted, &text, options);
  return text;
}

namespace {

std::unique_ptr<csi::v1::Node::Stub> NodeStub(const std::string& endpoint) {
  absl::StatusOr<std::string> path = UnixSocketPath(endpoint, "CSI endpoint");
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return csi::v1::Node::NewStub(grpc::CreateCustomChannel(
      GrpcUnixTarget(path.ok() ? *path : endpoint), grpc::InsecureChannelCredentials(), args));
}

}  // namespace

absl::Status PreflightVolume(const VolumePlan& plan, const NodeOptions& options) {
  if (plan.mode != "Persistent") return absl::OkStatus();  // Ephemeral volumes are never staged.
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(options.timeout));
  csi::v1::NodeGetCapabilitiesResponse capabilities;
  grpc::Status status = NodeStub(plan.endpoint)->NodeGetCapabilities(&context, {}, &capabilities);
  if (!status.ok()) {
    return FromGrpc(status, absl::StrCat("volume \"", plan.pod_volume, "\": NodeGetCapabilities"));
  }
  for (const auto& capability : capabilities.capabilities()) {
    if (capability.rpc().type() == csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME) {
      return absl::UnimplementedError(absl::StrCat(
          "volume \"", plan.pod_volume, "\": driver ", plan.driver,
          " needs NodeStageVolume, which kubeletclient does not implement"));
    }
  }
  return absl::OkStatus();
}

absl::Status PublishVolume(const VolumePlan& plan, const NodeOptions& options) {
  // kubelet creates the volume directory (the parent of the mount point) and records the volume
  // there; the mount directory itself is the driver's.
  if (absl::Status s = MakeDirs(plan.paths.dir, 0750); !s.ok()) return s;
  json vol_data(plan.vol_data);
  if (absl::Status s = WriteFileAtomically(plan.paths.vol_data, vol_data.dump()); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("failed to save volume info data: ", s.message()));
  }
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(options.timeout));
  csi::v1::NodePublishVolumeResponse response;
  grpc::Status status = NodeStub(plan.endpoint)->NodePublishVolume(&context, plan.request, &response);
  return FromGrpc(status, "rpc NodePublishVolume");
}

absl::StatusOr<std::vector<UnpublishPlan>> PlanUnpublish(const std::string& root_dir,
                                                         const std::string& pod_uid) {
  absl::StatusOr<std::string> dir = PodCsiVolumesDir(root_dir, pod_uid);
  if (!dir.ok()) return dir.status();
  std::vector<std::string> names;
  if (DIR* d = opendir(dir->c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::vector<UnpublishPlan> plans;
  for (const std::string& name : names) {
    UnpublishPlan plan;
    absl::StatusOr<PodVolumePaths> paths = PodVolumePathsFor(root_dir, pod_uid, name);
    if (!paths.ok()) return paths.status();
    plan.paths = *std::move(paths);
    std::string text;
    if (absl::Status s = ReadFileUpTo(plan.paths.vol_data, kMaxVolDataBytes, &text); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("unmounter failed to load volume data file [",
                                                 plan.paths.dir, "]: ", s.message()));
    }
    json data = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!data.is_object() || !data["volumeHandle"].is_string() ||
        !data["driverName"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          plan.paths.vol_data,
          ": malformed: want a JSON object with string volumeHandle and driverName"));
    }
    plan.driver = data["driverName"];
    plan.handle = data["volumeHandle"];
    FieldErrors errors;
    ValidateCsiDriverName(plan.driver, "driverName", &errors);
    ValidateVolumeHandle(plan.handle, "volumeHandle", &errors);
    if (absl::Status s = errors.ToStatus(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(plan.paths.vol_data, ": ", s.message()));
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

absl::Status UnpublishVolume(const UnpublishPlan& plan, const DriverRegistry::Snapshot& drivers,
                             const NodeOptions& options) {
  auto registered = drivers.find(plan.driver);
  if (registered == drivers.end()) {
    return absl::NotFoundError(absl::StrCat("driver name ", plan.driver,
                                            " not found in the list of registered CSI drivers"));
  }
  csi::v1::NodeUnpublishVolumeRequest request;
  request.set_volume_id(plan.handle);
  request.set_target_path(plan.paths.mount);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(options.timeout));
  csi::v1::NodeUnpublishVolumeResponse response;
  grpc::Status status =
      NodeStub(registered->second.endpoint)->NodeUnpublishVolume(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "rpc NodeUnpublishVolume");
  // As kubelet's removeMountDir: the (now empty) mount dir, the volume data, the volume dir.
  rmdir(plan.paths.mount.c_str());
  unlink(plan.paths.vol_data.c_str());
  if (rmdir(plan.paths.dir.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("remove ", plan.paths.dir, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

#include "kubeletclient/csi/csi_mounter.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/go_quote.h"
#include "kubeletclient/csi/operation_error.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
bool SupportsFsGroup(const VolumePlan& plan) {
  if (!plan.fs_group.has_value() || plan.fs_group_policy == "None" || plan.read_only) return false;
  if (plan.fs_group_policy == "File") return true;
  // ReadWriteOnceWithFSType: an fs type, and ReadWriteOnce among the PV's access modes (inline
  // volumes are mounted ReadWriteOnce).
  return !plan.capability.fs_type.empty() && plan.access_modes_include_rwo;
}

namespace {

// SetVolumeOwnership's change of the file `fd` (O_PATH | O_NOFOLLOW) and, for a directory,
// everything below it, through descriptors: each entry is opened by its name in its directory's
// descriptor without following it, and changed through its own descriptor, so that an entry
// swapped for a symbolic link during the walk is never followed. The errno of the first failure,
// or 0.
int ChangeOwnership(int fd, gid_t group, mode_t mask) {
  struct stat st;
  if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return errno;
  if (fchownat(fd, "", static_cast<uid_t>(-1), group, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return errno;
  }
  if (S_ISLNK(st.st_mode)) return 0;  // chmod would follow it
  mode_t mode = (st.st_mode & 07777) | mask;
  if (S_ISDIR(st.st_mode)) mode |= S_ISGID | 0110;
  // /proc/self/fd/N leads to the file opened, not to whatever its name means now.
  if (chmod(FdPath(fd).c_str(), mode) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return 0;
  const int listing = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) return errno;
  DIR* dir = fdopendir(listing);
  if (dir == nullptr) {
    const int err = errno;
    close(listing);
    return err;
  }
  int failure = 0;
  while (failure == 0) {
    errno = 0;
    const dirent* entry = readdir(dir);
    if (entry == nullptr) {
      failure = errno;
      break;
    }
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    UniqueFd child(openat(dirfd(dir), entry->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!child.valid()) {
      if (errno == ENOENT) continue;  // removed since it was listed
      failure = errno;
      break;
    }
    failure = ChangeOwnership(child.get(), group, mask);
  }
  closedir(dir);
  return failure;
}

}  // namespace

absl::Status SetVolumeOwnership(const std::string& dir, int64_t fs_group, bool read_only) {
  return SetVolumeOwnership("", dir, fs_group, read_only);
}

absl::Status SetVolumeOwnership(const std::string& root, const std::string& dir,
                                int64_t fs_group, bool read_only) {
  UniqueFd top;
  std::string relative;
  if (!root.empty() && absl::StartsWith(dir, root + "/")) {
    absl::StatusOr<UniqueFd> root_fd = OpenRoot(root);
    if (!root_fd.ok()) {
      return absl::InternalError(absl::StrCat("applyFSGroup failed for vol ", dir, ": ",
                                              root_fd.status().message()));
    }
    absl::StatusOr<UniqueFd> opened =
        OpenBeneath(root_fd->get(), dir.substr(root.size() + 1), O_PATH);
    if (!opened.ok()) {
      return absl::InternalError(absl::StrCat("applyFSGroup failed for vol ", dir, ": ",
                                              opened.status().message()));
    }
    top = *std::move(opened);
  } else {
    top = UniqueFd(open(dir.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!top.valid()) {
      return absl::InternalError(
          absl::StrCat("applyFSGroup failed for vol ", dir, ": ", strerror(errno)));
    }
  }
  const int failure = ChangeOwnership(top.get(), static_cast<gid_t>(fs_group),
                                      read_only ? 0440 : 0660);
  if (failure != 0) {
    return absl::InternalError(
        absl::StrCat("applyFSGroup failed for vol ", dir, ": ", strerror(failure)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ServiceAccountTokenAttr(
    const VolumePlan& plan, token::TokenManager* tokens, std::vector<std::string>* notes) {
  if (plan.token_requests.empty()) return std::optional<std::string>();
  if (tokens == nullptr) {
    return absl::FailedPreconditionError(
        "failed to fetch token: no service-account signing key (--service-account-key-file)");
  }
  // map[string]TokenRequestStatus through encoding/json: keys sorted, HTML-escaped strings.
  std::map<std::string, token::TokenManager::Result> by_audience;
  for (const TokenRequest& request : plan.token_requests) {
    token::BoundTokenRequest bound;
    bound.ns = plan.pod_namespace;
    bound.service_account = plan.service_account;
    if (!request.audience.empty()) bound.audiences = {request.audience};
    bound.expiration_seconds = request.expiration_seconds;
    bound.pod_name = plan.pod_name;
    bound.pod_uid = plan.pod_uid;
    absl::StatusOr<token::TokenManager::Result> got = tokens->Get(bound);
    if (!got.ok()) return got.status();
    if (notes != nullptr) {
      notes->push_back(absl::StrCat(
          "service-account token for audience ", GoQuote(request.audience), ": ",
          got->reused ? "reused from kubelet's token cache" : "requested", ", expires ",
          absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", got->token.expiration, absl::UTCTimeZone()),
          " (", got->token.expiration_seconds, " s after it was issued)"));
    }
    by_audience[request.audience] = *std::move(got);
  }
  std::string out = "{";
  for (const auto& [audience, result] : by_audience) {
    if (out.size() > 1) out += ",";
    AppendGoJsonString(audience, GoJsonStyle::kEncodingJson, &out);
    out += ":{\"token\":";
    AppendGoJsonString(result.token.token, GoJsonStyle::kEncodingJson, &out);
    out += ",\"expirationTimestamp\":";
    AppendGoJsonString(
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", result.token.expiration, absl::UTCTimeZone()),
        GoJsonStyle::kEncodingJson, &out);
    out += "}";
  }
  out += "}";
  return std::optional<std::string>(out);
}

absl::Status SetUp(const VolumePlan& plan, CsiNodeClient* client, token::TokenManager* tokens,
                   std::vector<std::string>* notes) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("MountVolume.SetUp", plan.spec_name, status);
  };
  std::string staging_path;
  if (plan.mode == "Persistent") {
    absl::StatusOr<bool> stage = client->NodeSupportsStageUnstage();
    if (!stage.ok()) {
      return failed(absl::Status(stage.status().code(),
                                 absl::StrCat("kubernetes.io/csi: mounter.SetUpAt failed to check "
                                              "for STAGE_UNSTAGE_VOLUME capability: ",
                                              stage.status().message())));
    }
    if (*stage) staging_path = plan.device->globalmount;
  }
  if (absl::Status s = MakeDirsUnder(plan.paths.root, plan.paths.dir, 0750); !s.ok()) {
    return failed(s);
  }
  StringMap volume_context = plan.volume_context;
  absl::StatusOr<std::optional<std::string>> token_attr =
      ServiceAccountTokenAttr(plan, tokens, notes);
  if (!token_attr.ok()) {
    return failed(absl::Status(token_attr.status().code(),
                               absl::StrCat("kubernetes.io/csi: mounter.SetUpAt failed to get "
                                            "service accoount token attributes: ",
                                            token_attr.status().message())));
  }
  // mergeMap: the tokens into the volume context, or (v1.35+, the CSIDriver's
  // serviceAccountTokenInSecrets) into the secrets, over a key of the same name.
  StringMap secrets = plan.publish_secrets;
  if (token_attr->has_value()) {
    (plan.tokens_in_secrets ? secrets : volume_context)[kServiceAccountTokensKey] = **token_attr;
    if (plan.tokens_in_secrets) {
      notes->push_back(
          "service-account tokens: in NodePublishVolume's secrets, as the CSIDriver's "
          "serviceAccountTokenInSecrets asks (kubelet 1.35+)");
    }
  }
  CapabilityArgs capability = plan.capability;
  absl::StatusOr<bool> mount_group = client->NodeSupportsVolumeMountGroup();
  if (!mount_group.ok()) {
    return failed(absl::Status(mount_group.status().code(),
                               absl::StrCat("kubernetes.io/csi: mounter.SetUpAt failed to "
                                            "determine if the node service has "
                                            "VOLUME_MOUNT_GROUP capability: ",
                                            mount_group.status().message())));
  }
  if (*mount_group) capability.mount_group = plan.fs_group;
  // vol_data.json before the call, so that a volume the driver did publish can be torn down.
  absl::Status status = SaveVolData(plan.paths.root, plan.paths.vol_data, plan.vol_data);
  if (status.ok()) {
    csi::v1::NodePublishVolumeRequest sent;
    status = client->NodePublishVolume(plan.handle, plan.read_only, staging_path, plan.paths.mount,
                                       capability, plan.publish_context, volume_context,
                                       secrets, &sent);
  }
  if (!status.ok()) {
    if (IsFinalError(status)) {
      if (absl::Status cleanup = RemoveMountDir(plan.paths.mount); !cleanup.ok()) {
        return failed(absl::Status(status.code(), absl::StrCat(status.message(), "; cleaning up: ",
                                                               cleanup.message())));
      }
    }
    return failed(status);
  }
  if (!*mount_group && SupportsFsGroup(plan)) {
    if (absl::Status s =
            SetVolumeOwnership(plan.paths.root, plan.paths.mount, *plan.fs_group, plan.read_only);
        !s.ok()) {
      return failed(s);
    }
  }
  return absl::OkStatus();
}

absl::Status TearDown(const PodVolumePaths& paths, const VolumeRef& ref,
                      const std::string& spec_name, CsiNodeClient* client) {
  auto failed = [&](const absl::Status& status) {
    return OperationFailed("UnmountVolume.TearDown", spec_name, status);
  };
  if (absl::Status s = client->NodeUnpublishVolume(ref.handle, paths.mount); !s.ok()) {
    return failed(absl::Status(s.code(), absl::StrCat("kubernetes.io/csi: Unmounter.TearDownAt "
                                                      "failed: ", s.message())));
  }
  if (absl::Status s = RemoveMountDir(paths.mount); !s.ok()) {
    return failed(absl::Status(s.code(), absl::StrCat("kubernetes.io/csi: Unmounter.TearDownAt "
                                                      "failed to clean mount dir [",
                                                      paths.mount, "]: ", s.message())));
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet

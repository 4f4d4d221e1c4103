// <mode>/tokens, republish, stats, expand: what follows the mount (judge.h).
#include "kubeletclient/sanity/judge.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/csi_block.h"
#include "kubeletclient/csi/csi_mounter.h"
#include "kubeletclient/csi/expander.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet::sanity {

namespace {

// What contradicts itself in `stats`: negative numbers, more used or available than capacity.
std::vector<std::string> InconsistentStats(const VolumeStats& stats) {
  std::vector<std::string> problems;
  auto negative = [&](const char* what, int64_t v) {
    if (v < 0) problems.push_back(absl::StrCat(what, " is negative (", v, ")"));
  };
  negative("capacity", stats.capacity);
  negative("available", stats.available);
  negative("used", stats.used);
  negative("inodes", stats.inodes);
  negative("inodes free", stats.inodes_free);
  negative("inodes used", stats.inodes_used);
  if (stats.capacity > 0 && stats.used > stats.capacity) {
    problems.push_back(absl::StrCat("used (", stats.used, " bytes) is more than capacity (",
                                    stats.capacity, " bytes)"));
  }
  if (stats.capacity > 0 && stats.available > stats.capacity) {
    problems.push_back(absl::StrCat("available (", stats.available,
                                    " bytes) is more than capacity (", stats.capacity,
                                    " bytes)"));
  }
  if (stats.inodes > 0 && stats.inodes_used > stats.inodes) {
    problems.push_back(absl::StrCat("inodes used (", stats.inodes_used,
                                    ") is more than inodes (", stats.inodes, ")"));
  }
  return problems;
}

// The size of the block device at `path`; nullopt when it is not one (kubelet mapped nothing
// there: no host changes, or a target that is not a device, which the target check judges) or its
// size cannot be read.
std::optional<int64_t> DeviceSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return std::nullopt;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uint64_t bytes = 0;
  const bool ok = ioctl(fd, BLKGETSIZE64, &bytes) == 0;
  close(fd);
  return ok ? std::optional<int64_t>(static_cast<int64_t>(bytes)) : std::nullopt;
}

}  // namespace

void Judge::JudgeTokens(const std::string& name, const CsiDriverObject& csi_driver, bool block,
                        const PodRun& a) {
  const std::string tokens_ref =
      "csi_mounter.go podServiceAccountTokenAttrs: a token per audience of the CSIDriver's "
      "tokenRequests in NodePublishVolume's volume context (from kubelet 1.35, in its secrets "
      "when the CSIDriver sets serviceAccountTokenInSecrets)";
  if (csi_driver.token_requests.empty()) {
    Skip(name, tokens_ref, "the CSIDriver asks for no tokens (spec.tokenRequests)");
  } else if (block) {
    Skip(name, tokens_ref, "kubelet hands tokens to filesystem volumes only");
  } else {
    // The publish that just passed carried them: say which.
    std::vector<std::string> audiences;
    const SentCall* publish = LastCall(a.publish.calls, "NodePublishVolume");
    const auto* request =
        publish == nullptr
            ? nullptr
            : dynamic_cast<const csi::v1::NodePublishVolumeRequest*>(publish->request.get());
    const bool in_secrets = a.plan->tokens_in_secrets;
    if (request != nullptr &&
        (in_secrets ? request->secrets() : request->volume_context())
                .count(kServiceAccountTokensKey) > 0) {
      const nlohmann::json attr = nlohmann::json::parse(
          (in_secrets ? request->secrets() : request->volume_context())
              .at(kServiceAccountTokensKey),
          nullptr, false);
      if (attr.is_object()) {
        for (const auto& [audience, token] : attr.items()) audiences.push_back(audience);
      }
    }
    Pass(name, tokens_ref,
         absl::StrCat("NodePublishVolume with tokens for [", absl::StrJoin(audiences, ", "),
                      "] in its ", in_secrets ? "secrets" : "volume context", " accepted"));
  }
}

void Judge::JudgeRepublish(const std::string& name, const CsiDriverObject& csi_driver,
                           bool block, const PodRun& a) {
  const std::string republish_ref =
      "csi_plugin.go RequiresRemount and the reconciler's remount on every pod sync: SetUp "
      "(NodePublishVolume, with fresh tokens) again";
  if (!csi_driver.requires_republish) {
    Skip(name, republish_ref, "the CSIDriver does not set requiresRepublish");
  } else if (Interrupted()) {
    Skip(name, republish_ref, "interrupted");
  } else if (Selected(name)) {
    std::vector<SentCall> calls;
    CsiNodeClient client(driver_.endpoint, node_.timeout, &calls);
    absl::Status s = block ? MapPodDevice(*a.plan, &client) : SetUp(*a.plan, &client, node_.tokens);
    if (!s.ok()) {
      std::vector<std::string> details;
      if (!calls.empty()) details.push_back("request: " + Describe(calls.back()));
      details.push_back(absl::StrCat("answer: ", s.message()));
      details.push_back("kubelet needs OK: the driver asked to be published again");
      Fail(name, republish_ref, "publishing again failed", details);
    } else {
      Pass(name, republish_ref, CallSummary(calls) + " again: OK");
    }
  }
}

void Judge::JudgeVolumeHealth(const std::string& name, const PodRun& a, bool block) {
  const std::string kubelet =
      "volumehealth/manager.go probeVolumeHealth, cache/volume_health.go volumeHealthPaths "
      "(kubelet 1.37, with CSIVolumeHealth): NodeGetVolumeHealth with the device mount path as "
      "staging path (volumeDevices/<pv>/dev for block) and the pod's mount path as publish path "
      "(none for block); the answer goes to the pod's status.volumeHealth";
  if (!node_.release.Has(ReleaseBehaviour::kVolumeHealthManager)) {
    Skip(name, kubelet,
         absl::StrCat("kubelet ", node_.release.Name(),
                      " does not call NodeGetVolumeHealth (from 1.37, with CSIVolumeHealth)"));
    return;
  }
  if (Interrupted()) {
    Skip(name, kubelet, "interrupted");
    return;
  }
  if (!Selected(name)) return;
  std::vector<SentCall> calls;
  CsiNodeClient client(driver_.endpoint, node_.timeout, &calls);
  absl::StatusOr<bool> supported = client.NodeSupportsVolumeHealth();
  if (!supported.ok()) {
    Fail(name, kubelet, "NodeGetCapabilities failed", {std::string(supported.status().message())});
    return;
  }
  if (!*supported) {
    Skip(name, kubelet, "the driver lacks the GET_VOLUME_HEALTH node capability");
    return;
  }
  const VolumePlan& plan = *a.plan;
  const std::string staging = block                   ? plan.block->global_map
                              : plan.device.has_value() ? plan.device->globalmount
                                                        : "";
  const std::string publish = block ? "" : plan.paths.mount;
  absl::StatusOr<std::vector<HealthCondition>> conditions =
      client.NodeGetVolumeHealth(plan.handle, staging, publish);
  if (!conditions.ok() && !node_.feature_gates.csi_volume_health) {
    // A default kubelet 1.37 never asks: not a failure of the driver's here.
    Skip(name, kubelet,
         absl::StrCat("NodeGetVolumeHealth failed (", conditions.status().message(),
                      "), but kubelet asks only with CSIVolumeHealth on (alpha, off by default): "
                      "--feature-gates=CSIVolumeHealth=true judges it"));
    return;
  }
  if (!conditions.ok()) {
    const SentCall* sent = LastCall(calls, "NodeGetVolumeHealth");
    Fail(name, kubelet, "NodeGetVolumeHealth failed",
         {sent != nullptr ? "request: " + Describe(*sent) : "request: NodeGetVolumeHealth (not sent)",
          absl::StrCat("answer: ", conditions.status().message()),
          "kubelet needs OK for a volume it has mounted: on an error it keeps the pod's previous "
          "health conditions, so the volume's trouble never reaches the pod's status"});
    return;
  }
  std::vector<std::string> described;
  for (const HealthCondition& c : *conditions) described.push_back(c.status + "/" + c.reason);
  Pass(name, kubelet,
       absl::StrCat("NodeGetVolumeHealth: ",
                    described.empty() ? "no adverse condition" : absl::StrJoin(described, ", "),
                    node_.feature_gates.csi_volume_health
                        ? ""
                        : " (kubelet asks only with CSIVolumeHealth on, an alpha gate)"));
}

void Judge::JudgeStats(const std::string& stats_name, const PodRun& a, bool block,
                       int64_t pv_bytes) {
  const std::string stats_ref =
      "csi_metrics.go GetMetrics, csi_client.go NodeGetVolumeStats: the pod's mount directory, "
      "for block volumeDevices/<pv>/dev/<pod uid>; no staging path";
  const std::string stats_path = block ? a.plan->block->global_map_pod : a.plan->paths.mount;
  if (Interrupted()) {
    Skip(stats_name, stats_ref, "interrupted");
  } else if (!stats_) {
    Skip(stats_name, stats_ref, "the driver lacks the GET_VOLUME_STATS node capability");
  } else if (block && !Exists(stats_path)) {
    SkipNeedsRoot(
        stats_name, stats_ref,
        absl::StrCat(stats_path, " does not exist: kubelet's MapBlockVolume was skipped (",
                     node_.host_skip_reason.empty() ? "not root" : node_.host_skip_reason, ")"));
  } else if (Selected(stats_name)) {
    std::vector<SentCall> calls;
    CsiNodeClient client(driver_.endpoint, node_.timeout, &calls);
    absl::StatusOr<VolumeStats> stats =
        client.NodeGetVolumeStats(a.plan->handle, stats_path, false);
    if (!stats.ok()) {
      const SentCall* sent = LastCall(calls, "NodeGetVolumeStats");
      Fail(stats_name, stats_ref, "NodeGetVolumeStats failed",
           {sent != nullptr ? "request: " + Describe(*sent)
                            : absl::StrCat("request: NodeGetVolumeStats of volume ",
                                           a.plan->handle, " at ", stats_path, " (not sent)"),
            absl::StrCat("answer: ", stats.status().message())});
    } else {
      std::vector<std::string> problems = InconsistentStats(*stats);
      const size_t consistency_problems = problems.size();
      if (block) {
        // What a CO shows as the size of a block volume is the capacity reported here; the
        // device kubelet mapped has a definite size.
        if (std::optional<int64_t> size = DeviceSize(stats_path);
            size.has_value() && stats->capacity > 0 && stats->capacity != *size) {
          problems.push_back(absl::StrCat(
              "capacity (", stats->capacity, " bytes) is not the size of the device at ",
              stats_path, " (", *size, " bytes): a CO would show ", stats->capacity,
              " bytes as this volume's size"));
        }
      }
      const std::string numbers =
          absl::StrCat("capacity ", stats->capacity, ", available ", stats->available, ", used ",
                       stats->used, " bytes; inodes ", stats->inodes, ", free ", stats->inodes_free,
                       ", used ", stats->inodes_used);
      if (!problems.empty()) {
        problems.insert(problems.begin(), absl::StrCat("answer: ", numbers));
        if (const SentCall* sent = LastCall(calls, "NodeGetVolumeStats"); sent != nullptr) {
          problems.insert(problems.begin(), "request: " + Describe(*sent));
        }
        problems.push_back(
            "kubelet exports these as kubelet_volume_stats_* and evicts and alerts on them");
        Fail(stats_name, stats_ref,
             consistency_problems > 0 ? "the volume's statistics contradict themselves"
                                      : "the volume's capacity is not the size of its device",
             problems);
      } else if (!block && pv_bytes > 0 && stats->capacity != pv_bytes) {
        // Not a fault by itself: mkfs takes its share, and a directory on a shared file
        // system without quotas has that file system's capacity. But say what users will see.
        Pass(stats_name, stats_ref,
             absl::StrCat(numbers, " (a CO shows this capacity for a volume of ", pv_bytes,
                          " bytes: ", stats->capacity > pv_bytes ? "more" : "less",
                          " than its PV's)"));
      } else {
        Pass(stats_name, stats_ref, numbers);
      }
    }
  }
}

void Judge::JudgeExpand(const std::string& expand_name, const PodRun& a, const std::string& pv_name,
                        const ObjectSet& objects) {
  const std::string expand_ref =
      "operation_generator.go GenerateExpandInUseVolumeFunc, expander.go NodeExpand: "
      "NodeExpandVolume with the volume path and the staging path";
  if (Interrupted()) {
    Skip(expand_name, expand_ref, "interrupted");
  } else if (!expands_) {
    Skip(expand_name, expand_ref, "the driver lacks the EXPAND_VOLUME node capability");
  } else if (!expansion_allowed_) {
    Skip(expand_name, expand_ref,
         absl::StrCat("StorageClass ", storage_class_->name,
                      " does not set allowVolumeExpansion: the API server refuses to grow its "
                      "claims, so kubelet never expands its volumes"));
  } else if (Selected(expand_name)) {
    // The PV grown to twice its size, as the external-resizer leaves it for kubelet.
    ObjectSet grown = objects;
    PersistentVolume& pv = grown.volumes.at(pv_name);
    const int64_t new_size = 2 * pv.capacity->value();
    pv.capacity = Quantity::FromValue(new_size, Quantity::Format::kBinarySi);
    NodeOptions node = node_;
    node.publishes = false;
    PodPlan plan = PlanVolumes(a.pod, grown, registry_.All(), node);
    std::vector<VolumePlan*> volumes = plan.ToPublish();
    if (volumes.size() != 1) {
      Fail(expand_name, expand_ref, "kubelet would not expand this volume",
           {std::string(plan.FirstError().message())});
    } else {
      std::vector<SentCall> calls;
      CsiNodeClient client(driver_.endpoint, node_.timeout, &calls);
      ExpansionOutcome expansion = ExpandInUseVolume(*volumes[0], grown, node, a.pod.ns, &client);
      const SentCall* sent = LastCall(calls, "NodeExpandVolume");
      if (!expansion.status.ok()) {
        std::vector<std::string> details;
        if (sent != nullptr) details.push_back("request: " + Describe(*sent));
        details.push_back(absl::StrCat("answer: ", expansion.status.message()));
        details.push_back("kubelet needs OK (or FAILED_PRECONDITION: not while in use)");
        Fail(expand_name, expand_ref, "online expansion failed", details);
      } else if (!expansion.not_expanded.empty()) {
        Pass(expand_name, expand_ref,
             absl::StrCat("not expanded, which kubelet accepts: ", expansion.not_expanded));
      } else {
        Pass(expand_name, expand_ref,
             absl::StrCat("NodeExpandVolume to ", pv.capacity->String(), " answered OK"));
      }
    }
  }
}

}  // namespace ndr::kubelet::sanity

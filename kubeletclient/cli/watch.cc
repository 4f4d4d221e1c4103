#include "kubeletclient/cli/watch.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gflags/gflags.h"
#include "kubeletclient/features/kubelet_releases.h"
#include "kubeletclient/objects/k8s_objects.h"
#include "logging/logging.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/watch.h"

DEFINE_string(node_status_file, "", "JSON file with the node's CSI status. Required.");
DECLARE_string(objects);

namespace ndr::kubelet::cli {
namespace {

int Run() {
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("watch");
  if (!handshake.ok()) return Fail(handshake.status().message());
  if (FLAGS_node_status_file.empty()) return Fail("watch: --node-status-file is required");
  WatchOptions options;
  options.plugin_registry_dir = FLAGS_plugin_registry_dir;
  options.node_status_file = FLAGS_node_status_file;
  options.node_name = NodeNameFromFlags();
  options.handshake = handshake->timeouts;
  options.csi = handshake->csi;
  const KubeletRelease release = handshake->releases.front();
  absl::StatusOr<FeatureGates> gates = ParseFeatureGatesAt(FLAGS_feature_gates, release.minor);
  if (!gates.ok()) return Fail(absl::StrCat("--feature-gates: ", gates.status().message()));
  // The CSIDrivers (the rest of --objects is not watch's): kubelet's CSINode updater asks a
  // driver's NodeGetInfo again every nodeAllocatableUpdatePeriodSeconds.
  ObjectSet objects;
  for (absl::string_view path : absl::StrSplit(FLAGS_objects, ',', absl::SkipWhitespace())) {
    if (absl::Status s = ReadObjects(std::string(path), &objects); !s.ok()) {
      return Fail(absl::StrCat("--objects: ", s.message()));
    }
  }
  for (const auto& [name, driver] : objects.csi_drivers) {
    if (!driver.node_allocatable_update_period_seconds.has_value()) continue;
    if (!gates->mutable_csi_node_allocatable_count) {
      NDR_LOG(INFO) << "CSIDriver " << name << " sets nodeAllocatableUpdatePeriodSeconds, but "
                    << "kubelet " << release.Name() << " does not update the CSINode on a period "
                    << "(MutableCSINodeAllocatableCount is off)";
      continue;
    }
    options.allocatable_update_periods[name] =
        absl::Seconds(*driver.node_allocatable_update_period_seconds);
  }
  BlockTerminationSignals();
  if (absl::Status s = RunWatch(options); !s.ok()) return Fail(s.message());
  return 0;
}

}  // namespace

Command Watch() {
  return {"watch",
          "kubeletclient watch --plugin-registry-dir=DIR --node-status-file=FILE "
          "[--node-name=NAME] [--kubelet-version=1.N] [--objects=CSIDRIVERS] "
          "[--feature-gates=...]",
          WithHandshakeFlags({"plugin_registry_dir", "node_status_file", "node_name", "objects",
                              "feature_gates"}),
          &Run};
}

}  // namespace ndr::kubelet::cli

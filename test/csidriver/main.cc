// sample-csi-driver: a small real CSI node plugin on a unix socket. See sample_driver.h.
#include <limits.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "absl/strings/str_split.h"
#include "api/endpoint.h"
#include "api/go_flag_usage.h"
#include "gflags/gflags.h"
#include "logging/logging.h"
#include "program/shipped.h"
#include "test/csidriver/sample_driver.h"
#include "test/csidriver/serve.h"
#include "version/version.h"

DEFINE_string(endpoint, "unix:///csi/csi.sock", "CSI endpoint: a socket path or a unix:// URL.");
DEFINE_string(drivername, ndr::sample::kDefaultDriverName, "Name returned by GetPluginInfo.");
DEFINE_string(nodeid, "", "Node ID returned by NodeGetInfo (default: this host's name).");
DEFINE_int64(max_volumes_per_node, 0, "NodeGetInfo's max_volumes_per_node; 0 means no limit.");
DEFINE_int64(later_max_volumes_per_node, -1,
             "NodeGetInfo's max_volumes_per_node from its second call on (-1: the same as "
             "--max-volumes-per-node), as a driver whose capacity on the node changes.");
DEFINE_string(topology, "",
              "NodeGetInfo's accessible topology as key=value pairs separated by commas, e.g. "
              "topology.sample.csi.example.com/zone=z1.");
DEFINE_string(vendor_version, "1.0.0", "GetPluginInfo's vendor_version.");
DEFINE_bool(reject_pod_info, false,
            "Refuse csi.storage.k8s.io/* volume_context keys with INVALID_ARGUMENT, like a "
            "persistent-storage driver that never asked for pod information.");
DEFINE_bool(stage_unstage, false,
            "Advertise STAGE_UNSTAGE_VOLUME: NodeStageVolume prepares the staging directory, and "
            "NodePublishVolume of a volume that is not staged is FAILED_PRECONDITION.");
DEFINE_string(token_jwks, "",
              "JWKS document (the API server's /openid/v1/jwks, or `kubeletclient jwks`) to "
              "verify the service-account tokens kubelet hands over; their claims are recorded, "
              "never the tokens.");
DEFINE_bool(controller, false,
            "Serve the Controller service too (CreateVolume, DeleteVolume, ControllerPublishVolume, "
            "ControllerUnpublishVolume), and stage and publish the volumes it creates only once "
            "attached to this node.");
DEFINE_bool(volume_mount_group, false,
            "Advertise VOLUME_MOUNT_GROUP: the driver, not kubelet, gives a published volume the "
            "pod's fsGroup (volume_mount_group).");
DEFINE_string(stage_error, "",
              "Answer every NodeStageVolume with this gRPC code (e.g. INVALID_ARGUMENT, a final "
              "error, or DEADLINE_EXCEEDED, which leaves the stage uncertain), staging nothing.");
DEFINE_string(faults, "",
              "Break the driver on purpose, comma-separated: stage-not-idempotent, "
              "unpublish-missing-target, block-target-directory, stats-used-over-capacity, "
              "block-stats-of-dev, read-only-refused, stats-internal (for "
              "testing tools that judge drivers, such as kubeletclient sanity; never in use); "
              "or report conditions: storage-unreachable, volume-inaccessible; or empty-node-id, "
              "which kubelet refuses to register.");
DEFINE_int32(low_free_space_percent, 5,
             "NodeGetStorageHealth reports STORAGE_DEGRADED (LowFreeSpace) when less than this "
             "percentage of the --data-dir's file system is free; 0: never.");
DEFINE_string(block_publish, "loop-bind",
              "How a raw block volume is put at its target_path: loop-bind (a loop device over "
              "its disk image, bind-mounted on a file there), symlink (a symbolic link to that "
              "loop device) or file (the disk image itself bind-mounted there: a regular file, "
              "no device; kubelet cannot map that, and kubeletclient sanity says so).");
DEFINE_bool(lazy_staging, false,
            "With --stage-unstage: record a stage in --data-dir and fill the staging directory "
            "only at the first NodePublishVolume, as drivers that mount lazily do.");
DEFINE_bool(no_stats, false, "Advertise neither GET_VOLUME_STATS nor VOLUME_CONDITION.");
DEFINE_bool(filesystem_only, false,
            "With --controller: CreateVolume refuses a block access type (INVALID_ARGUMENT), as "
            "a driver with filesystem volumes only does.");
DEFINE_bool(inline_only, false,
            "Serve read-only inline volumes only: NodePublishVolume refuses one that is not "
            "readonly or has no \"source\" volume attribute (INVALID_ARGUMENT), as drivers of "
            "inline volumes (secrets, images) do; their CSIDriver lists only Ephemeral.");
DEFINE_bool(require_shared_propagation, false,
            "As root on the host: refuse (FAILED_PRECONDITION) to stage or publish where the "
            "path's directory is not on a shared mount, as drivers that check the propagation of "
            "kubelet's directory do.");
DEFINE_string(record, "",
              "Absolute path of a file to append every request received to, one JSON line each "
              "({\"method\": ..., \"request\": ...}, secrets redacted), as `kubeletclient "
              "publish` reports the calls it makes; a restarted driver appends.");
DEFINE_string(data_dir, "",
              "Absolute directory for raw block volumes' disk images and the index of published "
              "block targets, created on demand (default: sample-csi-data beside the --endpoint "
              "socket).");

namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

// The default --data-dir: "sample-csi-data" in the socket's directory, which the driver's
// deployment already keeps on the host (/var/lib/kubelet/plugins/<driver>/).
// The socket path is absolute (UnixSocketPath), so this is too.
std::string DefaultDataDir(const std::string& socket_path) {
  return socket_path.substr(0, socket_path.find_last_of('/') + 1) + "sample-csi-data";
}

int Fail(const absl::Status& status) {
  std::cerr << "sample-csi-driver: " << status.message() << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ndr::program::SetUpShippedProgram(argv[0]);  // first: no lock-order tracking; crash reports
  if (ndr::version::VersionRequested(argc, argv)) {
    std::cout << ndr::version::VersionText("sample-csi-driver");
    return 0;
  }
  if (ndr::HelpRequested(argc, argv)) {
    std::cout << ndr::GoFlagUsage(
        "Usage: sample-csi-driver --endpoint=unix:///csi/csi.sock [flags]\n\nFlags:",
        {{"", {"block_publish", "controller", "data_dir", "drivername", "endpoint", "faults",
               "filesystem_only", "inline_only", "lazy_staging", "later_max_volumes_per_node",
               "low_free_space_percent", "max_volumes_per_node",
               "no_stats", "nodeid", "record", "reject_pod_info", "require_shared_propagation",
               "stage_error", "stage_unstage", "token_jwks", "topology", "vendor_version",
               "volume_mount_group"}},
         {"Logging flags (component-base):", ndr::LoggingFlagNames()}});
    return 0;
  }
  gflags::SetUsageMessage("sample-csi-driver --endpoint=unix:///csi/csi.sock [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<ndr::logging::Options> logging = ndr::logging::OptionsFromFlags();
  if (!logging.ok()) return Fail(logging.status());
  ndr::logging::Init(*logging);
  if (argc > 1) {
    return Fail(absl::InvalidArgumentError(
        std::string("unexpected argument \"") + argv[1] + "\"; all options are --flags"));
  }

  ndr::sample::DriverOptions options;
  options.name = FLAGS_drivername;
  options.vendor_version = FLAGS_vendor_version;
  options.node_id = FLAGS_nodeid.empty() ? HostName() : FLAGS_nodeid;
  options.max_volumes_per_node = FLAGS_max_volumes_per_node;
  if (FLAGS_later_max_volumes_per_node != -1) {
    options.later_max_volumes_per_node = FLAGS_later_max_volumes_per_node;
  }
  options.reject_pod_info = FLAGS_reject_pod_info;
  options.low_free_space_percent = FLAGS_low_free_space_percent;
  options.stage_unstage = FLAGS_stage_unstage;
  options.controller = FLAGS_controller;
  options.lazy_staging = FLAGS_lazy_staging;
  options.no_stats = FLAGS_no_stats;
  options.filesystem_only = FLAGS_filesystem_only;
  options.inline_only = FLAGS_inline_only;
  options.require_shared_propagation = FLAGS_require_shared_propagation;
  options.volume_mount_group = FLAGS_volume_mount_group;
  if (!FLAGS_stage_error.empty()) {
    options.stage_error = ndr::sample::ParseErrorCode(FLAGS_stage_error);
    if (!options.stage_error.has_value()) {
      std::cerr << "sample-csi-driver: --stage-error: \"" << FLAGS_stage_error
                << "\" is not a gRPC status code's name other than OK (e.g. INVALID_ARGUMENT, "
                   "DEADLINE_EXCEEDED)"
                << std::endl;
      return 1;
    }
  }
  if (std::optional<ndr::sample::BlockPublish> publish =
          ndr::sample::ParseBlockPublish(FLAGS_block_publish)) {
    options.block_publish = *publish;
  } else {
    std::cerr << "sample-csi-driver: --block-publish: \"" << FLAGS_block_publish
              << "\" is not one of loop-bind, symlink, file" << std::endl;
    return 1;
  }
  options.data_dir = FLAGS_data_dir;
  if (!FLAGS_record.empty()) {
    absl::StatusOr<std::unique_ptr<ndr::sample::CallRecord>> record =
        ndr::sample::CallRecord::Open(FLAGS_record);
    if (!record.ok()) return Fail(record.status());
    options.record = *std::move(record);
  }
  for (absl::string_view fault : absl::StrSplit(FLAGS_faults, ',', absl::SkipWhitespace())) {
    options.faults.emplace(fault);
  }
  absl::StatusOr<std::map<std::string, std::string>> topology =
      ndr::sample::ParseTopology(FLAGS_topology);
  if (!topology.ok()) return Fail(topology.status());
  options.topology = *std::move(topology);
  if (!FLAGS_token_jwks.empty()) {
    std::ifstream in(FLAGS_token_jwks);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    options.token_jwks = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!in || !options.token_jwks.is_object() || !options.token_jwks.contains("keys") ||
        !options.token_jwks["keys"].is_array()) {
      return Fail(absl::InvalidArgumentError(
          "--token-jwks: " + FLAGS_token_jwks +
          " is not a readable JWKS document ({\"keys\": [...]}; `kubeletclient jwks` writes one)"));
    }
  }
  if (absl::Status s = ndr::sample::ValidateDriverOptions(options); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> socket_path = ndr::UnixSocketPath(FLAGS_endpoint, "--endpoint");
  if (!socket_path.ok()) return Fail(socket_path.status());
  if (options.data_dir.empty()) options.data_dir = DefaultDataDir(*socket_path);

  ndr::sample::BlockTerminationSignals();
  if (absl::Status s = ndr::sample::Serve(options, *socket_path); !s.ok()) return Fail(s);
  return 0;
}

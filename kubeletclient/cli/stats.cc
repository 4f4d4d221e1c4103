#include "kubeletclient/cli/stats.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/cli/volume_command.h"
#include "kubeletclient/stats.h"

DEFINE_string(format, "json", "Output format: json, or prometheus (kubelet's metric families).");

namespace ndr::kubelet::cli {
namespace {

int Run() {
  // Its own flag first: nothing is set up for a command line that is refused.
  StatsFormat format;
  if (FLAGS_format == "json") {
    format = StatsFormat::kJson;
  } else if (FLAGS_format == "prometheus") {
    format = StatsFormat::kPrometheus;
  } else {
    return Fail(absl::StrCat("--format: \"", FLAGS_format, "\" is not json or prometheus"));
  }
  absl::StatusOr<PublishCommand> publish = SetUpVolumeCommand("stats");
  if (!publish.ok()) return Fail(publish.status().message());
  return PrintOutcome(RunStats(*publish, format));
}

}  // namespace

Command Stats() {
  return {"stats",
          "kubeletclient stats --pod=FILE [--objects=FILE_OR_DIR,...] --plugin-registry-dir=DIR "
          "--root-dir=DIR [publish's flags] [--format=json|prometheus]",
          WithHandshakeFlags({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                              "allowed_inline_drivers", "feature_gates", "host_selinux",
                              "block_host_ops", "service_account_key_file",
                              "service_account_issuer", "format"}),
          &Run};
}

}  // namespace ndr::kubelet::cli

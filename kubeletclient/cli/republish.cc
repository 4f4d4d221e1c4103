#include "kubeletclient/cli/republish.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/go_duration.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/cli/volume_command.h"
#include "kubeletclient/republish.h"

DEFINE_int32(rounds, 1, "How many remounts (pod syncs) to run.");
DEFINE_string(interval, "1m",
              "The time between rounds on the clock tokens are minted and judged by (advanced, "
              "not waited for); kubelet syncs a pod about once a minute.");

namespace ndr::kubelet::cli {
namespace {

int Run() {
  // Its own flags first: nothing is set up for a command line that is refused.
  if (FLAGS_rounds < 1) return Fail("--rounds: must be at least 1");
  absl::StatusOr<absl::Duration> interval = ParseGoDuration(FLAGS_interval, "interval");
  if (!interval.ok()) return Fail(interval.status().message());
  if (*interval < absl::ZeroDuration()) return Fail("--interval: must not be negative");
  absl::StatusOr<PublishCommand> publish = SetUpVolumeCommand("republish");
  if (!publish.ok()) return Fail(publish.status().message());
  return PrintOutcome(RunRepublish(*publish, FLAGS_rounds, *interval));
}

}  // namespace

Command Republish() {
  return {"republish",
          "kubeletclient republish --pod=FILE [--objects=FILE_OR_DIR,...] "
          "--plugin-registry-dir=DIR --root-dir=DIR [publish's flags] [--rounds=N] "
          "[--interval=D]",
          WithHandshakeFlags({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                              "allowed_inline_drivers", "feature_gates", "host_selinux",
                              "block_host_ops", "service_account_key_file",
                              "service_account_issuer", "rounds", "interval"}),
          &Run};
}

}  // namespace ndr::kubelet::cli

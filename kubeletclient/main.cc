// kubeletclient: the kubelet's side of plugin registration. Each command takes only its own
// flags (cli/commands.h lists the commands; each one's file defines its flags, cli/shared_flags.h
// those several share); --ask-csi-registration is the pod-info design's opt-in.
//
//   kubeletclient watch --plugin-registry-dir=D --node-status-file=F [--node-name=N]
//   kubeletclient probe --registration-socket=S [--notify]
//   kubeletclient publish --pod=FILE [--objects=FILE_OR_DIR[,...]] --plugin-registry-dir=D
//       --root-dir=R [--node-name=N] [--allowed-inline-drivers=a,b]
//   kubeletclient unpublish --pod=FILE --root-dir=R --plugin-registry-dir=D
//   kubeletclient republish --pod=FILE [--objects=...] ... [--rounds=N --interval=D]
//   kubeletclient expand --pod=FILE --volume=NAME [--objects=...] ...
//   kubeletclient stats --pod=FILE [--objects=...] ... [--format=json|prometheus]
//   kubeletclient jwks --service-account-key-file=PEM
//   kubeletclient sanity --csi-address=S | --registration-socket=S | --plugin-registry-dir=D
//       --root-dir=R [--volume-handle=H,...] [--volume-mode=filesystem,block] [--junit=FILE]
//
// `kubeletclient COMMAND --help` lists a command's flags. main() only dispatches: --version,
// --help, the flags, logging, then the command named, once none of another command's flags is
// given.
#include <iostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "api/go_flag_usage.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/command.h"
#include "kubeletclient/cli/commands.h"
#include "logging/logging.h"
#include "program/shipped.h"
#include "version/version.h"

// Under ThreadSanitizer only: gRPC 1.51 starts threads of its own for a connection (one that
// fails included) and, when the program returns from main, may leave one that has finished and
// that nobody joins; TSan reports that as a leak and turns the exit code into 66 (seen once in a
// CI run of SanityTest.AnUnreachableSocketFailsTheRegistration, which passed in two other runs the
// same day). kubeletclient's own threads are joined before main returns, so the report says
// nothing about them; it is turned off for this program, as for test/broken_registrar_main.cc.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "report_thread_leaks=0"; }
#endif

int main(int argc, char** argv) {
  ndr::program::SetUpShippedProgram(argv[0]);  // first: no lock-order tracking; crash reports
  namespace cli = ndr::kubelet::cli;
  if (ndr::version::VersionRequested(argc, argv)) {
    std::cout << ndr::version::VersionText("kubeletclient");
    return 0;
  }
  if (ndr::HelpRequested(argc, argv)) {
    std::cout << cli::Help(argc, argv);
    return 0;
  }
  gflags::SetUsageMessage(cli::UsageLines());
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<ndr::logging::Options> logging = ndr::logging::OptionsFromFlags();
  if (!logging.ok()) return cli::Fail(logging.status().message());
  ndr::logging::Init(*logging);
  if (argc != 2) {
    return cli::Fail(absl::StrCat("expected one command: ", cli::CommandNames(), "; usage:\n",
                                  cli::UsageLines()));
  }
  const cli::Command* command = cli::FindCommand(argv[1]);
  if (command == nullptr) {
    return cli::Fail(
        absl::StrCat("unknown command \"", argv[1], "\"; usage:\n", cli::UsageLines()));
  }
  if (absl::Status s = cli::CheckOwnFlags(*command); !s.ok()) return cli::Fail(s.message());
  return command->run();
}

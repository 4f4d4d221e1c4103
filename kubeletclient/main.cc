// kubeletclient: the kubelet's side of plugin registration. Each command takes only its own
// flags (Commands() below); --ask-csi-registration is the pod-info design's opt-in.
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
//       --root-dir=R
//       [--volume-handle=H,...] [--volume-mode=filesystem,block] [--junit=FILE]
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/go_duration.h"
#include "api/endpoint.h"
#include "api/go_flag_usage.h"
#include "gflags/gflags.h"
#include "logging/logging.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hostutil/mount.h"
#include "kubeletclient/expand.h"
#include "kubeletclient/features/kubelet_releases.h"
#include "kubeletclient/probe.h"
#include "kubeletclient/publish.h"
#include "kubeletclient/republish.h"
#include "kubeletclient/sanity/checks.h"
#include "kubeletclient/sanity/sandbox.h"
#include "kubeletclient/sanity/sanity.h"
#include "kubeletclient/stats.h"
#include "kubeletclient/token/jwt.h"
#include "kubeletclient/util/running_kubelets.h"
#include "kubeletclient/watch.h"
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

DEFINE_string(plugin_registry_dir, "/var/lib/kubelet/plugins_registry",
              "Directory where plugins put their registration sockets (watched recursively).");
DEFINE_string(node_status_file, "", "JSON file with the node's CSI status. Required.");
DEFINE_string(node_name, "", "The node's name (default: this host's name).");
DEFINE_string(registration_socket, "",
              "The registration socket to probe (probe: required), or whose driver to judge "
              "(sanity).");
DEFINE_string(controller_address, "",
              "sanity: the driver's Controller service, where it is served on a socket of its own "
              "(a path or unix:///path), for the volumes made when no --volume-handle is given "
              "(CreateVolume, ControllerPublishVolume, as csi-sanity's --csi.controllerendpoint); "
              "default: the node plugin's socket.");
DEFINE_string(storage_class, "",
              "sanity: the StorageClass of --objects that volumes made when no --volume-handle "
              "is given come from, as the external-provisioner makes them (parameters, secrets "
              "by reference, allowedTopologies and the node's topology, volumeBindingMode, "
              "mountOptions, reclaimPolicy, allowVolumeExpansion); default: the one whose "
              "provisioner is the driver, if --objects has exactly one.");
DEFINE_string(secrets_file, "",
              "sanity: a secrets file in csi-sanity's format (its --csi.secrets: "
              "CreateVolumeSecret, NodeStageVolumeSecret, ... each a map of secrets), for the "
              "calls no StorageClass names a Secret for. Values never reach the report.");
DEFINE_string(csi_address, "",
              "sanity: judge the driver at this CSI socket (a path or unix:///path) directly, "
              "without a registrar: the judge offers it from a registration socket of its own, as "
              "our registrar would (GetPluginInfo's name, version 1.0.0), and kubelet's handshake "
              "runs against that.");
DEFINE_string(pod, "", "The Pod (YAML or JSON). Required.");
DEFINE_string(objects, "",
              "Files or directories, comma-separated, with the PersistentVolumeClaims, "
              "PersistentVolumes, CSIDrivers, VolumeAttachments and Secrets the pod's volumes "
              "need (sanity: also StorageClasses).");
DEFINE_string(root_dir, "/var/lib/kubelet", "Kubelet's root directory.");
DEFINE_string(allowed_inline_drivers, "",
              "Drivers whose inline (ephemeral) volumes this node allows, comma-separated; empty "
              "allows none.");
DEFINE_string(kubelet_version, "1.37",
              "The kubelet release to act as, 1.26 to 1.37 (\"1.29\", \"v1.29.6\"): its "
              "default feature gates and what its CSI volume plugin sends and writes "
              "(docs/kubelet-versions.md). sanity takes several, comma-separated, and judges "
              "the driver against each.");
DEFINE_string(feature_gates, "",
              "Kubelet's feature gates that change what is sent, Name=bool,... (ReadWriteOncePod, "
              "SELinuxMountReadWriteOncePod, SELinuxMount, SELinuxChangePolicy, CSIVolumeHealth, "
              "CSINodeExpandSecret, RecoverVolumeExpansionFailure), over the --kubelet-version's "
              "defaults; a gate the release lacks or has locked is refused as kubelet refuses "
              "it.");
DEFINE_string(host_selinux, "auto",
              "Whether this node has SELinux, for SELinux mount labels: true, false, or auto "
              "(what this machine says).");
DEFINE_string(block_host_ops, "auto",
              "The bind mounts and loop devices kubelet makes for raw block volumes: auto (made "
              "when running as root on the host, as kubelet runs; skipped otherwise, and the "
              "report says so) or skip (never made).");
DEFINE_string(service_account_key_file, "",
              "PEM private key (RSA, or EC on P-256, P-384 or P-521) that signs the "
              "service-account tokens of CSIDrivers with tokenRequests, as the API server's "
              "--service-account-signing-key-file does. Without it such volumes are refused.");
DEFINE_string(service_account_issuer, "https://kubernetes.default.svc.cluster.local",
              "The tokens' issuer (iss), as the API server's --service-account-issuer; also their "
              "audience when a tokenRequest names none.");
DEFINE_string(volume, "", "The pod's volume to expand (its name in spec.volumes). Required.");
DEFINE_string(format, "json", "Output format: json, or prometheus (kubelet's metric families).");
DEFINE_int32(rounds, 1, "How many remounts (pod syncs) to run.");
DEFINE_string(interval, "1m",
              "The time between rounds on the clock tokens are minted and judged by (advanced, "
              "not waited for); kubelet syncs a pod about once a minute.");
DEFINE_string(volume_handle, "",
              "Volumes to judge the driver with, comma-separated: handles the driver knows (or "
              "accepts, for a driver that makes its volumes on demand), each for every scenario, "
              "or SCENARIO=HANDLE for one of filesystem, block, generic-ephemeral. A scenario "
              "without: its volume is created (and attached) through the driver's Controller "
              "service.");
DEFINE_bool(inline_read_only, false,
            "sanity: the inline volume's readOnly (spec.volumes[].csi.readOnly), for drivers "
            "that serve read-only inline volumes only.");
DEFINE_string(inline_fs_type, "", "sanity: the inline volume's fsType (none by default).");
DEFINE_string(inline_publish_secret, "",
              "sanity: the inline volume's nodePublishSecretRef: the name of a Secret among "
              "--objects, in namespace kubeletclient-sanity (the made-up pod's).");
DEFINE_string(inline_volume_attributes, "",
              "sanity: the inline volume's volumeAttributes, as KEY=VALUE,... (a value cannot "
              "hold a comma).");
DEFINE_string(volume_mode, "",
              "Volume modes to judge, comma-separated: filesystem, block (default: both; a mode "
              "the driver refuses is then skipped).");
DEFINE_string(junit, "", "Also write the checks as JUnit XML to this file.");
DEFINE_string(only, "", "Run only the checks whose names match this regular expression.");
DEFINE_bool(list, false,
            "Print every check (its name, group, what it does and the kubelet functions) and exit.");
DEFINE_string(skip, "", "Skip the checks whose names match this regular expression.");
DEFINE_string(get_info_timeout, "1s",
              "Deadline of GetInfo (kubelet: 1s) and of GetCSIDriverInfo, the other call on the "
              "registration socket.");
DEFINE_string(notify_timeout, "5s", "Deadline of NotifyRegistrationStatus (kubelet: 5s).");
DEFINE_string(node_get_info_timeout, "2m", "Deadline of the driver's NodeGetInfo (kubelet: 2m).");
DEFINE_bool(ask_csi_registration, false,
            "Also ask the registrar's CSIRegistration.GetCSIDriverInfo whether the driver wants "
            "pod information, as the \"Pod in CSI NodePublish request\" design proposes. No "
            "kubelet release does: without it, pod information comes from the CSIDriver's "
            "podInfoOnMount alone, as on a real node.");
DEFINE_bool(notify, false,
            "probe: end the handshake as kubelet does, with NotifyRegistrationStatus. Off, the "
            "probe is read-only (GetInfo and the driver's NodeGetInfo) and only says what it "
            "would have sent: a registrar that is told it is registered counts it and stops "
            "offering its socket.");

namespace {

// Each command, its usage line and the flags it reads, for --help and errors.
struct Command {
  const char* name;
  const char* usage;
  std::vector<std::string> flags;
};

const std::vector<Command>& Commands() {
  static const std::vector<std::string> kHandshake = {"kubelet_version", "get_info_timeout",
                                                       "notify_timeout", "node_get_info_timeout",
                                                       "ask_csi_registration"};
  auto with_handshake = [](std::vector<std::string> flags) {
    flags.insert(flags.end(), kHandshake.begin(), kHandshake.end());
    return flags;
  };
  static const auto* commands = new std::vector<Command>{
      {"watch",
       "kubeletclient watch --plugin-registry-dir=DIR --node-status-file=FILE [--node-name=NAME] "
       "[--kubelet-version=1.N]",
       with_handshake({"plugin_registry_dir", "node_status_file", "node_name"})},
      {"probe",
       "kubeletclient probe --registration-socket=SOCKET [--notify] [--kubelet-version=1.N] "
       "[--ask-csi-registration]",
       with_handshake({"registration_socket", "notify"})},
      {"publish",
       "kubeletclient publish --pod=FILE [--objects=FILE_OR_DIR,...] --plugin-registry-dir=DIR "
       "--root-dir=DIR [--node-name=NAME] [--allowed-inline-drivers=a,b] "
       "[--kubelet-version=1.N] [--feature-gates=Name=bool,...] [--host-selinux=auto|true|false] "
       "[--block-host-ops=auto|skip] [--service-account-key-file=PEM "
       "--service-account-issuer=URL]",
       with_handshake({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                       "allowed_inline_drivers", "feature_gates", "host_selinux",
                       "block_host_ops", "service_account_key_file", "service_account_issuer"})},
      {"unpublish",
       "kubeletclient unpublish --pod=FILE --root-dir=DIR --plugin-registry-dir=DIR "
       "[--node-name=NAME] [--feature-gates=Name=bool,...] [--host-selinux=auto|true|false] "
       "[--block-host-ops=auto|skip]",
       with_handshake({"pod", "plugin_registry_dir", "root_dir", "node_name", "feature_gates",
                       "host_selinux", "block_host_ops"})},
      {"republish",
       "kubeletclient republish --pod=FILE [--objects=FILE_OR_DIR,...] "
       "--plugin-registry-dir=DIR --root-dir=DIR [publish's flags] [--rounds=N] [--interval=D]",
       with_handshake({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                       "allowed_inline_drivers", "feature_gates", "host_selinux",
                       "block_host_ops", "service_account_key_file", "service_account_issuer",
                       "rounds", "interval"})},
      {"expand",
       "kubeletclient expand --pod=FILE --volume=NAME [--objects=FILE_OR_DIR,...] "
       "--plugin-registry-dir=DIR --root-dir=DIR [publish's flags]",
       with_handshake({"pod", "volume", "objects", "plugin_registry_dir", "root_dir", "node_name",
                       "allowed_inline_drivers", "feature_gates", "host_selinux",
                       "block_host_ops", "service_account_key_file", "service_account_issuer"})},
      {"stats",
       "kubeletclient stats --pod=FILE [--objects=FILE_OR_DIR,...] --plugin-registry-dir=DIR "
       "--root-dir=DIR [publish's flags] [--format=json|prometheus]",
       with_handshake({"pod", "objects", "plugin_registry_dir", "root_dir", "node_name",
                       "allowed_inline_drivers", "feature_gates", "host_selinux",
                       "block_host_ops", "service_account_key_file", "service_account_issuer",
                       "format"})},
      {"jwks", "kubeletclient jwks --service-account-key-file=PEM",
       {"service_account_key_file"}},
      {"sanity",
       "kubeletclient sanity --csi-address=SOCKET | --registration-socket=SOCKET | "
       "--plugin-registry-dir=DIR --root-dir=DIR [--volume-handle=H[,H...]] "
       "[--controller-address=SOCKET] "
       "[--objects=FILE_OR_DIR,...] [--storage-class=NAME] [--secrets-file=FILE] "
       "[--node-name=NAME] "
       "[--volume-mode=filesystem,block] [--inline-read-only] [--inline-fs-type=TYPE] "
       "[--inline-volume-attributes=K=V,...] [--inline-publish-secret=NAME] [--junit=FILE] "
       "[--only=REGEX] [--skip=REGEX] [--list] [--kubelet-version=1.N[,1.M...]] "
       "[--feature-gates=Name=bool,...] [--block-host-ops=auto|skip] "
       "[--service-account-key-file=PEM --service-account-issuer=URL]",
       with_handshake({"csi_address", "controller_address", "registration_socket",
                       "plugin_registry_dir", "root_dir",
                       "volume_handle",
                       "objects", "storage_class", "secrets_file", "node_name", "volume_mode",
                       "inline_read_only",
                       "inline_fs_type", "inline_volume_attributes", "inline_publish_secret",
                       "junit", "only", "skip", "list", "feature_gates", "host_selinux",
                       "block_host_ops", "service_account_key_file", "service_account_issuer"})},
  };
  return *commands;
}

// "  kubeletclient watch ...\n  kubeletclient probe ...": every command's usage line.
std::string UsageLines() {
  std::string lines;
  for (const Command& command : Commands()) absl::StrAppend(&lines, "  ", command.usage, "\n");
  return lines;
}

// --help: of the command named on the command line, or of them all.
std::string Help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    for (const Command& command : Commands()) {
      if (command.name == std::string(argv[i])) {
        return ndr::GoFlagUsage(absl::StrCat("Usage:\n  ", command.usage, "\n\nFlags:"),
                                {{"", command.flags},
                                 {"Logging flags (component-base):", ndr::LoggingFlagNames()}});
      }
    }
  }
  return ndr::GoFlagUsage(
      absl::StrCat("kubeletclient: the kubelet's side of plugin registration and of the CSI "
                   "volume plugin.\n\nUsage:\n",
                   UsageLines(), "\nRun 'kubeletclient COMMAND --help' for a command's flags."),
      {{"Logging flags (component-base), for every command:", ndr::LoggingFlagNames()}});
}

int Fail(const std::string& message) {
  std::cerr << "kubeletclient: " << message << std::endl;
  return 1;
}

std::string FlagSpelling(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

// The flags given on the command line that belong to other commands than `command`: a flag a
// command does not read would otherwise be accepted and do nothing.
std::vector<std::string> ForeignFlags(const Command& command) {
  std::set<std::string> everyones;
  for (const Command& c : Commands()) everyones.insert(c.flags.begin(), c.flags.end());
  std::vector<std::string> foreign;
  for (const std::string& name : everyones) {
    if (std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end()) {
      continue;
    }
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(name.c_str(), &info) && !info.is_default) {
      foreign.push_back(FlagSpelling(name));
    }
  }
  return foreign;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

// `kubeletclient sanity`, with the node options `publish` has already read, once per release.
int Sanity(const ndr::kubelet::PublishCommand& publish,
           const std::vector<ndr::kubelet::KubeletRelease>& releases) {
  if (FLAGS_list) {
    ndr::kubelet::sanity::ListChecks(std::cout);
    return 0;
  }
  ndr::kubelet::SanityOptions options;
  options.registration_socket = FLAGS_registration_socket;
  options.plugin_registry_dir = FLAGS_plugin_registry_dir;
  options.csi_address = FLAGS_csi_address;
  if (!FLAGS_csi_address.empty() &&
      (!FLAGS_registration_socket.empty() ||
       !gflags::GetCommandLineFlagInfoOrDie("plugin_registry_dir").is_default)) {
    return Fail("sanity: --csi-address judges the driver directly; it cannot be given with "
                "--registration-socket or --plugin-registry-dir, which judge it through a "
                "registrar: give one of them");
  }
  if (!FLAGS_csi_address.empty()) {
    if (absl::StatusOr<std::string> path = ndr::UnixSocketPath(FLAGS_csi_address, "--csi-address");
        !path.ok()) {
      return Fail("sanity: " + std::string(path.status().message()));
    }
  }
  if (!FLAGS_controller_address.empty()) {
    absl::StatusOr<std::string> path =
        ndr::UnixSocketPath(FLAGS_controller_address, "--controller-address");
    if (!path.ok()) return Fail("sanity: " + std::string(path.status().message()));
    options.controller_address = *path;
  }
  if (gflags::GetCommandLineFlagInfoOrDie("root_dir").is_default) {
    return Fail("sanity: --root-dir is required: a directory of its own, not kubelet's (the "
                "made-up pods it publishes would be kubelet's orphans)");
  }
  // Given explicitly, kubelet's directory is refused too while a kubelet uses it.
  if (absl::Status s = ndr::kubelet::NotAKubeletsRootDir(FLAGS_root_dir); !s.ok()) {
    return Fail("sanity: " + std::string(s.message()));
  }
  // None: volumes the driver's Controller service creates (an error if it cannot).
  for (absl::string_view item : absl::StrSplit(FLAGS_volume_handle, ',', absl::SkipWhitespace())) {
    bool scenario_handle = false;
    for (const char* scenario : {"filesystem", "block", "generic-ephemeral"}) {
      if (absl::ConsumePrefix(&item, absl::StrCat(scenario, "="))) {
        if (item.empty()) {
          return Fail(absl::StrCat("--volume-handle: ", scenario,
                                   "= names no handle (give SCENARIO=HANDLE)"));
        }
        options.scenario_handles[scenario].emplace_back(item);
        scenario_handle = true;
        break;
      }
    }
    if (!scenario_handle) options.volume_handles.emplace_back(item);
  }
  options.inline_volume.read_only = FLAGS_inline_read_only;
  options.inline_volume.fs_type = FLAGS_inline_fs_type;
  options.inline_volume.publish_secret = FLAGS_inline_publish_secret;
  for (absl::string_view item :
       absl::StrSplit(FLAGS_inline_volume_attributes, ',', absl::SkipWhitespace())) {
    const std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return Fail(absl::StrCat("--inline-volume-attributes: \"", item,
                               "\" is not KEY=VALUE (pairs are separated by commas)"));
    }
    if (!options.inline_volume.attributes.emplace(kv[0], kv[1]).second) {
      return Fail(absl::StrCat("--inline-volume-attributes: ", kv[0], " is given twice"));
    }
  }
  for (absl::string_view mode : absl::StrSplit(FLAGS_volume_mode, ',', absl::SkipWhitespace())) {
    if (mode != "filesystem" && mode != "block") {
      return Fail(absl::StrCat("--volume-mode: \"", mode, "\" is not filesystem or block"));
    }
    options.volume_modes.emplace_back(mode);
  }
  // A handle for a scenario that does not run would be dropped without a word.
  auto runs = [&](const std::string& mode) {
    return options.volume_modes.empty() ||
           std::find(options.volume_modes.begin(), options.volume_modes.end(), mode) !=
               options.volume_modes.end();
  };
  for (const auto& [scenario, handles] : options.scenario_handles) {
    if (!runs(scenario == "generic-ephemeral" ? "filesystem" : scenario)) {
      return Fail(absl::StrCat("--volume-handle: ", scenario, "=", handles.front(),
                               " is for a scenario that --volume-mode=", FLAGS_volume_mode,
                               " leaves out (generic ephemeral volumes are filesystem volumes)"));
    }
  }
  for (const std::string* pattern : {&FLAGS_only, &FLAGS_skip}) {
    try {
      std::regex check(*pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Fail(absl::StrCat(pattern == &FLAGS_only ? "--only" : "--skip", ": \"", *pattern,
                               "\" is not a regular expression: ", e.what()));
    }
  }
  options.only = FLAGS_only;
  options.skip = FLAGS_skip;
  options.object_paths = publish.object_paths;
  options.storage_class = FLAGS_storage_class;
  options.secrets_file = FLAGS_secrets_file;
  options.service_account_key_file = publish.service_account_key_file;
  options.service_account_issuer = publish.service_account_issuer;
  options.node = publish.node;
  options.handshake = publish.handshake;
  options.csi = publish.csi;
  // A run that changes the host does it from a mount namespace of its own, with a cleaner that
  // outlives it (sandbox.h); entered before any thread starts, left when this function returns.
  std::unique_ptr<ndr::kubelet::sanity::Sandbox> sandbox;
  if (options.node.change_host) {
    absl::StatusOr<std::unique_ptr<ndr::kubelet::sanity::Sandbox>> entered =
        ndr::kubelet::sanity::Sandbox::Enter(options.node.root_dir);
    if (!entered.ok()) return Fail("sanity: " + std::string(entered.status().message()));
    sandbox = *std::move(entered);
  }
  // Signals wait until a step is done, so that what was published is torn down (sanity.h); gRPC's
  // threads, started later, inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // One judgement per release, in the order given; with several, each check's name starts
  // with its release ("1.29/filesystem/publish") and a line per release sums it up.
  ndr::kubelet::SanityReport all;
  // Which judge gave the verdict, first in the output and in the JUnit XML.
  all.judge = absl::StrCat("kubeletclient ", ndr::version::Version(), " (commit ",
                           ndr::version::Commit(), ", built ", ndr::version::BuildDate(), ")");
  std::cout << "judge: " << all.judge << "\n";
  std::cout << "pod information: "
            << (options.csi.ask_csi_registration
                    ? "from the CSIDriver's podInfoOnMount or the registrar's CSIRegistration "
                      "(--ask-csi-registration: the pod-info design proposal, which no kubelet "
                      "release implements; a driver that passes only with it gets no pod "
                      "information from a real kubelet)"
                    : "from the CSIDriver's podInfoOnMount only, as from every kubelet release")
            << "\n";
  if (sandbox != nullptr) {
    std::cout << "sandbox: a mount namespace of its own; " << options.node.root_dir
              << " shared with the host, and what a judge that did not finish leaves under it "
                 "undone by a cleaner (pid "
              << sandbox->cleaner() << ")\n";
  }
  for (const ndr::kubelet::KubeletRelease& release : releases) {
    all.kubelet_releases.push_back(release.Name());
  }
  std::vector<std::string> summaries;
  for (const ndr::kubelet::KubeletRelease& release : releases) {
    options.node.release = release;
    options.csi.release = release;
    // Checked in main for every release already.
    options.node.feature_gates = *ndr::kubelet::ParseFeatureGatesAt(FLAGS_feature_gates, release.minor);
    if (releases.size() > 1) std::cout << "=== kubelet " << release.Name() << "\n";
    ndr::kubelet::SanityReport report = ndr::kubelet::RunSanity(options, std::cout);
    if (!report.error.empty()) return Fail(report.error);
    all.driver = report.driver;
    for (ndr::kubelet::CheckResult& check : report.checks) {
      if (releases.size() > 1) check.name = release.Name() + "/" + check.name;
      all.checks.push_back(std::move(check));
    }
    all.passed += report.passed;
    all.failed += report.failed;
    all.skipped += report.skipped;
    all.skipped_not_root += report.skipped_not_root;
    summaries.push_back(absl::StrCat("kubelet ", release.Name(), ": ", report.passed, " passed, ",
                                     report.failed, " failed, ", report.skipped, " skipped"));
    if (report.interrupted) {
      all.interrupted = true;
      break;
    }
  }
  if (releases.size() > 1) {
    for (const std::string& line : summaries) std::cout << line << "\n";
  }
  if (!FLAGS_junit.empty()) {
    std::ofstream junit(FLAGS_junit);
    junit << ndr::kubelet::JunitXml(all);
    if (!junit.good()) return Fail("--junit: could not write " + FLAGS_junit);
  }
  if (all.interrupted) return 130;
  return all.failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (ndr::version::VersionRequested(argc, argv)) {
    std::cout << ndr::version::VersionText("kubeletclient");
    return 0;
  }
  if (ndr::HelpRequested(argc, argv)) {
    std::cout << Help(argc, argv);
    return 0;
  }
  gflags::SetUsageMessage(UsageLines());
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<ndr::logging::Options> logging = ndr::logging::OptionsFromFlags();
  if (!logging.ok()) return Fail(std::string(logging.status().message()));
  ndr::logging::Init(argv[0], *logging);
  if (argc != 2) {
    return Fail(std::string("expected one command: watch, probe, publish, unpublish, republish, "
                            "expand, stats, jwks or sanity; usage:\n") +
                UsageLines());
  }
  const std::string command = argv[1];
  for (const Command& c : Commands()) {
    if (c.name != command) continue;
    if (std::vector<std::string> foreign = ForeignFlags(c); !foreign.empty()) {
      std::vector<std::string> own;
      for (const std::string& name : c.flags) own.push_back(FlagSpelling(name));
      return Fail(absl::StrCat(
          command, ": ", absl::StrJoin(foreign, ", "),
          foreign.size() == 1 ? " is not one of its flags" : " are not its flags",
          "; its flags are ", absl::StrJoin(own, ", "), " (kubeletclient ", command, " --help)"));
    }
  }

  ndr::kubelet::HandshakeTimeouts handshake;
  ndr::kubelet::CsiHandlerOptions csi;
  for (auto [flag, value, target] :
       {std::tuple{"get-info-timeout", &FLAGS_get_info_timeout, &handshake.get_info},
        std::tuple{"notify-timeout", &FLAGS_notify_timeout, &handshake.notify},
        std::tuple{"node-get-info-timeout", &FLAGS_node_get_info_timeout,
                   &csi.node_get_info_timeout}}) {
    absl::StatusOr<absl::Duration> d = ndr::ParseGoDuration(*value, flag);
    if (!d.ok()) return Fail(std::string(d.status().message()));
    if (*d <= absl::ZeroDuration()) return Fail(std::string("--") + flag + ": must be positive");
    *target = *d;
  }
  csi.csi_registration_timeout = handshake.get_info;
  csi.ask_csi_registration = FLAGS_ask_csi_registration;
  // --kubelet-version: one release, or for sanity a list of them.
  std::vector<ndr::kubelet::KubeletRelease> releases;
  for (absl::string_view item : absl::StrSplit(FLAGS_kubelet_version, ',', absl::SkipWhitespace())) {
    absl::StatusOr<int> minor = ndr::kubelet::ParseKubeletRelease(item);
    if (!minor.ok()) return Fail("--kubelet-version: " + std::string(minor.status().message()));
    ndr::kubelet::KubeletRelease release;
    release.minor = *minor;
    for (const ndr::kubelet::KubeletRelease& seen : releases) {
      if (seen.minor == release.minor) {
        return Fail(absl::StrCat("--kubelet-version: ", release.Name(), " is given twice"));
      }
    }
    releases.push_back(release);
  }
  if (releases.empty()) return Fail("--kubelet-version: name a release, 1.26 to 1.37");
  if (releases.size() > 1 && command != "sanity") {
    return Fail(absl::StrCat("--kubelet-version: ", command,
                             " acts as one kubelet release; only sanity takes a list (got ",
                             FLAGS_kubelet_version, ")"));
  }
  csi.release = releases.front();

  if (command == "probe") {
    if (FLAGS_registration_socket.empty()) {
      return Fail("probe: --registration-socket is required");
    }
    ndr::kubelet::ProbeOutcome outcome = ndr::kubelet::Probe(
        FLAGS_registration_socket, handshake, csi,
        FLAGS_notify ? ndr::kubelet::RegistrationVerdict::kSend
                     : ndr::kubelet::RegistrationVerdict::kWithhold);
    std::cout << outcome.json;
    return outcome.registered ? 0 : 1;
  }
  if (command == "jwks") {
    if (FLAGS_service_account_key_file.empty()) {
      return Fail("jwks: --service-account-key-file is required");
    }
    absl::StatusOr<std::unique_ptr<ndr::token::SigningKey>> key =
        ndr::token::SigningKey::Load(FLAGS_service_account_key_file);
    if (!key.ok()) return Fail(std::string(key.status().message()));
    std::cout << (*key)->Jwks().dump(2) << "\n";
    return 0;
  }
  if (command == "publish" || command == "unpublish" || command == "republish" ||
      command == "expand" || command == "stats" || command == "sanity") {
    if (FLAGS_pod.empty() && command != "sanity") return Fail(command + ": --pod is required");
    ndr::kubelet::PublishCommand publish;
    publish.pod_file = FLAGS_pod;
    publish.object_paths = absl::StrSplit(FLAGS_objects, ',', absl::SkipWhitespace());
    publish.plugin_registry_dir = FLAGS_plugin_registry_dir;
    publish.node.root_dir = FLAGS_root_dir;
    publish.node.node_name = FLAGS_node_name.empty() ? HostName() : FLAGS_node_name;
    for (absl::string_view d : absl::StrSplit(FLAGS_allowed_inline_drivers, ',',
                                              absl::SkipWhitespace())) {
      publish.node.allowed_inline_drivers.emplace(d);
    }
    // Each release's gates are checked now, so that a refused gate stops sanity before it runs.
    for (const ndr::kubelet::KubeletRelease& release : releases) {
      absl::StatusOr<ndr::kubelet::FeatureGates> gates =
          ndr::kubelet::ParseFeatureGatesAt(FLAGS_feature_gates, release.minor);
      if (!gates.ok()) {
        return Fail(absl::StrCat("--feature-gates: ", gates.status().message(),
                                 releases.size() > 1 ? " (at kubelet " + release.Name() + ")" : ""));
      }
      if (gates->recover_volume_expansion_failure && release.minor < 31) {
        // 1.26 to 1.30's alpha recovery path marks the claim otherwise (resizeStatus,
        // NodeResizeFailed); kubeletclient models 1.31's and later.
        return Fail(absl::StrCat(
            "--feature-gates: RecoverVolumeExpansionFailure=true at kubelet ", release.Name(),
            ": kubeletclient models the expansion-recovery path of kubelet 1.31 and later only "
            "(1.", release.minor, "'s alpha one marks the claim differently); give "
            "--kubelet-version=1.31 or later, or leave the gate off"));
      }
      if (release.minor == releases.front().minor) publish.node.feature_gates = *gates;
    }
    publish.node.release = releases.front();
    absl::StatusOr<ndr::kubelet::SeLinuxHost> selinux =
        ndr::kubelet::ResolveHostSeLinux(FLAGS_host_selinux);
    if (!selinux.ok()) return Fail(std::string(selinux.status().message()));
    publish.node.selinux = *selinux;
    if (FLAGS_block_host_ops == "auto") {
      publish.node.change_host = ndr::hostutil::CanChangeHost(&publish.node.host_skip_reason);
    } else if (FLAGS_block_host_ops == "skip") {
      publish.node.host_skip_reason = "--block-host-ops=skip";
    } else {
      return Fail("--block-host-ops: \"" + FLAGS_block_host_ops + "\" is not auto or skip");
    }
    publish.handshake = handshake;
    publish.csi = csi;
    publish.service_account_key_file = FLAGS_service_account_key_file;
    publish.service_account_issuer = FLAGS_service_account_issuer;
    if (publish.service_account_issuer.empty()) {
      return Fail("--service-account-issuer: must not be empty");
    }
    if (command == "sanity") return Sanity(publish, releases);
    // As kubelet at its start (the judge does it in its run, and undoes it).
    bool root_made_shared = false;
    if (absl::Status s = ndr::kubelet::SetUpRootDir(publish.node, &root_made_shared); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    if (root_made_shared) {
      NDR_LOG(INFO) << "Bind-mounted the root directory " << publish.node.root_dir
                    << " on itself with shared propagation, as kubelet does at start; "
                    << "`umount " << publish.node.root_dir << "` removes it";
    }
    ndr::kubelet::CommandOutcome outcome;
    if (command == "publish") {
      outcome = ndr::kubelet::RunPublish(publish);
    } else if (command == "unpublish") {
      outcome = ndr::kubelet::RunUnpublish(publish);
    } else if (command == "republish") {
      if (FLAGS_rounds < 1) return Fail("--rounds: must be at least 1");
      absl::StatusOr<absl::Duration> interval = ndr::ParseGoDuration(FLAGS_interval, "interval");
      if (!interval.ok()) return Fail(std::string(interval.status().message()));
      if (*interval < absl::ZeroDuration()) return Fail("--interval: must not be negative");
      outcome = ndr::kubelet::RunRepublish(publish, FLAGS_rounds, *interval);
    } else if (command == "expand") {
      if (FLAGS_volume.empty()) return Fail("expand: --volume is required");
      outcome = ndr::kubelet::RunExpand(publish, FLAGS_volume);
    } else {
      ndr::kubelet::StatsFormat format;
      if (FLAGS_format == "json") {
        format = ndr::kubelet::StatsFormat::kJson;
      } else if (FLAGS_format == "prometheus") {
        format = ndr::kubelet::StatsFormat::kPrometheus;
      } else {
        return Fail("--format: \"" + FLAGS_format + "\" is not json or prometheus");
      }
      outcome = ndr::kubelet::RunStats(publish, format);
    }
    std::cout << outcome.json;
    if (!outcome.error.empty()) return Fail(outcome.error);
    for (const std::string& error : outcome.volume_errors) Fail(error);
    return outcome.ok ? 0 : 1;
  }
  if (command == "watch") {
    if (FLAGS_node_status_file.empty()) return Fail("watch: --node-status-file is required");
    ndr::kubelet::WatchOptions options;
    options.plugin_registry_dir = FLAGS_plugin_registry_dir;
    options.node_status_file = FLAGS_node_status_file;
    options.node_name = FLAGS_node_name.empty() ? HostName() : FLAGS_node_name;
    options.handshake = handshake;
    options.csi = csi;
    ndr::kubelet::BlockTerminationSignals();
    if (absl::Status s = ndr::kubelet::RunWatch(options); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    return 0;
  }
  return Fail("unknown command \"" + command + "\"; usage:\n" + UsageLines());
}

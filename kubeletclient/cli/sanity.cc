#include "kubeletclient/cli/sanity.h"

#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/endpoint.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/sanity/checks.h"
#include "kubeletclient/sanity/root_dir.h"
#include "kubeletclient/sanity/sandbox.h"
#include "kubeletclient/sanity/sanity.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/running_kubelets.h"
#include "version/version.h"

DEFINE_string(csi_address, "",
              "sanity: judge the driver at this CSI socket (a path or unix:///path) directly, "
              "without a registrar: the judge offers it from a registration socket of its own, as "
              "our registrar would (GetPluginInfo's name, version 1.0.0), and kubelet's handshake "
              "runs against that.");
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
DEFINE_string(volume_handle, "",
              "Volumes to judge the driver with, comma-separated: handles the driver knows (or "
              "accepts, for a driver that makes its volumes on demand), each for every scenario, "
              "or SCENARIO=HANDLE for one of filesystem, block, generic-ephemeral. A scenario "
              "without: its volume is created (and attached) through the driver's Controller "
              "service.");
DEFINE_string(volume_mode, "",
              "Volume modes to judge, comma-separated: filesystem, block (default: both; a mode "
              "the driver refuses is then skipped).");
DEFINE_bool(inline_read_only, false,
            "sanity: the inline volume's readOnly (spec.volumes[].csi.readOnly), for drivers "
            "that serve read-only inline volumes only.");
DEFINE_string(inline_fs_type, "", "sanity: the inline volume's fsType (none by default).");
DEFINE_string(inline_volume_attributes, "",
              "sanity: the inline volume's volumeAttributes, as KEY=VALUE,... (a value cannot "
              "hold a comma).");
DEFINE_string(inline_publish_secret, "",
              "sanity: the inline volume's nodePublishSecretRef: the name of a Secret among "
              "--objects, in namespace kubeletclient-sanity (the made-up pod's).");
DEFINE_string(junit, "", "Also write the checks as JUnit XML to this file.");
DEFINE_string(only, "", "Run only the checks whose names match this regular expression.");
DEFINE_string(skip, "", "Skip the checks whose names match this regular expression.");
DEFINE_bool(list, false,
            "Print every check (its name, group, what it does and the kubelet functions) and "
            "exit.");

namespace ndr::kubelet::cli {
namespace {

// sanity's own flags over the node and the inputs `publish` has read from the shared ones.
absl::StatusOr<SanityOptions> SanityOptionsFromFlags(const PublishCommand& publish) {
  SanityOptions options;
  options.registration_socket = FLAGS_registration_socket;
  options.plugin_registry_dir = publish.plugin_registry_dir;
  options.csi_address = FLAGS_csi_address;
  if (!FLAGS_csi_address.empty() &&
      (!FLAGS_registration_socket.empty() ||
       !gflags::GetCommandLineFlagInfoOrDie("plugin_registry_dir").is_default)) {
    return absl::InvalidArgumentError(
        "sanity: --csi-address judges the driver directly; it cannot be given with "
        "--registration-socket or --plugin-registry-dir, which judge it through a registrar: "
        "give one of them");
  }
  if (!FLAGS_csi_address.empty()) {
    if (absl::StatusOr<std::string> path = UnixSocketPath(FLAGS_csi_address, "--csi-address");
        !path.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sanity: ", path.status().message()));
    }
  }
  if (!FLAGS_controller_address.empty()) {
    absl::StatusOr<std::string> path =
        UnixSocketPath(FLAGS_controller_address, "--controller-address");
    if (!path.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sanity: ", path.status().message()));
    }
    options.controller_address = *path;
  }
  // Without --root-dir the judge makes a directory of its own (Run), never kubelet's default: the
  // made-up pods it publishes would be kubelet's orphans. Given explicitly, kubelet's directory is
  // refused while a kubelet uses it.
  if (!gflags::GetCommandLineFlagInfoOrDie("root_dir").is_default) {
    if (absl::Status s = NotAKubeletsRootDir(publish.node.root_dir); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sanity: ", s.message()));
    }
  }
  // None: volumes the driver's Controller service creates (an error if it cannot).
  for (absl::string_view item : absl::StrSplit(FLAGS_volume_handle, ',', absl::SkipWhitespace())) {
    bool scenario_handle = false;
    for (const char* scenario : {"filesystem", "block", "generic-ephemeral"}) {
      if (absl::ConsumePrefix(&item, absl::StrCat(scenario, "="))) {
        if (item.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--volume-handle: ", scenario, "= names no handle (give SCENARIO=HANDLE)"));
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
      return absl::InvalidArgumentError(
          absl::StrCat("--inline-volume-attributes: \"", item,
                       "\" is not KEY=VALUE (pairs are separated by commas)"));
    }
    if (!options.inline_volume.attributes.emplace(kv[0], kv[1]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--inline-volume-attributes: ", kv[0], " is given twice"));
    }
  }
  for (absl::string_view mode : absl::StrSplit(FLAGS_volume_mode, ',', absl::SkipWhitespace())) {
    if (mode != "filesystem" && mode != "block") {
      return absl::InvalidArgumentError(
          absl::StrCat("--volume-mode: \"", mode, "\" is not filesystem or block"));
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
      return absl::InvalidArgumentError(absl::StrCat(
          "--volume-handle: ", scenario, "=", handles.front(),
          " is for a scenario that --volume-mode=", FLAGS_volume_mode,
          " leaves out (generic ephemeral volumes are filesystem volumes)"));
    }
  }
  for (const std::string* pattern : {&FLAGS_only, &FLAGS_skip}) {
    try {
      std::regex check(*pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(pattern == &FLAGS_only ? "--only" : "--skip", ": \"", *pattern,
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
  return options;
}

// Judges the driver once per release, in the order given; with several, each check's name
// starts with its release ("1.29/filesystem/publish"), each release is judged in a root
// directory of its own below --root-dir ("kubelet-1.29"), so that what one left cannot stand in
// another's way, and a line per release sums it up.
int Judge(SanityOptions options, const std::vector<KubeletRelease>& releases) {
  // A root directory only this user (and root, above it) may change, locked for the whole run
  // (and by the sandbox's cleaner until it has cleaned up): no other judge works there meanwhile.
  absl::StatusOr<UniqueFd> root_fd = sanity::OpenJudgesRootDir(options.node.root_dir, geteuid());
  if (!root_fd.ok()) return Fail(absl::StrCat("sanity: ", root_fd.status().message()));
  if (absl::Status s = sanity::LockRootDir(root_fd->get(), options.node.root_dir); !s.ok()) {
    return Fail(absl::StrCat("sanity: ", s.message()));
  }
  // Before anything is sent: a root directory holding what an earlier run left would have the
  // checks that meet it take it for their own.
  absl::StatusOr<sanity::Leftovers> leftovers = sanity::FindLeftovers(options.node.root_dir);
  if (!leftovers.ok()) {
    return Fail(absl::StrCat("sanity: --root-dir: ", leftovers.status().message()));
  }
  if (leftovers->total > 0) {
    return Fail(absl::StrCat("sanity: ",
                             sanity::LeftoversRefusal(options.node.root_dir, *leftovers)));
  }
  const std::string root_dir = options.node.root_dir;
  // A run that changes the host does it from a mount namespace of its own, with a cleaner that
  // outlives it (sandbox.h); entered before any thread starts, left when this function returns.
  std::unique_ptr<sanity::Sandbox> sandbox;
  if (options.node.change_host) {
    absl::StatusOr<std::unique_ptr<sanity::Sandbox>> entered =
        sanity::Sandbox::Enter(options.node.root_dir);
    if (!entered.ok()) return Fail(absl::StrCat("sanity: ", entered.status().message()));
    sandbox = *std::move(entered);
  }
  // Signals wait until a step is done, so that what was published is torn down (sanity.h); gRPC's
  // threads, started later, inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  SanityReport all;
  // Which judge gave the verdict, first in the output and in the JUnit XML.
  all.judge = absl::StrCat("kubeletclient ", version::Version(), " (commit ", version::Commit(),
                           ", built ", version::BuildDate(), ")");
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
  for (const KubeletRelease& release : releases) all.kubelet_releases.push_back(release.Name());
  std::vector<std::string> summaries;
  for (const KubeletRelease& release : releases) {
    options.node.release = release;
    options.csi.release = release;
    // Checked for every release already (PublishCommandFromFlags).
    options.node.feature_gates = *ParseFeatureGatesAt(FLAGS_feature_gates, release.minor);
    if (releases.size() > 1) {
      options.node.root_dir = absl::StrCat(root_dir, "/kubelet-", release.Name());
      std::cout << "=== kubelet " << release.Name() << " (root directory " << options.node.root_dir
                << ")\n";
    }
    SanityReport report = RunSanity(options, std::cout);
    if (!report.error.empty()) return Fail(report.error);
    all.driver = report.driver;
    for (CheckResult& check : report.checks) {
      if (releases.size() > 1) check.name = release.Name() + "/" + check.name;
      all.checks.push_back(std::move(check));
    }
    all.passed += report.passed;
    all.failed += report.failed;
    all.skipped += report.skipped;
    all.not_judged += report.not_judged;
    all.skipped_not_root += report.skipped_not_root;
    summaries.push_back(absl::StrCat("kubelet ", release.Name(), ": ", SummaryCounts(report)));
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
    junit << JunitXml(all);
    if (!junit.good()) return Fail("--junit: could not write " + FLAGS_junit);
  }
  if (all.interrupted) return 130;
  // A check not judged is never a pass: it fails the run as a failure does.
  return all.failed > 0 || all.not_judged > 0 ? 1 : 0;
}

int Run() {
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("sanity", Releases::kSeveral);
  if (!handshake.ok()) return Fail(handshake.status().message());
  absl::StatusOr<PublishCommand> publish = PublishCommandFromFlags(*handshake);
  if (!publish.ok()) return Fail(publish.status().message());
  if (FLAGS_list) {
    sanity::ListChecks(std::cout);
    return 0;
  }
  absl::StatusOr<SanityOptions> options = SanityOptionsFromFlags(*publish);
  if (!options.ok()) return Fail(options.status().message());
  if (!gflags::GetCommandLineFlagInfoOrDie("root_dir").is_default) {
    return Judge(*std::move(options), handshake->releases);
  }
  // No --root-dir: a new directory only this user may change (mkdtemp makes it 0700), removed
  // again when the run (and its cleaner) leave nothing in it but kubelet's empty directories.
  char made[] = "/tmp/kubeletclient-sanity-XXXXXX";
  if (mkdtemp(made) == nullptr) {
    return Fail(absl::StrCat("sanity: no --root-dir given, and making one with mkdtemp (", made,
                             ") failed: ", strerror(errno), "; give --root-dir=DIR"));
  }
  std::cout << "root directory: " << made << " (no --root-dir given: made for this run)\n";
  options->node.root_dir = made;
  const int status = Judge(*std::move(options), handshake->releases);
  // The judge's own mount namespace still has the directory's bind mount (the cleaner undid it in
  // the host's); a name this run made, in a directory only root may rename it in.
  umount2(made, UMOUNT_NOFOLLOW);
  // Empty directories only, deepest first: rmdir removes no file and no mount point, and nftw
  // neither follows a link nor crosses into another file system.
  nftw(
      made,
      [](const char* path, const struct stat*, int type, struct FTW*) {
        if (type == FTW_DP) rmdir(path);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  if (access(made, F_OK) == 0) {
    std::cerr << "sanity: " << made << " is left: the run left something in it\n";
  }
  return status;
}

}  // namespace

Command Sanity() {
  return {"sanity",
          "kubeletclient sanity --csi-address=SOCKET | --registration-socket=SOCKET | "
          "--plugin-registry-dir=DIR [--root-dir=DIR] [--volume-handle=H[,H...]] "
          "[--controller-address=SOCKET] [--objects=FILE_OR_DIR,...] [--storage-class=NAME] "
          "[--secrets-file=FILE] [--node-name=NAME] [--volume-mode=filesystem,block] "
          "[--inline-read-only] [--inline-fs-type=TYPE] [--inline-volume-attributes=K=V,...] "
          "[--inline-publish-secret=NAME] [--junit=FILE] [--only=REGEX] [--skip=REGEX] [--list] "
          "[--kubelet-version=1.N[,1.M...]] [--feature-gates=Name=bool,...] "
          "[--block-host-ops=auto|skip] "
          "[--service-account-key-file=PEM --service-account-issuer=URL]",
          WithHandshakeFlags({"csi_address", "controller_address", "registration_socket",
                              "plugin_registry_dir", "root_dir", "volume_handle", "objects",
                              "storage_class", "secrets_file", "node_name", "volume_mode",
                              "inline_read_only", "inline_fs_type", "inline_volume_attributes",
                              "inline_publish_secret", "junit", "only", "skip", "list",
                              "feature_gates", "host_selinux", "block_host_ops",
                              "service_account_key_file", "service_account_issuer"}),
          &Run};
}

}  // namespace ndr::kubelet::cli

// `kubeletclient sanity`: judges a CSI node plugin by what kubelet will do to it (at each release
// asked for), where csi-sanity judges it by the CSI spec with paths and arguments of its own
// choosing.
//
// The driver is registered as kubelet registers it (the registration handshake, NodeGetInfo),
// then every volume given (--volume-handle) is taken, in each volume mode asked for (and as an
// inline and a generic ephemeral volume, when the objects allow them; a driver whose CSIDriver
// lists only Ephemeral is judged by its inline volumes alone), through
// kubelet's own sequence on made-up pods of a made-up claim: the same code as `kubeletclient
// publish` and `unpublish` (publisher.h), so the paths, the order and the arguments are
// kubelet's. Between the steps come the calls kubelet makes in the situations drivers get wrong:
// the same NodeStageVolume and NodePublishVolume again after a kubelet restart, NodeUnpublishVolume
// and NodeUnstageVolume again when a teardown is retried, a second pod on a staged volume, a
// read-only pod, stats and online expansion of a published volume. Each check is named
// (<mode>/<check>, registration/<check>), says which kubelet function it stands for, and ends
// PASS, FAIL (with the request, the answer and what kubelet needs) or SKIP (with why).
//
// What it makes under --root-dir is removed again, also when a check fails or the run is
// interrupted (SIGINT, SIGTERM: the caller blocks them; they are noticed between steps).
#ifndef NDR_KUBELETCLIENT_SANITY_SANITY_H_
#define NDR_KUBELETCLIENT_SANITY_SANITY_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "kubeletclient/csi/csi_handler.h"
#include "kubeletclient/csi/volume_plan.h"
#include "kubeletclient/pluginmanager/handshake.h"

namespace ndr::kubelet {

struct SanityOptions {
  // The plugin to judge: its registration socket, a registry directory in which exactly one CSI
  // driver registers, or (direct mode) the driver's own CSI socket, which the judge offers
  // kubelet's handshake as our registrar would, from a registration socket of its own.
  std::string registration_socket;
  std::string plugin_registry_dir;
  std::string csi_address;
  // The driver's Controller service, where it is served on a socket of its own (a path); empty:
  // on the node plugin's socket. Only for volumes made when no handle is given.
  std::string controller_address;
  // CSIDriver, PersistentVolumes (a PV with a volume handle given lends its attributes, fsType,
  // mount options and secret references), Secrets, StorageClasses: optional.
  std::vector<std::string> object_paths;
  // The StorageClass of --objects that volumes made when no handle is given come from, as the
  // external-provisioner makes them (provisioning.h); empty: the one whose provisioner is the
  // driver, if there is exactly one. Without a StorageClass a volume is made of a name, a size and
  // a capability, as csi-sanity makes it.
  std::string storage_class;
  // A secrets file in csi-sanity's format (secrets_file.h): each call's secrets, where no
  // StorageClass names a Secret for it.
  std::string secrets_file;
  std::vector<std::string> volume_handles;
  // Handles for one scenario only ("filesystem", "block", "generic-ephemeral"), given as
  // SCENARIO=HANDLE: they take the place of volume_handles there.
  std::map<std::string, std::vector<std::string>> scenario_handles;
  // The inline volume of the made-up pod, as a pod's spec.volumes[].csi would say it.
  struct InlineVolume {
    bool read_only = false;
    std::string fs_type;
    std::map<std::string, std::string> attributes;
    std::string publish_secret;  // nodePublishSecretRef.name: a Secret of --objects in kNamespace
  } inline_volume;
  // "filesystem", "block"; empty: both, and a mode the driver refuses is skipped.
  std::vector<std::string> volume_modes;
  std::string only, skip;  // ECMAScript regular expressions over check names; empty: none
  // The API server's service-account signing key and issuer, for a CSIDriver with tokenRequests
  // (as `publish` has them); no key: such a driver's volumes are skipped.
  std::string service_account_key_file;
  std::string service_account_issuer = "https://kubernetes.default.svc.cluster.local";
  NodeOptions node;  // root_dir, node_name, feature gates, host changes
  HandshakeTimeouts handshake;
  CsiHandlerOptions csi;
};

struct CheckResult {
  // kNotJudged: a check this run could not carry out because an earlier check of the same run
  // left state behind (its teardown failed) that it would take for its own. Never a pass: it
  // counts as a failure in the exit status, and as an error in JUnit.
  enum class Verdict { kPass, kFail, kSkip, kNotJudged };
  std::string name;  // e.g. "filesystem/restart-replay"
  Verdict verdict = Verdict::kSkip;
  std::string summary;               // one line
  std::vector<std::string> details;  // FAIL: the request, the answer, what kubelet needs
  std::string kubelet;               // the kubelet behaviour it stands for: file and function
  double seconds = 0;                // from the previous verdict (or the start) to this one
};

struct SanityReport {
  std::string judge;   // which build judged ("kubeletclient 1.0.0 (commit ...)"), if set
  std::string driver;  // the driver judged, once registered
  std::vector<std::string> kubelet_releases;  // the releases judged by ("1.29"), if set
  std::vector<CheckResult> checks;
  int passed = 0, failed = 0, skipped = 0, not_judged = 0;
  int skipped_not_root = 0;  // of the skipped, those that needed host changes (root on the host)
  std::string error;         // why nothing could be judged (bad input); then no checks ran
  bool interrupted = false;  // SIGINT or SIGTERM arrived; the rest was skipped, then cleaned up
};

// Runs the checks, writing each line to `out` as it is decided, then the summary line.
SanityReport RunSanity(const SanityOptions& options, std::ostream& out);

// The counts of a summary line: "N passed, M failed, S skipped", `skipped_note` after the
// skipped ones if given, then ", K not judged (...)" when some checks could not be carried out.
std::string SummaryCounts(const SanityReport& report, const std::string& skipped_note = "");

// The report as JUnit XML (one testsuite named after the driver and the kubelet releases, a
// testcase per check with its time in seconds; failure, error (not judged) and skipped elements;
// the judge, when the report names it, as the testsuite's property "judge").
std::string JunitXml(const SanityReport& report);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_SANITY_SANITY_H_

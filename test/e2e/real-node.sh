#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, with this project's registrar in a real pod:
# builds (or takes) kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl
# of one release from the Kubernetes Go modules, runs them with Debian's etcd, containerd and
# runc, deploys deploy/ with the project's images, runs the checks below, prints one line
# per check and `N passed, M failed`, and tears everything down (no process, mount, interface,
# iptables rule, cgroup or sysctl change left). Not part of .ci/run: it needs root, Go and the
# Go module proxy (or --kube-bin-dir).
#
#   bash test/e2e/real-node.sh [--kube-version=v1.37.2] [--kube-bin-dir=DIR] [--cache-dir=DIR]
#                              [--source-dir=DIR] [--release-dir=DIR] [--record=DIR] [--e2e=SET]
#                              [--e2e-limit=N]
#                              [--e2e-rerun=WHICH] [--no-e2e] [--keep]
#                              [--day2[=NAME,...]] [--day2-kubelet-from=VERSION] [--day2-api-away=MINUTES,...]
#
# --kube-version   the Kubernetes release to build and run (v1.26.15 ... v1.37.x; default v1.37.2)
# --kube-bin-dir   take kubelet, kube-apiserver, kube-controller-manager, kube-scheduler,
#                  kube-proxy, kubectl (and e2e.test) from DIR instead of building them
# --cache-dir      where built binaries are kept between runs (default /var/cache/ndr-real-node)
# --source-dir     a directory with git clones of kubernetes-csi/csi-driver-host-path and
#                  kubernetes-csi/node-driver-registrar (as those names), which the Go module
#                  proxy does not serve: the mock CSI driver and the Go registrar of the e2e
#                  check are built from them at the tags the release's manifests name; and of
#                  external-provisioner, external-attacher and external-resizer, for the tags
#                  the proxy does not serve (v1.26's manifests name such)
# --release-dir    run a release as it was released instead of building this checkout: the
#                  registrar's and the sample driver's image indexes and the amd64 archives of
#                  the registrar, the sample driver and kubeletclient from DIR (images/release.sh's
#                  output), each checked against DIR/SHA256SUMS; the tables name the release and
#                  the commit its binaries say they were built from
# --record         where to keep the sample driver's record of the real kubelet's requests, the
#                  pods and objects of checks 2 and 3, kubeletclient's predictions for them and
#                  the comparison (default /tmp/ndr-rn/record, which the next run replaces)
# --e2e            which of Kubernetes' CSI mock e2e tests check 5 runs, with ours and with the
#                  Go registrar: basic (default: pod info on mount, inline volumes, tokens; about
#                  15 minutes), full (every test one node can run: about 84 at v1.37, hours),
#                  volume-health (the CSIVolumeHealth tests, with that feature gate on), none.
#                  full and volume-health keep each test's outcome per registrar under
#                  CACHE_DIR/e2e/VERSION/SET/ and run only what is missing: run again to go on
# --e2e-limit      with --e2e=full or volume-health, run at most N tests (with each registrar)
# --e2e-rerun      with --e2e=full or volume-health, run again: failed (the tests that did not
#                  pass with both), differ (the tests whose outcomes differ), or the tests whose
#                  names match a regex
# --no-e2e         the same as --e2e=none: check 5 is reported as SKIP, which a complete run
#                  never is
# --day2           instead of checks 1-5, the day-two scenarios (all, or those named): kubelet
#                  (restarted, then upgraded from --day2-kubelet-from), drivers (two on one
#                  node), swap (Go registrar -> ours -> Go by rolling update), locked-down
#                  (a tight securityContext), api-away (the API server stopped while the
#                  registrars start), brownout (the API server answering nothing for 3 min),
#                  rollback (ours crash-looping, rolled back to the Go registrar), crash (ours
#                  sent SIGSEGV, then refused for good: what kubectl shows of each end), reboot
#                  (every node process killed, /run cleared); each
#                  with the Go registrar (built from --source-dir's node-driver-registrar at
#                  v2.17.0) and ours side by side, in one table
# --day2-kubelet-from  the release the kubelet scenario upgrades from (default v1.36.3; the
#                  node starts with that kubelet when the kubelet scenario runs)
# --day2-api-away  how long the API server stays away, in minutes, one run each (default 1,3,6)
# --keep           leave the node running after the checks (for a look around); teardown with
#                  `bash test/e2e/real-node.sh --teardown`
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The commit this run builds and runs, taken at its start: the checkout may move on while it runs.
RN_COMMIT=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo -dirty)

RN_KUBE_VERSION=v1.37.2
RN_CACHE=/var/cache/ndr-real-node
RN_BIN=
RN_SOURCE=
RN_RECORD_DIR=
RN_RELEASE_DIR=
# The Go registrar of check 5's side-by-side run: the release this project stands in for.
RN_GO_REGISTRAR_TAG=v2.17.0
keep=false
E2E_SET=basic
E2E_LIMIT=0
E2E_RERUN=
teardown_only=false
DAY2=
D2_KUBELET_FROM=v1.36.3
D2_API_AWAY=(1 3 6)
for arg in "$@"; do
  case $arg in
    --kube-version=*) RN_KUBE_VERSION=${arg#*=} ;;
    --kube-bin-dir=*) RN_BIN=${arg#*=} ;;
    --cache-dir=*) RN_CACHE=${arg#*=} ;;
    --source-dir=*) RN_SOURCE=${arg#*=} ;;
    --record=*) RN_RECORD_DIR=${arg#*=} ;;
    --release-dir=*) RN_RELEASE_DIR=${arg#*=} ;;
    --keep) keep=true ;;
    --no-e2e) E2E_SET=none ;;
    --e2e=*) E2E_SET=${arg#*=} ;;
    --e2e-limit=*) E2E_LIMIT=${arg#*=} ;;
    --e2e-rerun=*) E2E_RERUN=${arg#*=} ;;
    --teardown) teardown_only=true ;;
    --day2) DAY2="kubelet drivers swap locked-down api-away brownout rollback crash reboot" ;;
    --day2=*) DAY2=${arg#*=} DAY2=${DAY2//,/ } ;;
    --day2-kubelet-from=*) D2_KUBELET_FROM=${arg#*=} ;;
    --day2-api-away=*) IFS=, read -r -a D2_API_AWAY <<<"${arg#*=}" ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "real-node.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -n $RN_RELEASE_DIR && ( $RN_RELEASE_DIR != /* || ! -f $RN_RELEASE_DIR/SHA256SUMS ) ]]; then
  echo "real-node.sh: --release-dir=$RN_RELEASE_DIR: give the absolute path of a release's directory" \
    "(images/release.sh VERSION DIR), which holds SHA256SUMS" >&2
  exit 2
fi
if [[ -n $RN_RECORD_DIR && $RN_RECORD_DIR != /* ]]; then
  echo "real-node.sh: --record=$RN_RECORD_DIR: give an absolute directory" >&2
  exit 2
fi
case $E2E_SET in
  basic | full | volume-health | none) ;;
  *) echo "real-node.sh: --e2e=$E2E_SET: give basic, full, volume-health or none" >&2; exit 2 ;;
esac
if [[ ! $E2E_LIMIT =~ ^[0-9]+$ ]]; then
  echo "real-node.sh: --e2e-limit=$E2E_LIMIT: give a number of tests (0: all)" >&2
  exit 2
fi
if [[ ( $E2E_LIMIT != 0 || -n $E2E_RERUN ) && $E2E_SET != full && $E2E_SET != volume-health ]]; then
  echo "real-node.sh: --e2e-limit and --e2e-rerun go with --e2e=full or --e2e=volume-health" >&2
  exit 2
fi
for name in $DAY2; do
  case $name in
    kubelet | drivers | swap | locked-down | api-away | brownout | rollback | crash | reboot) ;;
    *) echo "real-node.sh: --day2=$name: give kubelet, drivers, swap, locked-down, api-away, brownout, rollback, crash or reboot" >&2; exit 2 ;;
  esac
done
for minutes in "${D2_API_AWAY[@]}"; do
  [[ $minutes =~ ^[1-9][0-9]?$ ]] || { echo "real-node.sh: --day2-api-away: give whole minutes, such as 1,3,6" >&2; exit 2; }
done
if [[ " $* " == *" --day2= "* ]]; then
  echo "real-node.sh: --day2=: name the scenarios (kubelet, drivers, swap, locked-down, api-away, brownout, rollback, crash, reboot), or give --day2 for all" >&2
  exit 2
fi
# The volume-health tests need the feature on in the API server and kubelet.
RN_FEATURE_GATES=
[[ $E2E_SET == volume-health ]] && RN_FEATURE_GATES=CSIVolumeHealth=true
if [[ ! $RN_KUBE_VERSION =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || ((BASH_REMATCH[1] < 26)); then
  echo "real-node.sh: --kube-version=$RN_KUBE_VERSION: give a release v1.26.0 or newer, such as v1.37.2" >&2
  exit 2
fi
# The day-two upgrade goes from an older kubelet to this run's release; kubelet may be up to three
# minor releases older than the API server (Kubernetes' version skew policy).
if [[ " $DAY2 " == *" kubelet "* ]]; then
  run_minor=${RN_KUBE_VERSION#v1.} run_minor=${run_minor%%.*}
  if [[ ! $D2_KUBELET_FROM =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || ((BASH_REMATCH[1] < 26)) ||
    ((BASH_REMATCH[1] >= run_minor || BASH_REMATCH[1] < run_minor - 3)); then
    echo "real-node.sh: --day2-kubelet-from=$D2_KUBELET_FROM: give a release older than $RN_KUBE_VERSION" \
      "by one to three minor releases (the version skew kubelet is allowed), v1.26 or newer, such as v1.36.3" >&2
    exit 2
  fi
fi

# Short fixed paths: unix sockets live under them.
RN_WORK=/tmp/ndr-rn
RN_RUN=/run/ndr-rn
RN_BRIDGE=ndr-rn0
RN_NODE=ndr-node
RN_ETCD_PORT=23790
RN_API_PORT=16443
RN_KCM_PORT=10357
RN_SCHED_PORT=10359
RN_PAUSE_IMAGE=localhost/ndr/pause:3.10
RN_BUSYBOX_IMAGE=localhost/ndr/busybox:e2e
# The real sidecars of the persistent-volume check, built from their Go modules.
ATTACHER=(github.com/kubernetes-csi/external-attacher/v4 v4.13.0 cmd/csi-attacher)
PROVISIONER=(github.com/kubernetes-csi/external-provisioner/v6 v6.4.0 cmd/csi-provisioner)
RN_ATTACHER_IMAGE=localhost/ndr/csi-attacher:${ATTACHER[1]}
RN_PROVISIONER_IMAGE=localhost/ndr/csi-provisioner:${PROVISIONER[1]}
DRIVER=sample.csi.example.com

source "$here/real-node/cluster.sh"
source "$here/real-node/release-images.sh"
source "$repo/test/util/run-containerd.sh"

if $teardown_only; then
  rn_teardown
  exit 0
fi

# --- results --------------------------------------------------------------------------------

passed=0 failed=0 skipped=0
declare -a results=()
result() {  # result PASS|FAIL|SKIP NAME DETAIL
  local line
  line=$(printf '%-4s %s: %s' "$1" "$2" "$3")
  results+=("$line")
  echo "$line"
  case $1 in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
  esac
}
summary() {
  echo
  echo "real-node.sh, Kubernetes $RN_KUBE_VERSION:"
  printf '  %s\n' "${results[@]}"
  echo "$passed passed, $failed failed, $skipped skipped"
}
skip_all() {
  local checks=(registration inline-ephemeral persistent-volume kubeletclient-prediction survival kubernetes-e2e)
  [[ -n $DAY2 ]] && checks=($(printf 'day2-%s ' $DAY2))
  for c in "${checks[@]}" teardown; do
    result SKIP "$c" "$1"
  done
  summary
  exit 0
}

# --- what the machine must offer ------------------------------------------------------------

if ((EUID != 0)); then skip_all "not root: kubelet, containerd and mounts need root"; fi
if ! grep -qw overlay /proc/filesystems && ! modprobe overlay 2>/dev/null; then
  skip_all "no overlay filesystem: containerd's overlayfs snapshotter needs it"
fi
if [[ ! -d /sys/fs/cgroup ]] || [[ -z "$(ls /sys/fs/cgroup 2>/dev/null)" ]]; then
  skip_all "no cgroup filesystem under /sys/fs/cgroup"
fi
if pgrep -x kubelet >/dev/null || { [[ -d /var/lib/kubelet/pods && ! -e $RN_WORK/ours ]]; }; then
  echo "real-node.sh: a kubelet runs on this machine, or /var/lib/kubelet/pods is another" \
    "kubelet's: this script runs its own kubelet at /var/lib/kubelet. Stop it or move that away." >&2
  exit 2
fi

source "$repo/test/install-deps.sh"
need=()
for pair in etcd:etcd-server containerd:containerd runc:runc openssl:openssl curl:curl \
  iptables-save:iptables /usr/lib/cni/bridge:containernetworking-plugins gcc:gcc; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [[ -x ${pair%%:*} ]] || need+=("${pair#*:}")
done
# The busybox image (and the mock driver's mount) need a static busybox; Debian's plain busybox
# package is dynamically linked.
if [[ ! -x /bin/busybox ]] || ldd /bin/busybox >/dev/null 2>&1; then need+=(busybox-static); fi
if ((${#need[@]})); then
  rn_log "installing Debian packages: ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 || {
    echo "real-node.sh: could not install ${need[*]}" >&2
    exit 1
  }
fi

# --- binaries and images --------------------------------------------------------------------

if [[ -z $RN_BIN ]]; then
  RN_BIN=$RN_CACHE/kube/$RN_KUBE_VERSION
  bash "$here/real-node/build-kube.sh" "$RN_KUBE_VERSION" "$RN_BIN" >&2 || {
    echo "real-node.sh: building Kubernetes $RN_KUBE_VERSION failed (above)" >&2
    exit 1
  }
fi
for b in kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; do
  if [[ ! -x $RN_BIN/$b ]]; then
    echo "real-node.sh: $RN_BIN/$b is missing" >&2
    exit 2
  fi
done
rn_log "kubelet: $("$RN_BIN/kubelet" --version)"

# Start from a clean slate: an earlier run that was killed may have left things behind.
rn_teardown 2>/dev/null
# Removed never across a mount point (one left is named, and the run stops), and made anew by this
# run: a directory someone else made first is refused, not used.
ndr_remove_tree "$RN_WORK" || exit 1
ndr_make_private_dir "$RN_WORK" "the real node's work directory" 0755 || exit 1
mkdir -p "$RN_WORK/logs" "$RN_WORK/images"
touch "$RN_WORK/ours"
for s in "${RN_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$RN_WORK/sysctls.before"
# Every path under kubelet's directories that was there before: the teardown removes the rest.
find /var/lib/kubelet /var/log/pods /var/log/containers 2>/dev/null >"$RN_WORK/paths.before"
rn_host_snapshot "$RN_WORK/host.before"
ndr_run_containerd_note "$RN_WORK/run-containerd.before"

RN_TOOLS=$RN_WORK/tools
if [[ -n $RN_RELEASE_DIR ]]; then
  rn_log "taking the registrar and sample-driver images, and kubeletclient, from $RN_RELEASE_DIR"
  release_version=$(rn_take_release "$RN_RELEASE_DIR" "$RN_WORK/images" "$RN_TOOLS") ||
    { echo "real-node.sh: taking the release from $RN_RELEASE_DIR failed (above)" >&2; exit 1; }
  # The commit the release's binaries were built from, not this checkout's.
  RN_COMMIT="$("$RN_TOOLS/csi-node-driver-registrar" --version | sed -n 's/^commit: //p' |
    cut -c1-12) (release $release_version's images)"
else
  rn_log "building the registrar and sample-driver images, and kubeletclient"
  (
    cd "$repo" &&
      ndr_bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
        //test/csidriver:sample-csi-driver.stripped //kubeletclient:kubeletclient >&2 &&
      bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null) &&
      bash images/build-images.sh "$RN_WORK/images" \
        "amd64=$bin/registrar/csi-node-driver-registrar.stripped,$bin/test/csidriver/sample-csi-driver.stripped" >&2 &&
      mkdir -p "$RN_TOOLS" &&
      cp "$bin/registrar/csi-node-driver-registrar.stripped" "$RN_TOOLS/csi-node-driver-registrar" &&
      cp "$bin/test/csidriver/sample-csi-driver.stripped" "$RN_TOOLS/sample-csi-driver" &&
      cp "$bin/kubeletclient/kubeletclient" "$RN_TOOLS/kubeletclient"
  ) || { echo "real-node.sh: building the images failed (above)" >&2; exit 1; }
fi
RN_RECORD_DIR=${RN_RECORD_DIR:-$RN_WORK/record}
rm -rf "$RN_RECORD_DIR"/{inline-info,inline-no-info,persistent,node,calls.jsonl,comparison.txt}
mkdir -p "$RN_RECORD_DIR"
pack() {  # pack NAME IMAGE_REF ENTRYPOINT=FILE [MORE=FILE | LINK->TARGET ...]
  local name=$1
  shift
  python3 "$here/real-node/docker_archive.py" "$RN_WORK/images/$name.tar" "$@"
}
# The busybox image has the upstream e2e busybox image's users and groups: tests read names from
# `ls -l` (the CSI mock suite's fsGroup tests expect a file of group root to show "root").
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' \
  >"$RN_WORK/images/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$RN_WORK/images/group"
gcc -static -Os -s -o "$RN_WORK/images/pause" "$here/real-node/pause.c" &&
  pack pause "$RN_PAUSE_IMAGE" "/pause=$RN_WORK/images/pause" &&
  pack busybox "$RN_BUSYBOX_IMAGE" "/bin/busybox=/bin/busybox" \
    "/etc/passwd=$RN_WORK/images/passwd" "/etc/group=$RN_WORK/images/group" \
    $(/bin/busybox --list | grep -vx busybox | sed 's|.*|/bin/&->busybox|') ||
  { echo "real-node.sh: building the pause and busybox images failed" >&2; exit 1; }
# The day-two scenarios: the Go registrar's image, and the previous release's kubelet.
D2_GO_IMAGE= D2_GO_WHY=
if [[ -n $DAY2 ]]; then
  go_registrar=$RN_CACHE/sidecars/csi-node-driver-registrar-$RN_GO_REGISTRAR_TAG
  if [[ -z $RN_SOURCE || ! -d $RN_SOURCE/node-driver-registrar ]]; then
    D2_GO_WHY="give --source-dir with a node-driver-registrar clone (the Go module proxy does not serve it)"
  elif bash "$here/real-node/build-from-checkout.sh" "$RN_SOURCE/node-driver-registrar" \
    "$RN_GO_REGISTRAR_TAG" cmd/csi-node-driver-registrar "$go_registrar" >&2 &&
    pack go-registrar "localhost/ndr/go-csi-node-driver-registrar:$RN_GO_REGISTRAR_TAG" \
      "/csi-node-driver-registrar=$go_registrar"; then
    D2_GO_IMAGE=localhost/ndr/go-csi-node-driver-registrar:$RN_GO_REGISTRAR_TAG
  else
    D2_GO_WHY="building it from $RN_SOURCE/node-driver-registrar failed (above)"
  fi
  if [[ " $DAY2 " == *" kubelet "* ]]; then
    if bash "$here/real-node/build-kube.sh" "$D2_KUBELET_FROM" "$RN_CACHE/kube/$D2_KUBELET_FROM" >&2; then
      RN_KUBELET_BIN=$RN_CACHE/kube/$D2_KUBELET_FROM/kubelet
    else
      D2_KUBELET_FROM_WHY="building kubelet $D2_KUBELET_FROM failed (above)"
      D2_KUBELET_FROM=
    fi
  fi
fi
for sidecar in ATTACHER PROVISIONER; do
  declare -n spec=$sidecar
  binary=$RN_CACHE/sidecars/${spec[2]##*/}-${spec[1]}
  bash "$here/real-node/build-go-command.sh" "${spec[@]}" "$binary" &&
    pack "${spec[2]##*/}" "localhost/ndr/${spec[2]##*/}:${spec[1]}" "/${spec[2]##*/}=$binary" ||
    { echo "real-node.sh: building ${spec[0]} ${spec[1]} failed (above)" >&2; exit 1; }
done

finish() {
  local rc=$?
  # The day-two scenarios' CSINode watch, which would otherwise outlive the API server.
  if declare -F d2_watch_stop >/dev/null; then d2_watch_stop; fi
  if ((rc > 128)); then result FAIL interrupted "the run was stopped by signal $((rc - 128)) before every check ran"; fi
  if $keep; then
    rn_log "--keep: the node stays up; kubectl --kubeconfig=$RN_WORK/admin.kubeconfig ...;" \
      "bash test/e2e/real-node.sh --teardown ends it"
    summary
    return
  fi
  rn_teardown
  rn_host_snapshot "$RN_WORK/host.after"
  if diff -u "$RN_WORK/host.before" "$RN_WORK/host.after" >"$RN_WORK/host.diff"; then
    result PASS teardown "no process, mount, interface, KUBE-* rule, kubepods cgroup, sysctl or path left"
  else
    result FAIL teardown "left behind (- before, + after): $(grep '^[-+][^-+]' "$RN_WORK/host.diff" | tr '\n' ' ')"
  fi
  summary
  if ((failed == 0)); then exit 0; else exit 1; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the node -------------------------------------------------------------------------------

RN_NODE_IP=$(rn_node_ip)
[[ -n $RN_NODE_IP ]] || { echo "real-node.sh: this machine has no global IPv4 address to advertise" >&2; exit 1; }
rn_make_pki
up() {
  rn_start_etcd && rn_start_apiserver && rn_start_controller_manager && rn_start_scheduler &&
    rn_start_containerd &&
    for image in pause busybox csi-attacher csi-provisioner; do
      rn_ctr images import "$RN_WORK/images/$image.tar" >&2 || return 1
    done &&
    rn_ctr images import "$RN_WORK/images/csi-node-driver-registrar.oci.tar" >&2 &&
    rn_ctr images import "$RN_WORK/images/sample-csi-driver.oci.tar" >&2 &&
    { [[ -z $D2_GO_IMAGE ]] || rn_ctr images import "$RN_WORK/images/go-registrar.tar" >&2; } &&
    rn_start_kubelet && rn_start_kube_proxy
}
if ! up; then
  if [[ -n $DAY2 ]]; then
    for name in $DAY2; do result FAIL "day2-$name" "not run: the node did not come up (logs under $RN_WORK/logs, shown above)"; done
  else
    result FAIL registration "the node did not come up (logs under $RN_WORK/logs, shown above)"
  fi
  exit 1
fi

source "$here/real-node/checks.sh"
source "$here/real-node/prediction.sh"
source "$here/real-node/e2e-images.sh"
if [[ -n $DAY2 ]]; then
  source "$here/real-node/day2.sh"
  run_day2 $DAY2
  exit 0  # the verdict and the teardown are finish's
fi
check_registration
if [[ ${results[-1]} == PASS* ]]; then
  check_inline_ephemeral
  check_persistent_volume
  check_prediction
  check_survival
else
  for c in inline-ephemeral persistent-volume kubeletclient-prediction survival; do
    result FAIL $c "not run: the driver never registered"
  done
fi
if [[ $E2E_SET == none ]]; then
  result SKIP kubernetes-e2e "not asked for (--e2e=none)"
elif [[ ${results[0]} == PASS* ]]; then
  if prepare_e2e 2> >(tee "$RN_WORK/logs/e2e-prepare.log" >&2) >/dev/null; then
    if [[ $E2E_SET == basic ]]; then check_kubernetes_e2e; else check_kubernetes_e2e_suite; fi
  else
    result FAIL kubernetes-e2e "could not prepare it: $(tail -1 "$RN_WORK/logs/e2e-prepare.log")"
  fi
else
  result FAIL kubernetes-e2e "not run: the driver never registered"
fi

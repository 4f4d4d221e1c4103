#!/usr/bin/env bash
# The judge in a driver author's CI, run here as the recipe in docs/judge-in-ci.md says, with a
# real container runtime (podman, from Debian): docs/examples/judge-in-ci.sh itself, three times.
#
#   1. the judge image against the sample driver's image: every check must pass;
#   2. the same, with the judge killed with SIGKILL in the middle of its block volume checks (it
#      stops itself after block/publish, through the test hook KUBELETCLIENT_SANITY_TEST_STOP_AFTER,
#      so that the kill lands there every time): the run must fail, and leave nothing;
#   3. the judge image against a public driver built from its source: the CSI mock driver of
#      kubernetes-csi/csi-test v3.1.1 (Go, from the Go module proxy), in an image made FROM
#      scratch here; its verdict line is recorded.
#
# Before and after each run, the host's mount table (/proc/self/mountinfo: mount points and file
# system types), its loop devices (losetup) and /var/lib/kubelet (every path, type and mode) must
# be identical. Figures and verdicts go to OUT (default: /var/cache/ndr-judge-in-containers).
#
#   sudo bash test/e2e/judge-in-containers.sh [OUT]
#
# Needs root, the network for apt (podman) and the Go module proxy (the mock driver), and Go at
# /usr/local/go. Not part of .ci/run. Takes about ten minutes on 2 cores, most of it the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then
  echo "run as root (sudo bash $0): the judge mounts and makes loop devices" >&2
  exit 1
fi
out=${1:-/var/cache/ndr-judge-in-containers}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source test/install-deps.sh
ndr_install_host_deps python3
command -v podman >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y podman >&2
go=/usr/local/go/bin/go
[ -x "$go" ] || { echo "Go is needed at $go to build the mock driver" >&2; exit 1; }
export ENGINE=podman
# This machine's kernel refuses runc's setrlimit of an open-files limit above the machine's hard
# limit (20000) and of a process limit above its pid_max (32768), both of which podman may ask for
# (1048576 open files by default for root; with --ulimit given, the caller's process limit): the
# machine's own limits instead ("error setting rlimit type 7", "type 6" otherwise). A CI runner
# needs nothing of the kind.
ENGINE_ARGS="--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=$(cat /proc/sys/kernel/pid_max):$(cat /proc/sys/kernel/pid_max)"
export ENGINE_ARGS

echo "==> building the judge's and the sample driver's images (amd64)"
# shellcheck disable=SC2046
ndr_bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
  //test/csidriver:sample-csi-driver.stripped //kubeletclient:kubeletclient.stripped
bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null)
rm -rf "$out/images"
bash images/build-images.sh "$out/images" "amd64=$bin/registrar/csi-node-driver-registrar.stripped,$bin/test/csidriver/sample-csi-driver.stripped,$bin/kubeletclient/kubeletclient.stripped" >/dev/null
for image in kubeletclient sample-csi-driver; do
  skopeo copy -q "oci-archive:$out/images/$image.oci.tar" "containers-storage:localhost/ndr/$image:ci"
done
judge_image=localhost/ndr/kubeletclient:ci

echo "==> building the CSI mock driver of csi-test v3.1.1 from the Go module proxy"
mock=$out/mock-driver
mkdir -p "$mock"
(
  cd "$mock"
  [ -f go.mod ] || "$go" mod init mockbuild >/dev/null 2>&1
  GOFLAGS=-mod=mod "$go" get github.com/kubernetes-csi/csi-test/v3@v3.1.1 >/dev/null 2>&1
  CGO_ENABLED=0 GOFLAGS=-mod=mod "$go" build -trimpath -o mock-driver \
    github.com/kubernetes-csi/csi-test/v3/cmd/mock-driver
  printf 'FROM scratch\nCOPY mock-driver /mock-driver\nENTRYPOINT ["/mock-driver"]\n' >Containerfile
  podman build -q -t localhost/ndr/csi-mock-driver:v3.1.1 . >/dev/null
)

# What the host has that a run could change. The container runtime's own storage mount (podman
# binds its overlay directory onto itself while it works, and leaves it or not as it exits) is the
# runtime's, not the run's: left out.
host_state() {
  awk '{print $5, $(NF-2)}' /proc/self/mountinfo | grep -v '^/var/lib/containers/storage/overlay ' |
    sort
  echo "--- loop devices"
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | sort
  echo "--- /var/lib/kubelet"
  if [ -e /var/lib/kubelet ]; then
    find /var/lib/kubelet -printf '%p %y %m\n' 2>/dev/null | sort
  else
    echo absent
  fi
}
# Compares the host with `$out/before`, naming the run; 1 if anything differs.
same_host() {
  host_state >"$out/after"
  if diff -u "$out/before" "$out/after" >"$out/host-diff-$1"; then
    echo "    host unchanged after $1: mount table, loop devices, /var/lib/kubelet"
    return 0
  fi
  echo "    HOST CHANGED after $1:" >&2
  cat "$out/host-diff-$1" >&2
  return 1
}
verdict() { grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$1" | tail -n 1; }
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

in=$out/in
mkdir -p "$in"
cp test/demo/csidriver.yaml "$in/csidriver.yaml"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$in/sa.key" 2>/dev/null
failures=0
summary=$out/summary.txt
: >"$summary"
host_state >"$out/before"

# The recipe with the judge's image and $in at /in, its results in $out/NAME; the rest of the
# arguments are its variables (VAR=VALUE).
recipe() {
  local name=$1
  shift
  env JUDGE_IMAGE="$judge_image" INPUT_DIR="$in" RESULTS_DIR="$out/$name" "$@" \
    bash docs/examples/judge-in-ci.sh
}
sample_driver=(DRIVER_IMAGE=localhost/ndr/sample-csi-driver:ci
  "DRIVER_ARGS=--endpoint=unix:///csi/csi.sock --nodeid=ci-node --stage-unstage"
  "JUDGE_ARGS=--volume-handle=ci-vol --objects=/in/csidriver.yaml --service-account-key-file=/in/sa.key")
# One judged run, LABEL NAME VAR=VALUE...: its exit status (rc), verdict line (line) and time
# are printed and go to the summary.
judged_run() {
  local label=$1 name=$2 start end
  shift 2
  start=$(now)
  rc=0
  recipe "$name" "$@" >/dev/null 2>&1 || rc=$?
  end=$(now)
  line=$(verdict "$out/$name/sanity.txt")
  echo "    exit $rc, $(seconds "$start" "$end") s: $line"
  printf '%s\t%s\t%s s\texit %s\n' "$label" "$line" "$(seconds "$start" "$end")" "$rc" >>"$summary"
}

echo "==> 1. the judge image against the sample driver's image"
rm -rf "$out/sample" "$out/killed" "$out/mock"
judged_run "sample driver" sample "${sample_driver[@]}"
grep -E '^(FAIL|SKIP)  ' "$out/sample/sanity.txt" | sed 's/^/    /' || true
[ -s "$out/sample/junit.xml" ] || { echo "    no junit.xml" >&2; failures=$((failures + 1)); }
if [ "$rc" -ne 0 ] || ! grep -q ' 0 failed' <<<"$line"; then failures=$((failures + 1)); fi
same_host "the sample driver's run" || failures=$((failures + 1))

echo "==> 2. the same, the judge killed with SIGKILL after block/publish"
mkdir -p "$out/killed"
recipe killed "${sample_driver[@]}" JUDGE_ENV=KUBELETCLIENT_SANITY_TEST_STOP_AFTER=block/publish \
  >"$out/killed/recipe.log" 2>&1 &
recipe_pid=$!
judge_pid=
for _ in $(seq 1 1200); do
  if grep -q '^PASS  block/publish' "$out/killed/sanity.txt" 2>/dev/null; then
    name=$(podman ps --filter name=judge-ci-judge- --format '{{.Names}}' | head -n 1)
    pid=$(podman inspect -f '{{.State.Pid}}' "$name" 2>/dev/null || true)
    if [ -n "$pid" ] && grep -q '^State:.*T' "/proc/$pid/status" 2>/dev/null; then
      judge_pid=$pid
      break
    fi
  fi
  sleep 0.1
done
if [ -z "$judge_pid" ]; then
  echo "    the judge never stopped after block/publish" >&2
  cat "$out/killed/recipe.log" >&2
  failures=$((failures + 1))
  wait "$recipe_pid" || true
else
  left_mounts=$(grep -c ' /tmp/judge\.[^ ]*/kubelet/' /proc/self/mountinfo || true)
  # Every loop device beyond those before the run: the judge's own (kubelet's map of a block
  # volume) and the driver's (its disk image), which names its file by the container's path.
  left_loops=$(( $(losetup -l -n | wc -l) - $(sed -n '/^--- loop devices/,/^---/p' "$out/before" | grep -c '^/dev/loop' || true) ))
  echo "    stopped mid-run with $left_mounts mounts under its root directory on the host and" \
    "$left_loops loop devices more than before; SIGKILL to pid $judge_pid"
  kill -KILL "$judge_pid"
  rc=0
  wait "$recipe_pid" || rc=$?
  echo "    the recipe exited $rc"
  [ "$rc" -ne 0 ] || failures=$((failures + 1))
  printf 'sample driver, judge SIGKILLed after block/publish\t%s mounts and %s loop devices of the run on the host at the kill\t\texit %s\n' \
    "$left_mounts" "$left_loops" "$rc" >>"$summary"
fi
same_host "the killed run" || failures=$((failures + 1))

echo "==> 3. the judge image against the CSI mock driver (csi-test v3.1.1)"
cat >"$in/mock.yaml" <<'EOF'
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: io.kubernetes.storage.mock}
spec:
  attachRequired: true
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
EOF
judged_run "csi-test v3.1.1 mock driver" mock DRIVER_IMAGE=localhost/ndr/csi-mock-driver:v3.1.1 \
  DRIVER_ENV=CSI_ENDPOINT=/csi/csi.sock JUDGE_ARGS=--objects=/in/mock.yaml
grep -E '^FAIL  ' "$out/mock/sanity.txt" | sed 's/^/    /' || true
[ -n "$line" ] || failures=$((failures + 1))
same_host "the mock driver's run" || failures=$((failures + 1))

echo "==> summary ($summary)"
column -t -s $'\t' "$summary"
if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "every check passed"

#!/usr/bin/env bash
# The main job: builds the project and shows it working on the built-in sample CSI driver, in a
# temporary directory under /tmp that is removed afterwards. Every step is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_deps

step() { printf '\n==> %s\n' "$*"; }

work=$(mktemp -d /tmp/ndr-demo-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
  bazel shutdown >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Waits up to 10 s for a unix socket to appear.
wait_for_socket() {
  for _ in $(seq 1 200); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "error: $1 did not appear within 10 s" >&2
  return 1
}

step "Building (bazel build; the first build takes a few minutes)"
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) //test/csidriver:sample-csi-driver //test/csidriver:csi-client
bin=$(bazel info bazel-bin 2>/dev/null)

step "Starting the sample CSI driver on $work/csi/csi.sock"
mkdir -p "$work/csi"
"$bin/test/csidriver/sample-csi-driver" --endpoint="unix://$work/csi/csi.sock" \
  --nodeid=demo-node --topology=topology.sample.csi.example.com/zone=zone-a \
  2>"$work/driver.log" &
pids+=($!)
wait_for_socket "$work/csi/csi.sock"
sed 's/^/    driver: /' "$work/driver.log"

step "Asking the driver who it is (CSI Identity and Node calls over its socket)"
"$bin/test/csidriver/csi-client" --endpoint="unix://$work/csi/csi.sock" | sed 's/^/    /'

step "Stopping the driver with SIGTERM"
kill -TERM "${pids[0]}"
wait "${pids[0]}"
pids=()
sed 's/^/    driver: /' "$work/driver.log" | tail -n 1
[ ! -e "$work/csi/csi.sock" ] && echo "    socket removed"

step "Done"

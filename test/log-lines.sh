#!/usr/bin/env bash
# How much a registrar logs for a normal life at the default verbosity: start beside the sample
# driver, one registration by kubelet (kubeletclient probe: GetInfo, the driver's NodeGetInfo,
# NotifyRegistrationStatus), SIGTERM. Counts the lines of ours and, with --compare-with=PATH, of
# another registrar binary (the Go node-driver-registrar) in the same run, at -v=0 and at -v=4.
#
#   bash test/log-lines.sh [--compare-with=/path/to/go/csi-node-driver-registrar]
#
# Builds with Bazel (already set up by the README's commands); needs neither Go nor the network.
set -euo pipefail
cd "$(dirname "$0")/.."
other=""
for arg in "$@"; do
  case "$arg" in
    --compare-with=*) other=${arg#--compare-with=} ;;
    *) echo "usage: bash test/log-lines.sh [--compare-with=PATH]" >&2; exit 2 ;;
  esac
done
source test/install-deps.sh
ndr_install_host_deps
ndr_bazel build -c opt //registrar:csi-node-driver-registrar //test/csidriver:sample-csi-driver \
  //kubeletclient:kubeletclient >/dev/null 2>&1
bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null)
work=$(mktemp -d /tmp/ndr-loglines-XXXXXX)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT

# life BINARY VERBOSITY: the registrar's whole log for one life, on stdout.
life() {
  local registrar=$1 v=$2 dir
  dir=$(mktemp -d "$work/l-XXXXXX")
  mkdir "$dir/csi" "$dir/reg"
  "$bin/test/csidriver/sample-csi-driver" --endpoint="$dir/csi/csi.sock" >"$dir/driver.log" 2>&1 &
  local driver=$!
  for _ in $(seq 1000); do [ -S "$dir/csi/csi.sock" ] && break; sleep 0.01; done
  "$registrar" --csi-address="$dir/csi/csi.sock" --kubelet-registration-path="$dir/csi/csi.sock" \
    --plugin-registration-path="$dir/reg" --v="$v" >"$dir/registrar.log" 2>&1 &
  local pid=$!
  local socket="$dir/reg/sample.csi.example.com-reg.sock"
  for _ in $(seq 1000); do [ -S "$socket" ] && break; sleep 0.01; done
  "$bin/kubeletclient/kubeletclient" probe --notify --registration-socket="$socket" \
    >"$dir/probe.log" 2>&1 ||
    { echo "kubelet's registration failed:" >&2; cat "$dir/probe.log" >&2; exit 1; }
  kill -TERM "$pid"
  wait "$pid" || true
  kill "$driver"
  wait "$driver" 2>/dev/null || true
  cat "$dir/registrar.log"
}

printf '%-60s %8s %8s\n' "registrar" "-v=0" "-v=4"
for registrar in "$bin/registrar/csi-node-driver-registrar" ${other:+"$other"}; do
  name=$("$registrar" --version 2>&1 | head -1)
  printf '%-60s %8d %8d\n' "$name" "$(life "$registrar" 0 | wc -l)" "$(life "$registrar" 4 | wc -l)"
done
if [ -n "${NDR_SHOW_LOGS:-}" ]; then
  for registrar in "$bin/registrar/csi-node-driver-registrar" ${other:+"$other"}; do
    echo "--- $registrar at -v=0:"; life "$registrar" 0
  done
fi

#!/usr/bin/env bash
# The registrar's threads once registered, without and with --automaxprocs, in a cgroup limited
# to one CPU, on this machine and on simulated larger nodes: in a mount namespace of its own a
# directory listing N CPUs is bound over /sys/devices/system/cpu, where glibc counts the CPUs that
# gRPC sizes its pools by. Needs root and a cgroup v1 cpu controller (or cgroup v2 with cpu).
#
#   bash test/automaxprocs-threads.sh [N ...]      (default: this machine, 8 and 64 CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "needs root: a mount namespace and a cgroup" >&2; exit 1; }
source test/install-deps.sh
ndr_install_host_deps
ndr_bazel build //registrar:csi-node-driver-registrar //test/csidriver:sample-csi-driver >/dev/null 2>&1
bin=$(ndr_bazel info bazel-bin 2>/dev/null)
work=$(mktemp -d /tmp/ndr-threads-XXXXXX)
for parent in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup; do
  [ -w "$parent/cgroup.procs" ] && break
done
cgroup="$parent/ndr-threads-$$"
mkdir "$cgroup"
if [ -e "$cgroup/cpu.max" ]; then echo "100000 100000" >"$cgroup/cpu.max"
else echo 100000 >"$cgroup/cpu.cfs_quota_us"; fi
trap 'pkill -P $$ 2>/dev/null || true; sleep 0.2; rmdir "$cgroup" 2>/dev/null || true; rm -rf "$work"' EXIT

# threads CPUS FLAGS...: "<total> (<name> x<count>, ...)" of a registrar that serves its socket.
threads() {
  local cpus=$1 dir
  shift
  dir=$(mktemp -d "$work/r-XXXXXX")
  mkdir "$dir/csi" "$dir/reg" "$dir/cpus"
  "$bin/test/csidriver/sample-csi-driver" --endpoint="$dir/csi/csi.sock" >"$dir/driver.log" 2>&1 &
  local driver=$! bind=""
  if [ "$cpus" != host ]; then
    for i in $(seq 0 $((cpus - 1))); do mkdir "$dir/cpus/cpu$i"; done
    for f in possible present online; do echo "0-$((cpus - 1))" >"$dir/cpus/$f"; done
    bind="mount --bind $dir/cpus /sys/devices/system/cpu &&"
  fi
  for _ in $(seq 1000); do [ -S "$dir/csi/csi.sock" ] && break; sleep 0.01; done
  unshare --mount --propagation private sh -c "$bind echo \$\$ > $cgroup/cgroup.procs && exec \
    $bin/registrar/csi-node-driver-registrar --csi-address=$dir/csi/csi.sock \
    --kubelet-registration-path=/var/lib/kubelet/plugins/x/csi.sock \
    --plugin-registration-path=$dir/reg $*" >"$dir/registrar.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1000); do [ -S "$dir/reg/sample.csi.example.com-reg.sock" ] && break; sleep 0.01; done
  # gRPC runs while someone is connected (registrar/registration_server.h): a connection held
  # open keeps it running while the threads are counted.
  python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected", flush=True)
time.sleep(600)' "$dir/reg/sample.csi.example.com-reg.sock" >"$dir/held" 2>&1 &
  local holder=$!
  for _ in $(seq 1000); do grep -q connected "$dir/held" 2>/dev/null && break; sleep 0.01; done
  local total names
  total=$(ls "/proc/$pid/task" | wc -l)
  names=$(cat /proc/"$pid"/task/*/comm | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  kill -TERM "$pid" "$driver" "$holder"
  wait "$pid" "$driver" "$holder" 2>/dev/null || true
  echo "$total ($names)"
}

printf '%-10s | %-70s | %s\n' "CPUs" "without --automaxprocs (1-CPU limit)" "with --automaxprocs (1-CPU limit)"
for cpus in "${@:-host 8 64}"; do
  for n in $cpus; do
    label=$n; [ "$n" = host ] && label="$(nproc --all) (host)"
    printf '%-10s | %-70s | %s\n' "$label" "$(threads "$n")" "$(threads "$n" --automaxprocs)"
  done
done

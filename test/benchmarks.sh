#!/usr/bin/env bash
# Prints every measured figure of the project in one go (about four minutes, most of it the
# registrar's 60 steady-state seconds and 60 idle seconds): the registrar's working set as a
# cluster sees it (its own memory cgroup, v2 or v1, from a fresh copy of its binary: as root),
# start-up, memory right after registration and in steady state (by kind), idle CPU and
# wake-ups, GetInfo throughput on one core and binary size; kubeletclient's registration latency
# and 200 plugins at once; and the images' compressed sizes. Extra arguments go to the
# registrar's benchmark, e.g. --idle_seconds=10, or --compare-with=PATH to measure another
# registrar binary (the Go node-driver-registrar) beside ours, the same way in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_cross_deps buildah
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT

echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, Linux $(uname -r)"
echo
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt //test/benchmarks:registrar_benchmark //test/benchmarks:kubeletclient_benchmark \
  //registrar:csi-node-driver-registrar.stripped //test/csidriver:sample-csi-driver.stripped \
  //toolchain/cross:all_binaries
bin=$(bazel info -c opt bazel-bin 2>/dev/null)

# bazel run would rebuild in the default configuration; run the opt binaries from their runfiles.
# Flags are spelled with dashes or underscores (gflags wants underscores).
args=()
for arg in "$@"; do
  case "$arg" in
    --*=*) name=${arg%%=*}; name=${name#--}; args+=("--${name//-/_}=${arg#*=}") ;;
    --*) name=${arg#--}; args+=("--${name//-/_}") ;;
    *) args+=("$arg") ;;
  esac
done
"$bin/test/benchmarks/registrar_benchmark" "${args[@]}"
echo
"$bin/test/benchmarks/kubeletclient_benchmark"
echo
echo "Images (bash images/build.sh), compressed as a registry stores them:"
out=$(mktemp -d /tmp/ndr-bench-images-XXXXXX)
bash images/build.sh "$out" | sed 's/^/  /'
rm -rf "$out"

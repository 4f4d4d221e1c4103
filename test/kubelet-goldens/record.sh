#!/usr/bin/env bash
# Records a kubelet golden: what the REAL kubelet code of one Kubernetes release sends to a CSI
# node plugin (README.md here says how, and what is real and what is faked).
#
#   record.sh --kube-version=v1.37.2 [--scenario=demo|b] [--out=DIR] [--driver-bin=PATH]
#             [--registrar-bin=PATH] [--cache-dir=DIR] [--build-only]
#             [--replace=k8s.io/MODULE=v0.N.x ...]
#
# --replace names a staging module's version when the release's own is not to be had (the module
# proxy answers 403 for k8s.io/kube-scheduler v0.31.14: v1.31.14 was recorded with v0.31.13).
#
# The scenario (scenarios/<name>/scenario.json: its objects, the driver's and registrar's flags,
# the phases) is the demo's by default; its golden goes to <version>/ for the demo and to
# <version>/<name>/ for another.
#
# Builds a Go test (harness/*.go, ours) in a scratch module outside the checkout,
# CACHE_DIR/<version>/ (default /var/cache/ndr-kubelet-goldens), against k8s.io/kubernetes@<version>
# and its staging modules at v0.N.x from the Go module proxy (or the module cache), with the
# machine's Go (GOTOOLCHAIN=local). It then runs it as root: it starts the sample CSI driver and our
# registrar on unix sockets under /tmp/kg and drives kubelet's own plugin manager, volume manager
# caches and operation executor against them. The golden goes to OUT (default: the version's
# directory beside this script). Nothing fetched or built is written inside the checkout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=
scenario=demo
out=
driver_bin=$repo/bazel-bin/test/csidriver/sample-csi-driver
registrar_bin=$repo/bazel-bin/registrar/csi-node-driver-registrar
cache_dir=/var/cache/ndr-kubelet-goldens
build_only=false
overrides=()
for arg in "$@"; do
  case $arg in
    --kube-version=*) version=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    --scenario=*) scenario=${arg#*=} ;;
    --driver-bin=*) driver_bin=${arg#*=} ;;
    --registrar-bin=*) registrar_bin=${arg#*=} ;;
    --cache-dir=*) cache_dir=${arg#*=} ;;
    --build-only) build_only=true ;;
    --replace=*) overrides+=("${arg#*=}") ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "record.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [[ ! $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "record.sh: --kube-version must be a release such as v1.37.2 (got '$version')" >&2
  exit 2
fi
minor=${BASH_REMATCH[1]}
staging_version="v0.${minor}.${BASH_REMATCH[2]}"
# One harness source; the few calls whose signatures changed between releases are in
# harness/shim_*_test.go, each for a range of minors (its //go:build line lists them), picked by
# the tag kube_1_<minor>.
tag=kube_1_$minor
if ! grep -lqE "^//go:build .*\b$tag\b" "$here"/harness/shim_1_*_test.go; then
  echo "record.sh: no shim for 1.$minor (no harness/shim_1_*_test.go is built with $tag)" >&2
  exit 2
fi
scenario_dir=$here/scenarios/$scenario
[[ -f $scenario_dir/scenario.json ]] || { echo "record.sh: no $scenario_dir/scenario.json" >&2; exit 2; }
objects=$repo/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["objects"])' "$scenario_dir/scenario.json")
subdir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["golden_subdir"])' "$scenario_dir/scenario.json")
out=$(realpath -m "${out:-$here/$version/$subdir}")
suffix=${subdir:+-$subdir}

go_bin=$(command -v go || echo /usr/local/go/bin/go)
[[ -x $go_bin ]] || { echo "record.sh: no Go toolchain (go on PATH or /usr/local/go/bin/go)" >&2; exit 2; }
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

work=$cache_dir/$version
mkdir -p "$work"
cd "$work"
kube_gomod=$("$go_bin" mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
if [[ ! -f $kube_gomod ]]; then
  echo "record.sh: the Go module proxy did not give k8s.io/kubernetes@$version" >&2
  exit 1
fi
# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
# ./staging/src/...; a module that requires it replaces each with its published release.
if [[ ! -f go.mod ]] || ! grep -q "^require k8s.io/kubernetes $version\$" go.mod; then
  {
    echo "module ndr.local/kubelet-goldens"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kube_gomod")"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$kube_gomod" |
      while read -r module; do echo "replace $module => $module $staging_version"; done
  } > go.mod
  rm -f go.sum
  touch go.sum
fi
for o in "${overrides[@]}"; do
  module=${o%%=*}
  if ! grep -q "^replace $module => $module " go.mod; then
    echo "record.sh: --replace=$o: go.mod has no replace for $module" >&2
    exit 2
  fi
  sed -i "s#^replace $module => $module .*#replace $module => $module ${o#*=}#" go.mod
  echo "record.sh: $module at ${o#*=} (--replace), not $staging_version"
done
rm -f ./*_test.go
cp "$here"/harness/*_test.go .
# Built again only when the sources, the tag or the Go changed (harness.stamp).
stamp=$(cat ./*_test.go go.mod | sha256sum | cut -d' ' -f1)-$tag-$("$go_bin" version | cut -d' ' -f3)
if [[ -x harness.test && -f harness.stamp && $(cat harness.stamp) == "$stamp" ]]; then
  echo "record.sh: harness.test in $work is up to date"
else
  echo "record.sh: building the harness against k8s.io/kubernetes@$version with $("$go_bin" version | cut -d' ' -f3) in $work"
  rm -f harness.test harness.stamp
  if ! nice -n 19 "$go_bin" test -c -tags "$tag" -o harness.test . > build.log 2>&1; then
    cat build.log >&2
    echo "record.sh: build failed (build.log in $work)" >&2
    exit 1
  fi
  echo "$stamp" > harness.stamp
fi
$build_only && exit 0

[[ -x $driver_bin ]] || { echo "record.sh: no driver at $driver_bin (--driver-bin)" >&2; exit 2; }
[[ -x $registrar_bin ]] || { echo "record.sh: no registrar at $registrar_bin (--registrar-bin)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "record.sh: run as root (the driver and kubelet's paths need it)" >&2; exit 2; }

# The scratch kubelet root and sockets; short paths (a unix socket path has at most 107 bytes).
scratch=/tmp/kg
if grep -q " $scratch/" /proc/self/mountinfo; then
  echo "record.sh: something is still mounted under $scratch (a previous run?); unmount it first" >&2
  exit 1
fi
# Made anew by this run (never one someone else made first), removed never across a mount point.
source "$here/../../toolchain/hostsafe/hostsafe.sh"
ndr_remove_tree "$scratch" || exit 1
ndr_make_private_dir "$scratch" "the scratch kubelet root" 0755 || exit 1

# The demo's golden directory holds the other scenarios' (<version>/<name>/): keep those.
if [[ -d $out ]]; then
  for entry in "$out"/* "$out"/.[!.]*; do
    [[ -e $entry ]] || continue
    name=$(basename "$entry")
    [[ -d $entry && $name != demo && -f $here/scenarios/$name/scenario.json ]] && continue
    rm -rf "$entry"
  done
fi
mkdir -p "$out"
set +e
KG_KUBE_VERSION=$version KG_GO_VERSION="$("$go_bin" version)" KG_OUT=$out KG_SCRATCH=$scratch \
  KG_DRIVER_BIN=$driver_bin KG_REGISTRAR_BIN=$registrar_bin KG_OBJECTS=$objects \
  KG_SCENARIO=$scenario_dir \
  KG_KLOG=$work/kubelet-klog$suffix.txt \
  ./harness.test -test.run '^TestRecordGolden$' -test.v -test.timeout 20m > "$work/harness$suffix.out" 2>&1
status=$?
set -e
grep -E '^(--- |PASS|FAIL|ok )|== phase' "$work/harness$suffix.out" | sed 's/^ *harness_test.go:[0-9]*: //'
echo "record.sh: scenario $scenario: golden in $out (kubelet's own log: $work/kubelet-klog$suffix.txt)"
exit "$status"

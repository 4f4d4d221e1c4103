#!/usr/bin/env bash
# Builds this checkout's release binaries for the Linux platforms asked for (default: every one the
# Go registrar's image covers: amd64, arm64, arm/v7, ppc64le, s390x) and the three images (the
# registrar, the sample driver, the judge) into OUT_DIR (default: images/out), each image an OCI
# image index with those platforms under one tag, with their SBOMs, provenance and VEX
# (images/build-images.sh). A platform asked for that this machine cannot build (the package
# source did not serve its Debian packages) is refused by name, never left out. The version is
# this checkout's (a development one unless HEAD is tagged and unchanged); for a release, use
# images/release.sh, which builds a tag from scratch.
#   bash images/build.sh [--platforms=LIST] [OUT_DIR]     LIST: e.g. amd64,arm64,arm/v7
# Load an archive into a node's container runtime with, for example,
#   ctr -n k8s.io images import images/out/csi-node-driver-registrar.oci.tar
# or push it to a registry: skopeo copy --all oci-archive:images/out/... docker://REGISTRY/...
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: bash images/build.sh [--platforms=LIST] [OUT_DIR]"
list="" out=images/out outs=0
for arg in "$@"; do
  case $arg in
    --platforms=*)
      list=${arg#*=}
      [ -n "$list" ] || { echo "build.sh: --platforms= names no platform; $usage" >&2; exit 2; } ;;
    -*) echo "build.sh: unknown flag $arg; $usage" >&2; exit 2 ;;
    *) out=$arg; outs=$((outs + 1)) ;;
  esac
done
[ "$outs" -le 1 ] || { echo "$usage" >&2; exit 2; }
source images/platforms.sh
ndr_parse_platforms "$list" || exit 2
source test/install-deps.sh
mkdir -p "$out"
ndr_buildroot_reexec --bind="$out" "$0" "$@"
ndr_install_cross_deps
ndr_require_platforms || exit 1
# One build, every platform asked for: //toolchain/cross:<arch>_binaries are the same three
# targets built with that architecture's toolchain (a transition; see toolchain/cross/cross.bzl).
programs=(registrar/csi-node-driver-registrar test/csidriver/sample-csi-driver
  kubeletclient/kubeletclient)
targets=()
for platform in "${NDR_WANTED_PLATFORMS[@]}"; do
  mapfile -t -O "${#targets[@]}" targets < <(ndr_platform_targets "$platform" "${programs[@]}")
done
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt "${targets[@]}"
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
platforms=()
for platform in "${NDR_WANTED_PLATFORMS[@]}"; do
  platforms+=("$platform=$(ndr_platform_binaries "$bin" "$platform" "${programs[@]}")")
done
bash images/build-images.sh "$out" "${platforms[@]}"

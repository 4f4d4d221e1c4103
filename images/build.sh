#!/usr/bin/env bash
# Builds this checkout's release binaries for every Linux platform the Go registrar's image covers
# (amd64, arm64, arm/v7, ppc64le, s390x) and the three images (the registrar, the sample driver,
# the judge) into OUT_DIR (default: images/out), each
# image an OCI image index with all five platforms under one tag, with their SBOMs, provenance and
# VEX (images/build-images.sh). The version is this checkout's (a development one unless HEAD is
# tagged and unchanged); for a release, use images/release.sh, which builds a tag from scratch.
#   bash images/build.sh [OUT_DIR]
# Load an archive into a node's container runtime with, for example,
#   ctr -n k8s.io images import images/out/csi-node-driver-registrar.oci.tar
# or push it to a registry: skopeo copy --all oci-archive:images/out/... docker://REGISTRY/...
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
out=${1:-images/out}
mkdir -p "$out"
ndr_buildroot_reexec --bind="$out" "$0" "$@"
ndr_install_cross_deps
ndr_require_every_arch || exit 1
# One build, every platform: //toolchain/cross:<arch>_binaries are the same three targets built
# with that architecture's toolchain (a transition; see toolchain/cross/cross.bzl).
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
  //test/csidriver:sample-csi-driver.stripped //kubeletclient:kubeletclient.stripped \
  //toolchain/cross:all_binaries
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
cross=$bin/toolchain/cross
platforms=("amd64=$bin/registrar/csi-node-driver-registrar.stripped,$bin/test/csidriver/sample-csi-driver.stripped,$bin/kubeletclient/kubeletclient.stripped")
for pair in arm64:arm64 arm/v7:armv7 ppc64le:ppc64le s390x:s390x; do
  dir=$cross/${pair#*:}_binaries
  platforms+=("${pair%%:*}=$dir/csi-node-driver-registrar.stripped,$dir/sample-csi-driver.stripped,$dir/kubeletclient.stripped")
done
bash images/build-images.sh "$out" "${platforms[@]}"

#!/usr/bin/env bash
# Builds this checkout's release binaries for every Linux platform the Go registrar's image covers
# (amd64, arm64, arm/v7, ppc64le, s390x) and both images into OUT_DIR (default: images/out), each
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
ndr_install_cross_deps
out=${1:-images/out}
# One build, every platform: //toolchain/cross:<arch>_binaries are the same two targets built with
# that architecture's toolchain (a transition; see toolchain/cross/cross.bzl).
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
  //test/csidriver:sample-csi-driver.stripped //toolchain/cross:all_binaries
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
cross=$bin/toolchain/cross
bash images/build-images.sh "$out" \
  "amd64=$bin/registrar/csi-node-driver-registrar.stripped,$bin/test/csidriver/sample-csi-driver.stripped" \
  "arm64=$cross/arm64_binaries/csi-node-driver-registrar.stripped,$cross/arm64_binaries/sample-csi-driver.stripped" \
  "arm/v7=$cross/armv7_binaries/csi-node-driver-registrar.stripped,$cross/armv7_binaries/sample-csi-driver.stripped" \
  "ppc64le=$cross/ppc64le_binaries/csi-node-driver-registrar.stripped,$cross/ppc64le_binaries/sample-csi-driver.stripped" \
  "s390x=$cross/s390x_binaries/csi-node-driver-registrar.stripped,$cross/s390x_binaries/sample-csi-driver.stripped"

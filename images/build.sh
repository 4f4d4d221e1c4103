#!/usr/bin/env bash
# Builds release binaries for amd64 and arm64 and both images into OUT_DIR (default: images/out),
# each image an OCI image index with both architectures under one tag:
#   bash images/build.sh [OUT_DIR]
# Load an archive into a node's container runtime with, for example,
#   ctr -n k8s.io images import images/out/csi-node-driver-registrar.oci.tar
# or push it to a registry: skopeo copy --all oci-archive:images/out/... docker://REGISTRY/...
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_arm64_deps buildah
out=${1:-images/out}
# One build, both architectures: //toolchain/arm64:binaries is the same two targets built with
# the arm64 toolchain (a transition; see toolchain/arm64/arm64.bzl).
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
  //test/csidriver:sample-csi-driver.stripped //toolchain/arm64:binaries
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
bash images/build-images.sh "$out" \
  "amd64=$bin/registrar/csi-node-driver-registrar.stripped,$bin/test/csidriver/sample-csi-driver.stripped" \
  "arm64=$bin/toolchain/arm64/binaries/csi-node-driver-registrar.stripped,$bin/toolchain/arm64/binaries/sample-csi-driver.stripped"

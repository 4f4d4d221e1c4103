#!/usr/bin/env bash
# Builds release binaries and both images into OUT_DIR (default: images/out):
#   bash images/build.sh [OUT_DIR]
# Load an archive into a node's container runtime with, for example,
#   ctr -n k8s.io images import images/out/csi-node-driver-registrar.oci.tar
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_deps buildah
out=${1:-images/out}
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -c opt //registrar:csi-node-driver-registrar.stripped \
  //test/csidriver:sample-csi-driver.stripped
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
bash images/build-images.sh "$bin/registrar/csi-node-driver-registrar.stripped" \
  "$bin/test/csidriver/sample-csi-driver.stripped" "$out"

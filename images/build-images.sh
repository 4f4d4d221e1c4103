#!/usr/bin/env bash
# Builds the two images from given static binaries with buildah (no Docker engine) and writes
# them out as OCI archives:
#
#   images/build-images.sh REGISTRAR_BINARY DRIVER_BINARY OUT_DIR [STORAGE_DIR]
#
# buildah keeps its (vfs) storage in STORAGE_DIR, by default a new directory under /tmp, so the
# build never touches the machine's own container storage. Prints each image's name and sizes.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 REGISTRAR_BINARY DRIVER_BINARY OUT_DIR [STORAGE_DIR]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
registrar=$1 driver=$2 out=$3
storage=${4:-$(mktemp -d /tmp/ndr-buildah-XXXXXX)}
mkdir -p "$out"
for binary in "$registrar" "$driver"; do
  if ! file -L "$binary" | grep -q "statically linked"; then
    echo "error: $binary is not statically linked; a FROM-scratch image needs a static binary" >&2
    exit 1
  fi
done
buildah=(buildah --storage-driver vfs --root "$storage/root" --runroot "$storage/run")
version=$("$registrar" --version 2>&1 | awk '{print $NF}')
context=$(mktemp -d /tmp/ndr-context-XXXXXX)
trap 'rm -rf "$context"' EXIT
strip -o "$context/csi-node-driver-registrar" "$registrar"
strip -o "$context/sample-csi-driver" "$driver"

build() {  # Containerfile, image, archive
  "${buildah[@]}" bud --quiet --isolation chroot -f "$here/$1" -t "$2" "$context" >/dev/null
  rm -f "$out/$3"
  "${buildah[@]}" push --quiet "$2" "oci-archive:$out/$3:$2" >/dev/null
  # The archive holds the gzip-compressed layer, as a registry would store it.
  local layer
  layer=$(tar -tvf "$out/$3" | awk '$3 > 1000000 {print $3}' | sort -n | tail -1)
  printf '%-56s archive %s bytes, compressed layer %s bytes\n' "$2" \
    "$(stat -c %s "$out/$3")" "${layer:-?}"
}
build Containerfile "localhost/ndr/csi-node-driver-registrar:$version" \
  csi-node-driver-registrar.oci.tar
build Containerfile.sample-driver "localhost/ndr/sample-csi-driver:0.1.0" sample-csi-driver.oci.tar

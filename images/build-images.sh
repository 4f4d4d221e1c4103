#!/usr/bin/env bash
# Builds the two images from given static binaries with buildah (no Docker engine), one image per
# architecture, joins each image's architectures in one OCI image index, and writes every index
# out as an OCI archive:
#
#   images/build-images.sh OUT_DIR ARCH=REGISTRAR_BINARY,DRIVER_BINARY [ARCH=...]
#
# e.g. images/build-images.sh out amd64=bin/registrar,bin/driver arm64=arm/registrar,arm/driver.
# ARCH is an OCI architecture name (amd64, arm64). buildah keeps its (vfs) storage in
# $NDR_BUILDAH_STORAGE, by default a directory under /tmp that it removes when done, so the build
# never touches the machine's own container storage. Prints each image's name and compressed size.
set -euo pipefail
usage="usage: $0 OUT_DIR ARCH=REGISTRAR_BINARY,DRIVER_BINARY [ARCH=REGISTRAR_BINARY,DRIVER_BINARY...]"
if [ $# -lt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1
shift
context=$(mktemp -d /tmp/ndr-context-XXXXXX)
trap 'rm -rf "$context"' EXIT
storage=${NDR_BUILDAH_STORAGE:-$context/storage}
buildah=(buildah --storage-driver vfs --root "$storage/root" --runroot "$storage/run")
mkdir -p "$out"

# The ELF machine `file` names for each architecture we build.
declare -A elf_machine=([amd64]="x86-64" [arm64]="ARM aarch64")
arches=()
for spec in "$@"; do
  arch=${spec%%=*} binaries=${spec#*=}
  registrar=${binaries%%,*} driver=${binaries#*,}
  if [ "$arch" = "$spec" ] || [ "$registrar" = "$binaries" ] || [ -z "${elf_machine[$arch]:-}" ]; then
    echo "error: '$spec' is not ARCH=REGISTRAR_BINARY,DRIVER_BINARY with ARCH amd64 or arm64" >&2
    echo "$usage" >&2
    exit 2
  fi
  for binary in "$registrar" "$driver"; do
    description=$(file -L "$binary")
    if [[ "$description" != *"statically linked"* ]]; then
      echo "error: $binary is not statically linked; a FROM-scratch image needs a static binary" >&2
      exit 1
    fi
    if [[ "$description" != *"${elf_machine[$arch]}"* ]]; then
      echo "error: $binary is not an $arch binary: $description" >&2
      exit 1
    fi
  done
  mkdir -p "$context/$arch"
  # A cross binary needs the cross strip; `strip` of the other architecture refuses it.
  strip_tool="strip"
  [ "$arch" = amd64 ] || strip_tool=/usr/bin/aarch64-linux-gnu-strip
  "$strip_tool" -o "$context/$arch/csi-node-driver-registrar" "$registrar"
  "$strip_tool" -o "$context/$arch/sample-csi-driver" "$driver"
  arches+=("$arch")
done

# The version is the registrar's own (--version), from a binary this machine runs natively or
# under qemu.
first=${arches[0]}
runner=()
[ "$first" = amd64 ] || runner=(qemu-aarch64-static)
version=$("${runner[@]}" "$context/$first/csi-node-driver-registrar" --version 2>&1 | awk '{print $NF}')

build() {  # Containerfile, image name, archive name
  local containerfile=$1 name=$2 archive=$3 arch
  "${buildah[@]}" manifest rm "$name" >/dev/null 2>&1 || true
  "${buildah[@]}" manifest create "$name" >/dev/null
  for arch in "${arches[@]}"; do
    # FROM scratch with --arch: the image's config says arm64 although this machine is amd64.
    "${buildah[@]}" bud --quiet --isolation chroot --arch "$arch" --os linux \
      -f "$here/$containerfile" -t "$name-$arch" "$context/$arch" >/dev/null
    "${buildah[@]}" manifest add --arch "$arch" --os linux "$name" \
      "containers-storage:$name-$arch" >/dev/null
  done
  rm -f "$out/$archive"
  "${buildah[@]}" manifest push --quiet --all "$name" "oci-archive:$out/$archive:$name" >/dev/null
  # Each architecture's gzip-compressed layer, as a registry stores it.
  python3 - "$out/$archive" "$name" <<'PYTHON'
import json, sys, tarfile
archive, name = sys.argv[1], sys.argv[2]
with tarfile.open(archive) as tar:
    def blob(descriptor):
        algorithm, digest = descriptor["digest"].split(":")
        return json.load(tar.extractfile(f"blobs/{algorithm}/{digest}"))
    for index in json.load(tar.extractfile("index.json"))["manifests"]:
        for image in blob(index)["manifests"]:
            layers = blob(image)["layers"]
            print(f"{name:56} {image['platform']['architecture']:5} "
                  f"compressed layer {sum(l['size'] for l in layers)} bytes")
PYTHON
  printf '%-56s archive %s (%s bytes)\n' "$name" "$out/$archive" "$(stat -c %s "$out/$archive")"
}
build Containerfile "localhost/ndr/csi-node-driver-registrar:$version" \
  csi-node-driver-registrar.oci.tar
build Containerfile.sample-driver "localhost/ndr/sample-csi-driver:0.1.0" sample-csi-driver.oci.tar

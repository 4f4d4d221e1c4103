#!/usr/bin/env bash
# Builds the two images from given static binaries with buildah (no Docker engine), one image per
# architecture, joins each image's architectures in one OCI image index, and writes every index
# out as an OCI archive:
#
#   images/build-images.sh OUT_DIR PLATFORM=REGISTRAR_BINARY,DRIVER_BINARY [PLATFORM=...]
#
# e.g. images/build-images.sh out amd64=bin/registrar,bin/driver arm/v7=arm/registrar,arm/driver.
# PLATFORM is an OCI architecture with its variant, if any: amd64, arm64, arm/v7, ppc64le, s390x.
# buildah keeps its (vfs) storage in $NDR_BUILDAH_STORAGE, by default a directory under /tmp that
# it removes when done, so the build never touches the machine's own container storage. Prints each image's name and compressed size.
#
# Each platform's image carries the SPDX 2.3 document of the Debian packages linked into its binary
# (images/sbom.py, from the record the link made; at /sbom/ in the image) and the index holds it
# again as that platform's BuildKit-style SBOM attestation (images/attach_sbom.py).
set -euo pipefail
usage="usage: $0 OUT_DIR PLATFORM=REGISTRAR_BINARY,DRIVER_BINARY [PLATFORM=...]"
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

# For each platform we build (an OCI architecture, with its variant after a slash): the ELF
# machine `file` names, the binutils that strip its binaries, and how to run one here.
declare -A elf_machine=(
  [amd64]="x86-64" [arm64]="ARM aarch64" [arm/v7]="ARM, EABI5" [ppc64le]="64-bit PowerPC"
  [s390x]="IBM S/390"
)
declare -A strip_tool=(
  [amd64]=strip [arm64]=aarch64-linux-gnu-strip [arm/v7]=arm-linux-gnueabihf-strip
  [ppc64le]=powerpc64le-linux-gnu-strip [s390x]=s390x-linux-gnu-strip
)
declare -A runner=(
  [amd64]="" [arm64]=qemu-aarch64-static [arm/v7]=qemu-arm-static
  [ppc64le]=qemu-ppc64le-static [s390x]=qemu-s390x-static
)
platforms=()
for spec in "$@"; do
  platform=${spec%%=*} binaries=${spec#*=}
  registrar=${binaries%%,*} driver=${binaries#*,}
  if [ "$platform" = "$spec" ] || [ "$registrar" = "$binaries" ] ||
    [ -z "${elf_machine[$platform]:-}" ]; then
    echo "error: '$spec' is not PLATFORM=REGISTRAR_BINARY,DRIVER_BINARY with PLATFORM one of" \
      "${!elf_machine[*]}" >&2
    echo "$usage" >&2
    exit 2
  fi
  for binary in "$registrar" "$driver"; do
    description=$(file -L "$binary")
    if [[ "$description" != *"statically linked"* ]]; then
      echo "error: $binary is not statically linked; a FROM-scratch image needs a static binary" >&2
      exit 1
    fi
    if [[ "$description" != *"${elf_machine[$platform]}"* ]]; then
      echo "error: $binary is not a $platform binary: $description" >&2
      exit 1
    fi
  done
  # A directory per platform (arm/v7 -> arm-v7). A cross binary needs its own strip: `strip` of
  # another architecture refuses it.
  dir=$context/${platform//\//-}
  mkdir -p "$dir"
  "${strip_tool[$platform]}" -o "$dir/csi-node-driver-registrar" "$registrar"
  "${strip_tool[$platform]}" -o "$dir/sample-csi-driver" "$driver"
  platforms+=("$platform")
done

# The version is the registrar's own (--version), from a binary this machine runs natively or
# under qemu.
first=${platforms[0]}
version=$(${runner[$first]} "$context/${first//\//-}/csi-node-driver-registrar" --version 2>&1 |
  awk '{print $NF}')

build() {  # Containerfile, image name, archive name, binary
  local containerfile=$1 name=$2 archive=$3 binary=$4
  "${buildah[@]}" manifest rm "$name" >/dev/null 2>&1 || true
  "${buildah[@]}" manifest create "$name" >/dev/null
  local platform arch variant tag
  for platform in "${platforms[@]}"; do
    arch=${platform%%/*} variant=${platform#*/} tag=$name-${platform//\//-}
    [ "$variant" != "$platform" ] || variant=
    # The Debian packages linked into the binary, as its link recorded them (images/sbom.py): in
    # the image at /sbom/, and attached to the index below.
    python3 "$here/sbom.py" --name "${name%:*}" --version "${name##*:}" --platform "$platform" \
      --output "$context/${platform//\//-}/$binary.spdx.json" "$context/${platform//\//-}/$binary"
    # FROM scratch with --arch (and --variant): the image's config says arm64, say, although
    # this machine is amd64.
    "${buildah[@]}" bud --quiet --isolation chroot --arch "$arch" ${variant:+--variant "$variant"} \
      --os linux -f "$here/$containerfile" -t "$tag" "$context/${platform//\//-}" >/dev/null
    "${buildah[@]}" manifest add --arch "$arch" ${variant:+--variant "$variant"} --os linux \
      "$name" "containers-storage:$tag" >/dev/null
  done
  rm -f "$out/$archive"
  "${buildah[@]}" manifest push --quiet --all "$name" "oci-archive:$out/$archive:$name" >/dev/null
  python3 "$here/attach_sbom.py" "$out/$archive" "${name%:*}" "$context" "$binary.spdx.json"
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
            if "vnd.docker.reference.type" in image.get("annotations", {}):
                continue  # a platform's SBOM (attach_sbom.py)
            layers = blob(image)["layers"]
            platform = image["platform"]["architecture"]
            if image["platform"].get("variant"):
                platform += "/" + image["platform"]["variant"]
            print(f"{name:56} {platform:7} "
                  f"compressed layer {sum(l['size'] for l in layers)} bytes")
PYTHON
  printf '%-56s archive %s (%s bytes)\n' "$name" "$out/$archive" "$(stat -c %s "$out/$archive")"
}
build Containerfile "localhost/ndr/csi-node-driver-registrar:$version" \
  csi-node-driver-registrar.oci.tar csi-node-driver-registrar
build Containerfile.sample-driver "localhost/ndr/sample-csi-driver:0.1.0" sample-csi-driver.oci.tar \
  sample-csi-driver

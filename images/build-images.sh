#!/usr/bin/env bash
# Builds the images from given static binaries (the registrar's, the sample driver's, and with a
# kubeletclient binary the judge's), one image per platform, each image's
# platforms joined in one OCI image index, written out as an OCI archive, with each platform's
# SPDX SBOM, SLSA provenance and OpenVEX beside it and attached to the index:
#
#   images/build-images.sh [--source-url=URI] OUT_DIR PLATFORM=REGISTRAR_BINARY,DRIVER_BINARY[,KUBELETCLIENT] ...
#
# e.g. images/build-images.sh out amd64=bin/registrar,bin/driver arm/v7=arm/registrar,arm/driver.
# PLATFORM is an OCI architecture with its variant, if any: amd64, arm64, arm/v7, ppc64le, s390x.
# No container engine is involved: images/assemble.py writes the images byte for byte (the same
# binaries give the same digests), and the version, commit and date come from the binaries
# themselves. The images name their source (the org.opencontainers.image.source label and the
# provenance) as URI: --source-url, else $NDR_SOURCE_URI, else this checkout as a file:// URI,
# which is where a local build's source is. Prints each image's name, its index digest and each
# platform's layer size.
set -euo pipefail
source_url=${NDR_SOURCE_URI:-file://$(cd "$(dirname "$0")/.." && pwd)}
case ${1:-} in --source-url=*) source_url=${1#*=}; shift ;; esac
if [ $# -lt 2 ]; then
  echo "usage: $0 [--source-url=URI] OUT_DIR PLATFORM=REGISTRAR_BINARY,DRIVER_BINARY[,KUBELETCLIENT] ..." >&2
  exit 2
fi
out=$1
shift
# The images say which Debian release their packages come from, and their SBOMs which packages:
# that is the build root's, so this runs there, with the output and the binaries' directories.
source "$(dirname "$0")/../toolchain/buildroot/buildroot.sh"
if ndr_buildroot_needed; then
  mkdir -p "$out"
  binds=(--bind="$out")
  for platform in "$@"; do
    IFS=, read -ra files <<<"${platform#*=}"
    for file in "${files[@]}"; do binds+=(--bind="$(dirname "$file")"); done
  done
  ndr_buildroot_reexec "${binds[@]}" "$0" --source-url="$source_url" "$out" "$@"
fi
exec /usr/bin/python3 "$(dirname "$0")/assemble.py" --command "images/build-images.sh" \
  --source-url "$source_url" "$out" "$@"

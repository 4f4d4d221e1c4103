#!/usr/bin/env bash
# Tests of real-node.sh --release-dir's taking of a release (real-node/release-images.sh): what a
# good release directory gives, and that a file the checksums do not vouch for, or a binary of
# another version, is refused by name.
set -uo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
here=$PWD/test/e2e
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/rel.XXXXXX") || exit 1
trap 'rm -rf -- "$work"' EXIT
export TMPDIR=$work
# shellcheck source=real-node/release-images.sh
source "$here/real-node/release-images.sh"

failures=0
expect() {  # expect WHAT GOT WANT
  if [[ $2 == "$3" ]]; then
    echo "ok: $1"
  else
    echo "FAIL: $1: got '$2', want '$3'"
    failures=$((failures + 1))
  fi
}

# A release directory as images/release.sh lays it out, its binaries scripts that say VERSION.
make_release() {  # make_release DIR VERSION [VERSION_THE_BINARIES_SAY]
  local dir=$1 version=$2 says=${3:-$2} program stage
  mkdir -p "$dir"
  for program in csi-node-driver-registrar sample-csi-driver kubeletclient; do
    stage=$work/stage/$program-$version-linux-amd64
    mkdir -p "$stage"
    printf '#!/bin/sh\necho "%s %s"\necho "commit: 0123456789abcdef0123"\n' "$program" "$says" >"$stage/$program"
    chmod 0755 "$stage/$program"
    tar -czf "$dir/$program-$version-linux-amd64.tar.gz" -C "$work/stage" "$program-$version-linux-amd64"
    echo "$program index" >"$dir/$program.oci.tar"
  done
  rm -rf "$work/stage"
  (cd "$dir" && sha256sum -- *.tar *.tar.gz >SHA256SUMS)
}

make_release "$work/good" 1.3.0
got=$(rn_take_release "$work/good" "$work/out/images" "$work/out/tools" 2>"$work/err")
expect "a good release gives its version" "$got" 1.3.0
expect "and says nothing on stderr" "$(cat "$work/err")" ""
expect "the registrar's index is taken" "$(cat "$work/out/images/csi-node-driver-registrar.oci.tar")" \
  "csi-node-driver-registrar index"
expect "the sample driver's index is taken" "$(cat "$work/out/images/sample-csi-driver.oci.tar")" \
  "sample-csi-driver index"
expect "the judge's index is not" "$(ls "$work/out/images")" \
  "$(printf 'csi-node-driver-registrar.oci.tar\nsample-csi-driver.oci.tar')"
expect "kubeletclient runs from the tools" "$("$work/out/tools/kubeletclient" | head -n 1)" "kubeletclient 1.3.0"
expect "nothing is left in the scratch directory" "$(find "$work" -maxdepth 1 -name 'ndr-release-*')" ""

make_release "$work/tampered" 1.3.0
echo "another index" >"$work/tampered/sample-csi-driver.oci.tar"
rm -rf "$work/out"
got=$(rn_take_release "$work/tampered" "$work/out/images" "$work/out/tools" 2>"$work/err")
expect "a file unlike its checksum fails" "$?:$got" "1:"
expect "naming the file" "$(grep -c 'tampered/sample-csi-driver.oci.tar is not the file' "$work/err")" 1
expect "and takes no image" "$(ls "$work/out/images" 2>/dev/null)" ""

make_release "$work/unlisted" 1.3.0
sed -i '/kubeletclient-1.3.0/d' "$work/unlisted/SHA256SUMS"
got=$(rn_take_release "$work/unlisted" "$work/out/images" "$work/out/tools" 2>"$work/err")
expect "a file the checksums do not list fails" "$?:$got" "1:"
expect "naming it" "$(grep -c 'does not list kubeletclient-1.3.0-linux-amd64.tar.gz' "$work/err")" 1

make_release "$work/other" 1.3.0 1.2.0
got=$(rn_take_release "$work/other" "$work/out/images" "$work/out/tools" 2>"$work/err")
expect "a binary of another version fails" "$?:$got" "1:"
expect "naming it" "$(grep -c 'does not say it is 1.3.0' "$work/err")" 1

mkdir -p "$work/empty" && : >"$work/empty/SHA256SUMS"
got=$(rn_take_release "$work/empty" "$work/out/images" "$work/out/tools" 2>"$work/err")
expect "a directory without the registrar's amd64 archive fails" "$?:$got" "1:"
expect "saying what to give" "$(grep -c 'lists no csi-node-driver-registrar-VERSION-linux-amd64.tar.gz' "$work/err")" 1

expect "no scratch directory is left by any" "$(find "$work" -maxdepth 1 -name 'ndr-release-*')" ""
if ((failures)); then echo "$failures failed"; exit 1; fi
echo "all passed"

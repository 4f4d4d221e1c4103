#!/usr/bin/env bash
# Builds release VERSION from the commit tagged vVERSION, into OUT_DIR:
#
#   bash images/release.sh VERSION OUT_DIR        e.g. bash images/release.sh 1.0.0 /tmp/r
#
# The tag is cloned into a new directory and built there with an output base of its own and no
# cache (-c opt, every platform), so nothing of this checkout or of earlier builds gets in; two
# runs give the same bytes (images/assemble.py, and //images:reproducible_test for what decides it).
# OUT_DIR gets, for the registrar, the sample driver and (from 1.1.0) kubeletclient, the judge:
#
#   PROGRAM.oci.tar                      one OCI image index for linux/amd64, arm64, arm/v7, ppc64le
#                                        and s390x, with each platform's SBOM, provenance and VEX
#                                        attached as BuildKit attestations
#   PROGRAM-VERSION-linux-ARCH.tar.gz    the static binary, LICENSE, THIRD-PARTY-NOTICES, its SBOM
#   PROGRAM-linux-ARCH.spdx.json         SPDX 2.3 SBOM of the Debian packages linked in
#   PROGRAM-linux-ARCH.provenance.json   SLSA v1 provenance (in-toto) of the image and the tarball
#   PROGRAM.openvex.json                 OpenVEX for the image index (images/vex/statements.yaml)
#
# and csi-node-driver-registrar-VERSION.src.tar.gz (the tag's source, which the LGPL asks for
# beside statically linked glibc), digests.txt (each index's digest) and SHA256SUMS of them all.
#
# Refused, saying what to do: a VERSION that is not semver, a missing tag, a tag on a commit whose
# VERSION file names another version, uncommitted changes here, an OUT_DIR that is not empty, a
# linked Debian package with a newer version in apt's lists, and Debian source versions linked
# that no VEX statement has been reviewed for. Needs root (or sudo) to install what the build
# needs, as the README's commands do; downloads nothing but Debian packages.
set -euo pipefail
usage="usage: bash images/release.sh VERSION OUT_DIR   (e.g. 1.0.0 /tmp/release-1.0.0)"
refuse() {
  echo "release.sh: $*" >&2
  exit 1
}
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
version=$1 out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
number='(0|[1-9][0-9]*)'
[[ "$version" =~ ^$number\.$number\.$number(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$ ]] ||
  refuse "'$version' is not a release version: MAJOR.MINOR.PATCH, optionally with a pre-release" \
    "(1.0.0, 1.1.0-rc.1), without 'v' or build metadata"
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -z "$(ls -A "$out")" ] || refuse "$out is not empty; give a new or empty directory (nothing in it is replaced)"

cd "$top"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || refuse "$top is not a git checkout"
tag=v$version
commit=$(git rev-parse -q --verify "refs/tags/$tag^{commit}") ||
  refuse "there is no tag $tag. Tag the commit to release, after updating CHANGELOG.md:" \
    "git tag -a $tag -m 'Release $version' COMMIT"
if [ -n "$(git status --porcelain)" ]; then
  refuse "this checkout has uncommitted or untracked changes (git status): a release is built from" \
    "the tag $tag alone, so they would not be in it. Commit or stash them first."
fi
tagged=$(git show "$commit:VERSION" 2>/dev/null | tr -d ' \t\r\n') || tagged="(no VERSION file)"
[ "$tagged" = "${version%%-*}" ] ||
  refuse "the tag $tag is on commit ${commit:0:12}, whose VERSION file says $tagged, not" \
    "${version%%-*}: tag the commit whose VERSION is ${version%%-*}, or fix VERSION and tag again"

work=$(mktemp -d /tmp/ndr-release-XXXXXX)
bazel=(bazel "--output_base=$work/output")
cleanup() {
  (cd "$work/src" 2>/dev/null && "${bazel[@]}" shutdown >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "==> cloning $tag (${commit:0:12}) into $work/src"
git -c advice.detachedHead=false clone --quiet --no-hardlinks --branch "$tag" "$top" "$work/src"
cd "$work/src"
# What the tag's own build needs (its install script), and apt's lists made current, so that the
# check below compares with what Debian publishes today.
source test/install-deps.sh
ndr_install_cross_deps
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
ndr_step "Reading Debian's current package lists" "${sudo[@]}" apt-get update -qq
described=$(bash version/describe.sh | sed -n 's/^version //p')
[ "$described" = "$version" ] ||
  refuse "the clone of $tag describes itself as $described, not $version (version/describe.sh)"

# The programs the tag releases: the registrar and the sample driver, and from 1.1.0 kubeletclient
# (the judge's image), which a tag has when its cross builds make it for every platform.
programs=(registrar/csi-node-driver-registrar test/csidriver/sample-csi-driver)
grep -q '"//kubeletclient:kubeletclient.stripped"' toolchain/cross/BUILD.bazel &&
  programs+=(kubeletclient/kubeletclient)
echo "==> building every platform, -c opt, in a new output base with no cache"
targets=()
for program in "${programs[@]}"; do targets+=("//${program%/*}:${program##*/}.stripped"); done
# shellcheck disable=SC2046
"${bazel[@]}" build $(ndr_bazel_flags) --disk_cache= -c opt "${targets[@]}" \
  //toolchain/cross:all_binaries
bin=$("${bazel[@]}" info -c opt bazel-bin 2>/dev/null)
cross=$bin/toolchain/cross
binaries() {  # DIRECTORY-OF-EACH-PROGRAM...: the comma-separated list assemble.py takes
  local list=() program
  for program in "${programs[@]}"; do list+=("$1/${program##*/}.stripped"); shift; done
  (IFS=,; echo "${list[*]}")
}
amd64=()
for program in "${programs[@]}"; do amd64+=("$bin/${program%/*}"); done
platforms=("amd64=$(binaries "${amd64[@]}")")
for pair in arm64:arm64 arm/v7:armv7 ppc64le:ppc64le s390x:s390x; do
  dir=$cross/${pair#*:}_binaries
  platforms+=("${pair%%:*}=$(binaries "$dir" "$dir" "$dir")")
done

echo "==> checking that every linked Debian package is the newest apt knows"
/usr/bin/python3 - "${platforms[0]#amd64=}" <<'PYTHON'
import subprocess, sys
sys.path.insert(0, "images")
import sbom
packages, _ = sbom.linked_packages(sys.argv[1].split(","))
stale = []
for package in sorted({p.installed for p in packages.values() if p.root == "/"}):
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
    fields = dict(line.strip().split(": ", 1) for line in policy.splitlines()[1:3] if ": " in line)
    if fields.get("Installed") != fields.get("Candidate"):
        stale.append(f"{package} {fields.get('Installed')} (newest: {fields.get('Candidate')})")
if stale:
    print("release.sh: a release links the newest packages Debian has published; these are older:\n  "
          + "\n  ".join(stale) + "\nRun apt-get update && apt-get install --only-upgrade "
          + " ".join(s.split()[0] for s in stale) + ", then release again.", file=sys.stderr)
    sys.exit(1)
PYTHON

echo "==> assembling the images, tarballs, SBOMs, provenance and VEX"
/usr/bin/python3 images/assemble.py "$out" --tag "$tag" --tarballs --release \
  --command "bash images/release.sh $version OUT_DIR" "${platforms[@]}" | tee "$out/digests.txt"
# The source of the tag, as the LGPL asks beside a statically linked glibc: git archive stamps
# every file with the commit's time, and gzip -n leaves out the name and time of its own.
git archive --format=tar --prefix="csi-node-driver-registrar-$version/" "$tag" |
  gzip -n -9 >"$out/csi-node-driver-registrar-$version.src.tar.gz"
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort |
  xargs sha256sum >SHA256SUMS)
echo "==> release $version (${commit:0:12}) in $out: $(wc -l <"$out/SHA256SUMS") files, SHA256SUMS"

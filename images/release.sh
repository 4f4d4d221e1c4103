#!/usr/bin/env bash
# Builds release VERSION from its commit, into OUT_DIR:
#
#   bash images/release.sh VERSION OUT_DIR --source-uri=URI [--platforms=LIST] [--upgrade]
#        e.g. bash images/release.sh 1.1.0 /tmp/r --source-uri=https://github.com/ORG/REPO
#
# LIST names the Linux platforms (amd64, arm64, arm/v7, ppc64le, s390x; comma-separated): by
# default the ones RELEASES records for VERSION, or all five for a release not recorded yet. A
# platform the package source cannot serve here is refused by name, never left out; a LIST other
# than the one RELEASES records is refused. Record the release in RELEASES with the platforms it
# was built for.
#
# The commit is the tag vVERSION's, or where there is no tag the one RELEASES records for VERSION
# (version/releases.py; a tag and a record that disagree are refused). It is cloned into a new
# directory, tagged there, and built with an output base of its own and no cache (-c opt, each
# platform), so nothing of this checkout or of earlier builds gets in; two runs give the same bytes
# (images/assemble.py, and //images:reproducible_test for what decides it).
#
# --source-uri (or $NDR_SOURCE_URI) is where the release's source is published, as operators can
# fetch it: the images' org.opencontainers.image.source label and the provenance name it
# (images/source_uri.py says what it may be; an example address is refused). Every release links
# the newest Debian packages apt knows of: this is checked before the build, from Debian's current
# package lists, for the packages the release's programs link (the -dev packages of
# toolchain/cross/make-sysroot.sh and the compilers' own libraries). As root, older ones are
# upgraded, saying which; otherwise the release is refused in seconds unless --upgrade asks for
# the upgrade through sudo. After the build, the packages the link really used are checked again.
#
# OUT_DIR gets, for the registrar, the sample driver and (from 1.1.0) kubeletclient, the judge:
#
#   PROGRAM.oci.tar                      one OCI image index of the platforms, with each
#                                        platform's SBOM, provenance (which names every platform of
#                                        the release) and VEX attached as BuildKit attestations
#   PROGRAM-VERSION-linux-ARCH.tar.gz    the static binary, LICENSE, THIRD-PARTY-NOTICES, its SBOM
#   PROGRAM-linux-ARCH.spdx.json         SPDX 2.3 SBOM of the Debian packages linked in
#   PROGRAM-linux-ARCH.provenance.json   SLSA v1 provenance (in-toto) of the image and the tarball
#   PROGRAM.openvex.json                 OpenVEX for the image index (images/vex/statements.yaml)
#
# and csi-node-driver-registrar-VERSION.src.tar.gz (the commit's source, which the LGPL asks for
# beside statically linked glibc), digests.txt (each index's digest) and SHA256SUMS of them all.
#
# Refused, saying what to do: a VERSION that is not semver, a version neither tagged nor recorded,
# a commit whose VERSION file names another version, no source URI or an example one, uncommitted
# changes here, an OUT_DIR that is not empty, or that (or a directory above it) someone other than
# root and whoever runs this could change, a linked Debian package older than the newest in
# apt's lists (unless upgraded, above), and Debian source versions linked that no VEX statement has
# been reviewed for. Needs root (or sudo) to install what the build needs, as the README's commands
# do; downloads nothing but Debian packages.
set -euo pipefail
usage="usage: bash images/release.sh VERSION OUT_DIR --source-uri=URI [--platforms=LIST]"
usage+=" [--upgrade]"
refuse() {
  echo "release.sh: $*" >&2
  exit 1
}
source_uri=${NDR_SOURCE_URI:-} upgrade=false positional=() list=""
for arg in "$@"; do
  case $arg in
    --source-uri=*) source_uri=${arg#*=} ;;
    --platforms=*)
      list=${arg#*=}
      [ -n "$list" ] ||
        { echo "release.sh: --platforms= names no platform; $usage" >&2; exit 2; } ;;
    --upgrade) upgrade=true ;;
    -*) echo "release.sh: unknown flag $arg; $usage" >&2; exit 2 ;;
    *) positional+=("$arg") ;;
  esac
done
[ ${#positional[@]} -eq 2 ] || { echo "$usage" >&2; exit 2; }
version=${positional[0]} out=${positional[1]}
top=$(cd "$(dirname "$0")/.." && pwd)
number='(0|[1-9][0-9]*)'
[[ "$version" =~ ^$number\.$number\.$number(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$ ]] ||
  refuse "'$version' is not a release version: MAJOR.MINOR.PATCH, optionally with a pre-release" \
    "(1.0.0, 1.1.0-rc.1), without 'v' or build metadata"
source_uri=$(python3 "$top/images/source_uri.py" "$source_uri" 2>&1) ||
  refuse "${source_uri#source_uri: } (--source-uri=URI or NDR_SOURCE_URI)"
# The platforms: asked for, or as RELEASES records them, or every one; read with this checkout's
# scripts (the release's commit may be older than --platforms).
source "$top/images/platforms.sh"
recorded=$(python3 "$top/version/releases.py" --repo "$top" platforms "$version" 2>/dev/null) ||
  recorded=""
ndr_parse_platforms "${list:-$recorded}" || exit 2
wanted=$(IFS=,; echo "${NDR_WANTED_PLATFORMS[*]}")
[ -z "$recorded" ] || [ "$recorded" = "$wanted" ] ||
  refuse "RELEASES records release $version for $recorded, not $wanted: a release is rebuilt for" \
    "the platforms it has (leave --platforms out, or fix RELEASES)"
# OUT_DIR is made new, or is an empty directory, and it and every directory above it can be
# changed by no one but root and whoever runs this (hostsafe.sh): no one else can put a file or a
# link in it, or swap what the build wrote before it is summed and signed. Checked before anything
# is built, on the host and again in the build root.
source "$top/toolchain/buildroot/buildroot.sh"
if [ -n "${NDR_BUILDROOT:-}" ] && [ -n "${NDR_RELEASE_USER:-}" ] && [ "$NDR_RELEASE_USER" != 0 ] &&
    [ ! -L "$out" ] && [ "$(stat -c %u -- "$out" 2>/dev/null)" = "$NDR_RELEASE_USER" ]; then
  # In the build root, as root, for the user NDR_RELEASE_USER who ran this on the host, where
  # OUT_DIR was made or checked as theirs (below); here it is checked as theirs.
  ndr_check_private_dir "$out" "the release's OUT_DIR" "$NDR_RELEASE_USER" || exit 1
  [ -z "$(ls -A -- "$out")" ] || refuse "OUT_DIR $out is not empty; name a new or empty directory"
else
  ndr_make_private_dir "$out" "the release's OUT_DIR" 0755 || exit 1
fi
out=$(cd "$out" && pwd -P)
# Built in the Debian 13 build root (toolchain/buildroot/buildroot.sh) unless this is Debian 13;
# there as root (through sudo) for the user who ran this, whose OUT_DIR it is.
[ -n "${NDR_BUILDROOT:-}" ] || export NDR_RELEASE_USER="$(id -u)"
ndr_buildroot_reexec --bind="$out" "$0" "$@"

cd "$top"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || refuse "$top is not a git checkout"
tag=v$version
commit=$(python3 version/releases.py commit "$version" 2>&1) || refuse "${commit#releases.py: }"
if [ -n "$(git status --porcelain)" ]; then
  refuse "this checkout has uncommitted or untracked changes (git status): a release is built from" \
    "its commit alone, so they would not be in it. Commit or stash them first."
fi
tagged=$(git show "$commit:VERSION" 2>/dev/null | tr -d ' \t\r\n') || tagged="(no VERSION file)"
[ "$tagged" = "${version%%-*}" ] ||
  refuse "release $version is commit ${commit:0:12}, whose VERSION file says $tagged, not" \
    "${version%%-*}: fix the tag or RELEASES"

work=$(mktemp -d /tmp/ndr-release-XXXXXX)
bazel=(bazel "--output_base=$work/output")
cleanup() {
  (cd "$work/src" 2>/dev/null && "${bazel[@]}" shutdown >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "==> cloning ${commit:0:12} (release $version) into $work/src"
git clone --quiet --no-hardlinks --no-checkout "$top" "$work/src"
git -C "$work/src" -c advice.detachedHead=false checkout --quiet "$commit"
# Tagged in the clone as it is here, or as RELEASES records it (the same tag object either way),
# so that the release's own version/describe.sh names it.
python3 version/releases.py tag --into "$work/src" "$version" >/dev/null 2>&1 ||
  git -C "$work/src" rev-parse -q --verify "refs/tags/$tag" >/dev/null ||
  refuse "could not tag $tag in the clone"
cd "$work/src"

# Debian's current package lists, then the packages the release links, before anything is built.
source test/install-deps.sh
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
ndr_step "Reading Debian's current package lists" "${sudo[@]}" apt-get update -qq
linked=$(sed -n '/^packages=(/,/^)/p' toolchain/cross/make-sysroot.sh | sed '1d;$d' | tr -s ' \n' '\n')
[ -n "$linked" ] || refuse "toolchain/cross/make-sysroot.sh of ${commit:0:12} lists no packages"
for compiler in g++ aarch64-linux-gnu-g++ arm-linux-gnueabihf-g++ powerpc64le-linux-gnu-g++ \
    s390x-linux-gnu-g++; do
  command -v "$compiler" >/dev/null || continue
  for library in libstdc++.a libgcc.a libgcc_eh.a; do
    file=$("$compiler" -print-file-name="$library")
    linked+=$'\n'$(dpkg -S "$(readlink -f "$file")" 2>/dev/null | cut -d: -f1 | head -n 1)
  done
done
stale=()
for package in $(sort -u <<<"$linked"); do
  installed=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null) || continue  # installed below
  [ -n "$installed" ] || continue
  candidate=$(apt-cache policy "$package" | sed -n 's/^  Candidate: //p')
  [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && [ "$candidate" != "$installed" ] &&
    stale+=("$package $installed (newest: $candidate)")
done
if [ ${#stale[@]} -gt 0 ]; then
  names=$(printf '%s\n' "${stale[@]}" | cut -d' ' -f1 | tr '\n' ' ')
  if [ "$(id -u)" -eq 0 ] || $upgrade; then
    echo "==> upgrading the linked packages Debian has published newer versions of:"
    printf '      %s\n' "${stale[@]}"
    # shellcheck disable=SC2086
    ndr_step "apt-get install --only-upgrade $names" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --only-upgrade $names
  else
    refuse "a release links the newest packages Debian has published; these are older:" \
      "$(printf '\n  %s' "${stale[@]}")" $'\n'"Run this as root, or with --upgrade (which runs" \
      "apt-get install --only-upgrade $names through sudo), then release again."
  fi
fi
# What the commit's own build needs (its install script; the cross sysroots follow the versions
# now installed).
ndr_install_cross_deps
ndr_require_platforms || exit 1
described=$(bash version/describe.sh | sed -n 's/^version //p')
[ "$described" = "$version" ] ||
  refuse "the clone of ${commit:0:12} describes itself as $described, not $version (version/describe.sh)"

# The programs the tag releases: the registrar and the sample driver, and from 1.1.0 kubeletclient
# (the judge's image), which a tag has when its cross builds make it for every platform.
programs=(registrar/csi-node-driver-registrar test/csidriver/sample-csi-driver)
grep -q '"//kubeletclient:kubeletclient.stripped"' toolchain/cross/BUILD.bazel &&
  programs+=(kubeletclient/kubeletclient)
echo "==> building $wanted, -c opt, in a new output base with no cache"
# amd64's always: the linked packages are checked on them below.
mapfile -t targets < <(ndr_platform_targets amd64 "${programs[@]}")
for platform in "${NDR_WANTED_PLATFORMS[@]}"; do
  [ "$platform" = amd64 ] ||
    mapfile -t -O "${#targets[@]}" targets < <(ndr_platform_targets "$platform" "${programs[@]}")
done
# shellcheck disable=SC2046
"${bazel[@]}" build $(ndr_bazel_flags) --disk_cache= -c opt "${targets[@]}"
bin=$("${bazel[@]}" info -c opt bazel-bin 2>/dev/null)
platforms=()
for platform in "${NDR_WANTED_PLATFORMS[@]}"; do
  platforms+=("$platform=$(ndr_platform_binaries "$bin" "$platform" "${programs[@]}")")
done

# The packages the link really used (the binaries' own record), held to the same rule: a library
# linked from a package the list above missed is caught here.
echo "==> checking that every linked Debian package is the newest apt knows"
/usr/bin/python3 - "$(ndr_platform_binaries "$bin" amd64 "${programs[@]}")" <<'PYTHON'
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
          + "\n  ".join(stale) + "\nRun apt-get install --only-upgrade "
          + " ".join(s.split()[0] for s in stale) + " (and add them to the packages of "
          "toolchain/cross/make-sysroot.sh, which release.sh checks before it builds), then "
          "release again.", file=sys.stderr)
    sys.exit(1)
PYTHON

echo "==> assembling the images, tarballs, SBOMs, provenance and VEX"
/usr/bin/python3 images/assemble.py "$out" --tag "$tag" --tarballs --release \
  --source-url "$source_uri" \
  --command "bash images/release.sh $version OUT_DIR --platforms=$wanted" \
  "${platforms[@]}" | tee "$out/digests.txt"
# The commit's source, as the LGPL asks beside a statically linked glibc: git archive stamps
# every file with the commit's time, and gzip -n leaves out the name and time of its own.
git archive --format=tar --prefix="csi-node-driver-registrar-$version/" "$commit" |
  gzip -n -9 >"$out/csi-node-driver-registrar-$version.src.tar.gz"
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort |
  xargs sha256sum >SHA256SUMS)
echo "==> release $version (${commit:0:12}) in $out: $(wc -l <"$out/SHA256SUMS") files, SHA256SUMS"

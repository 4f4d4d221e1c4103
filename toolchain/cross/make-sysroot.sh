#!/usr/bin/env bash
# Builds the sysroot that a cross build (--config=arm64, armv7, ppc64le or s390x; see
# toolchain/cross/) compiles and links against: Debian's -dev packages, for that architecture, of
# every library the registrar and the sample driver link, at exactly the versions installed for
# amd64 (the headers and protoc's generated code must agree), downloaded with apt and unpacked with
# dpkg-deb -x, never installed: several of them (gflags, libevent) cannot be installed beside
# their amd64 versions. Nothing outside Debian's archive is fetched, and the machine's dpkg
# architectures are left alone: apt reads that architecture's package lists into a state
# directory of its own.
#
# Usage: toolchain/cross/make-sysroot.sh [--check] DEBIAN_ARCH [SYSROOT]
#   DEBIAN_ARCH: arm64, armhf, ppc64el or s390x; SYSROOT: default /var/cache/ndr-DEBIAN_ARCH-sysroot
# Prints the sysroot's path. Does nothing when the sysroot already holds these versions; with
# --check, only says (exit 0) whether it does.
#
# One make of a sysroot at a time: it holds SYSROOT.lock exclusively (a second make waits, then
# finds the sysroot made). The sysroot is made in a new directory beside it (SYSROOT.new.*), with
# the list of versions (.ndr-packages) written last, and renamed into place only when complete, so
# a sysroot that has that list is whole; what a killed make left (SYSROOT.new.*, SYSROOT.apt.*) is
# removed by the next, never across a mount point. apt's download methods run as its own user,
# _apt, as apt runs them everywhere else.
set -euo pipefail
# shellcheck source=../hostsafe/hostsafe.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../hostsafe/hostsafe.sh"

check=false
if [ "${1:-}" = --check ]; then
  check=true
  shift
fi
arch=${1:-}
case "$arch" in
  arm64 | armhf | ppc64el | s390x) ;;
  *)
    echo "usage: $0 [--check] arm64|armhf|ppc64el|s390x [SYSROOT]" >&2
    exit 2
    ;;
esac
sysroot=${2:-/var/cache/ndr-$arch-sysroot}
# glibc and the kernel's headers too: the cross compiler's own copy of glibc (libc6-dev-ARCH-cross)
# is the one the cross compiler was built with, which may lack Debian's later security fixes; the
# cross toolchains (cross.bzl) take this one, the current release's, instead.
packages=(
  libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev libre2-dev libc-ares-dev zlib1g-dev
  libgflags-dev libzstd-dev libevent-dev libssl-dev
  libyaml-cpp-dev libc6-dev linux-libc-dev
)

# Whose headers or generated code must match the amd64 build exactly (protoc and the gRPC plugin
# run on the host); the others only need to be the same library.
exact=(libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev)

installed=()
for pkg in "${packages[@]}"; do
  version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
  if [ -z "$version" ]; then
    echo "make-sysroot: $pkg is not installed for amd64; run test/install-deps.sh first" >&2
    exit 1
  fi
  installed+=("$pkg=$version")
done
stamp="$sysroot/.ndr-packages"
# "files": the sysroot has its .ndr-files; "ldscripts": its linker scripts name its own files (one
# made before either is made again).
installed=(files ldscripts "${installed[@]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${installed[*]}" ]; then
  echo "$sysroot"
  exit 0
fi
if $check; then
  echo "make-sysroot: $sysroot is missing or holds other versions" >&2
  exit 1
fi

if [ ! -d "$(dirname "$sysroot")" ]; then
  echo "make-sysroot: $(dirname "$sysroot"), which is to hold $sysroot, is not a directory; make" \
    "it first, or name another SYSROOT" >&2
  exit 1
fi
ndr_lock lock "$sysroot.lock" exclusive "the $arch sysroot $sysroot"
# Another make may have finished while this one waited.
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${installed[*]}" ]; then
  echo "$sysroot"
  exit 0
fi
for old in "$sysroot".new.* "$sysroot".apt.* "$sysroot.apt"; do
  ndr_remove_tree "$old"
done
# The new sysroot and apt's state (its package lists and the downloads), each this run's own;
# removed when it fails (the next run removes them after a SIGKILL).
new= state=
trap '[ -z "$new" ] || ndr_remove_tree "$new"; [ -z "$state" ] || ndr_remove_tree "$state"' EXIT
new=$(mktemp -d "$sysroot.new.XXXXXX")
state=$(mktemp -d "$sysroot.apt.XXXXXX")
chmod 0755 "$new" "$state"
mkdir "$state/lists" "$state/lists/partial" "$state/archives" "$state/archives/partial" \
  "$state/debs"
# apt's download methods run as _apt, which must be able to write where they download to.
if [ "$(id -u)" -eq 0 ] && id -u _apt >/dev/null 2>&1; then
  chown _apt "$state/lists/partial" "$state/archives/partial" "$state/debs"
fi
apt_opts=(
  -o APT::Architecture="$arch" -o APT::Architectures::="$arch"
  -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state" -o Dir::State::status=/dev/null -qq
)
echo "make-sysroot: reading Debian's $arch package lists" >&2
# An index that fails to download (a mirror caught mid-sync, say) is not fatal here: apt keeps
# the others, and a package it then cannot find is an error below, naming the package.
if ! apt-get "${apt_opts[@]}" update >"$state/update.log" 2>&1; then
  echo "make-sysroot: warning: some of Debian's $arch package lists did not download; going on" \
    "with the others:" >&2
  grep '^[EW]:' "$state/update.log" | sed 's/^/    /' >&2 || true
fi
# The amd64 version where the archive still has it for $arch, else (for the libraries that need
# not match exactly) the archive's current one.
wanted=()
for pkg in "${packages[@]}"; do
  version=$(dpkg-query -W -f='${Version}' "$pkg")
  if apt-cache "${apt_opts[@]}" madison "$pkg:$arch" | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
      grep -qxF "$version"; then
    wanted+=("$pkg:$arch=$version")
  elif [[ " ${exact[*]} " == *" $pkg "* ]]; then
    echo "make-sysroot: Debian's archive has no $arch $pkg $version, the version installed here;" \
      "upgrade it (apt-get install $pkg) so that both architectures match" >&2
    exit 1
  else
    wanted+=("$pkg:$arch")
  fi
done
echo "make-sysroot: downloading ${wanted[*]}" >&2
# One package at a time, each checked against the SHA256 of the signed index apt read. A package
# source caught mid-sync may list a file in one archive's index and hold it only in the other's
# pool (a point release's file under the security archive's pool/updates, say): the same file,
# with the same hash, is then fetched from there. A file neither pool holds is an error naming it.
# The two archives as apt itself reads its sources (one-line .list and deb822 .sources alike).
# apt-helper is not on PATH; a stand-in there (the tests') is taken first.
targets=$(apt-get "${apt_opts[@]}" indextargets --format '$(REPO_URI) $(SUITE)' 2>/dev/null |
  sort -u || true)
security_base=$(awk '$2 ~ /-security$/ {print $1; exit}' <<<"$targets")
main_base=$(awk '$2 !~ /-security$/ {print $1; exit}' <<<"$targets")
apt_helper=$(command -v apt-helper || echo /usr/lib/apt/apt-helper)
unserved=()
for want in "${wanted[@]}"; do
  (cd "$state/debs" && apt-get "${apt_opts[@]}" download "$want" >>"$state/download.log" 2>&1) &&
    continue
  # 'URI' FILE SIZE SHA256:HASH
  read -r uri file _ hash < <(apt-get "${apt_opts[@]}" --print-uris download "$want" 2>/dev/null |
    tr -d "'" | tail -n 1) || true
  other=""
  case $uri in
    "${main_base%/}/pool/main/"*) [ -n "$security_base" ] &&
      other=${security_base%/}/pool/updates/main/${uri#"${main_base%/}/pool/main/"} ;;
    "${security_base%/}/pool/updates/main/"*)
      other=${main_base%/}/pool/main/${uri#"${security_base%/}/pool/updates/main/"} ;;
  esac
  if [ -n "$other" ] && [[ $hash == SHA256:* ]] &&
      "$apt_helper" "${apt_opts[@]}" download-file "$other" "$state/debs/$file" "$hash" \
        >>"$state/download.log" 2>&1; then
    echo "make-sysroot: $want: $uri is not served; took the same file ($hash) from $other" >&2
  else
    unserved+=("$want (${uri:-no URI})")
  fi
done
if [ ${#unserved[@]} -gt 0 ]; then
  echo "make-sysroot: Debian's $arch index lists these, but the package source serves them from" \
    "neither pool (a mirror caught mid-sync?):" >&2
  printf '    %s\n' "${unserved[@]}" >&2
  echo "Try again later: nothing unverified is used instead. (The package source is the one in" \
    "/etc/apt/sources.list of the build root, from the host's when the root was made.)" >&2
  exit 1
fi
# What was downloaded is root's from here on: no _apt process changes it while it is unpacked.
if [ "$(id -u)" -eq 0 ]; then
  chown -R 0:0 "$state/debs"
  chmod 0755 "$state/debs"
fi
# .ndr-files: which package each unpacked file came from (path, package, architecture, version,
# source package, source version; tab-separated), for the images' SBOMs (images/sbom.py): these
# packages are unpacked, not installed, so dpkg does not know them.
for deb in "$state/debs"/*.deb; do
  dpkg-deb -x "$deb" "$new"
  package=$(dpkg-deb -W --showformat='${Package}\t${Architecture}\t${Version}\t${source:Package}\t${source:Version}' "$deb")
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\.\(/.*[^/]\)$|\1|p' |
    awk -v package="$package" '{print $0 "\t" package}' >>"$new/.ndr-files"
done
# Absolute symlinks inside the packages (libfoo.so -> /usr/lib/...) would point into the host.
find "$new" -type l -lname '/*' -delete
# So would the absolute paths in glibc's linker scripts (libm.a is one: GROUP ( /usr/lib/<triple>/
# libm-2.41.a ... )), which the cross linker, run without --sysroot, reads as they are: they are
# made to name the sysroot's files (at the path it is renamed to).
grep -rlZ --include='*.a' --include='*.so' '^/\* GNU ld script' "$new/usr/lib" 2>/dev/null |
  xargs -0 -r sed -i -E "s#([ (])/(usr/)?lib/#\1$sysroot/\2lib/#g"
ndr_remove_tree "$state"
state=
# The list of versions last, then the complete sysroot in the old one's place.
echo "${installed[*]}" >"$new/.ndr-packages"
ndr_remove_tree "$sysroot"
mv -T -- "$new" "$sysroot"
new=
echo "$sysroot"

#!/usr/bin/env bash
# Builds the sysroot that a cross build (--config=arm64, armv7, ppc64le or s390x; see
# toolchain/cross/) compiles and links against: Debian's -dev packages, for that architecture, of
# every library the registrar and the sample driver link, at exactly the versions installed for
# amd64 (the headers and protoc's generated code must agree), downloaded with apt and unpacked with
# dpkg-deb -x, never installed: several of them (glog, gflags, libevent) cannot be installed beside
# their amd64 versions. Nothing outside Debian's archive is fetched, and the machine's dpkg
# architectures are left alone: apt reads that architecture's package lists into a state
# directory of its own.
#
# Usage: toolchain/cross/make-sysroot.sh [--check] DEBIAN_ARCH [SYSROOT]
#   DEBIAN_ARCH: arm64, armhf, ppc64el or s390x; SYSROOT: default /var/cache/ndr-DEBIAN_ARCH-sysroot
# Prints the sysroot's path. Does nothing when the sysroot already holds these versions; with
# --check, only says (exit 0) whether it does.
set -euo pipefail

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
# is bookworm's first, 2.36-8, which has none of Debian's later security fixes; the cross
# toolchains (cross.bzl) take this one, the current release's, instead.
packages=(
  libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev libre2-dev libc-ares-dev zlib1g-dev
  libgflags-dev libgoogle-glog-dev libunwind-dev liblzma-dev libevent-dev libssl-dev
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
# "files": the sysroot has its .ndr-files (one made before it did is made again).
installed=(files "${installed[@]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${installed[*]}" ]; then
  echo "$sysroot"
  exit 0
fi
if $check; then
  echo "make-sysroot: $sysroot is missing or holds other versions" >&2
  exit 1
fi

state="$sysroot.apt"
rm -rf "$sysroot" "$state"
mkdir -p "$state/lists/partial" "$state/archives/partial" "$state/debs"
apt_opts=(
  -o APT::Architecture="$arch" -o APT::Architectures::="$arch"
  -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state" -o Dir::State::status=/dev/null
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -qq
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
  if apt-cache "${apt_opts[@]}" madison "$pkg:$arch" | awk -F' [|] ' '{print $2}' |
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
(cd "$state/debs" && apt-get "${apt_opts[@]}" download "${wanted[@]}")
mkdir -p "$sysroot"
# .ndr-files: which package each unpacked file came from (path, package, architecture, version,
# source package, source version; tab-separated), for the images' SBOMs (images/sbom.py): these
# packages are unpacked, not installed, so dpkg does not know them.
for deb in "$state/debs"/*.deb; do
  dpkg-deb -x "$deb" "$sysroot"
  package=$(dpkg-deb -W --showformat='${Package}\t${Architecture}\t${Version}\t${source:Package}\t${source:Version}' "$deb")
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\.\(/.*[^/]\)$|\1|p' |
    awk -v package="$package" '{print $0 "\t" package}' >>"$sysroot/.ndr-files"
done
# Absolute symlinks inside the packages (libfoo.so -> /usr/lib/...) would point into the host.
find "$sysroot" -type l -lname '/*' -delete
rm -rf "$state"
echo "${installed[*]}" > "$stamp"
echo "$sysroot"

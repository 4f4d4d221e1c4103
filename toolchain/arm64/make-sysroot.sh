#!/usr/bin/env bash
# Builds the arm64 sysroot that --config=arm64 compiles and links against: Debian's arm64 -dev
# packages of every library the registrar and the sample driver link, at exactly the versions
# installed for amd64 (the headers and protoc's generated code must agree), downloaded with apt
# and unpacked with dpkg-deb -x, never installed: several of them (glog, gflags, libevent) cannot
# be installed beside their amd64 versions. Nothing outside Debian's archive is fetched, and the
# machine's dpkg architectures are left alone: apt reads the arm64 package lists into a state
# directory of its own.
#
# Usage: toolchain/arm64/make-sysroot.sh [--check] [SYSROOT]   (default /var/cache/ndr-arm64-sysroot)
# Prints the sysroot's path. Does nothing when the sysroot already holds these versions; with
# --check, only says (exit 0) whether it does.
set -euo pipefail

check=false
if [ "${1:-}" = --check ]; then
  check=true
  shift
fi
sysroot=${1:-${NDR_ARM64_SYSROOT:-/var/cache/ndr-arm64-sysroot}}
packages=(
  libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev libre2-dev libc-ares-dev zlib1g-dev
  libgflags-dev libgoogle-glog-dev libunwind-dev liblzma-dev libevent-dev
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
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state" -o Dir::State::status=/dev/null
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -qq
)
echo "make-sysroot: reading Debian's arm64 package lists" >&2
apt-get "${apt_opts[@]}" update
# The amd64 version where the archive still has it for arm64, else (for the libraries that need
# not match exactly) the archive's current one.
wanted=()
for pkg in "${packages[@]}"; do
  version=$(dpkg-query -W -f='${Version}' "$pkg")
  if apt-cache "${apt_opts[@]}" madison "$pkg:arm64" | awk -F' [|] ' '{print $2}' |
      grep -qxF "$version"; then
    wanted+=("$pkg:arm64=$version")
  elif [[ " ${exact[*]} " == *" $pkg "* ]]; then
    echo "make-sysroot: Debian's archive has no arm64 $pkg $version, the version installed here;" \
      "upgrade it (apt-get install $pkg) so that both architectures match" >&2
    exit 1
  else
    wanted+=("$pkg:arm64")
  fi
done
echo "make-sysroot: downloading ${wanted[*]}" >&2
(cd "$state/debs" && apt-get "${apt_opts[@]}" download "${wanted[@]}")
mkdir -p "$sysroot"
for deb in "$state/debs"/*.deb; do
  dpkg-deb -x "$deb" "$sysroot"
done
# Absolute symlinks inside the packages (libfoo.so -> /usr/lib/...) would point into the host.
find "$sysroot" -type l -lname '/*' -delete
rm -rf "$state"
echo "${installed[*]}" > "$stamp"
echo "$sysroot"

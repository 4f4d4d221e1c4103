# Sourced by the scripts that build. Everything builds, tests and releases on Debian 13 (trixie)
# packages: on a Debian 13 host the host's own, installed when missing; on any other Debian host
# (Debian 12, say) in the build root toolchain/buildroot/buildroot.sh makes from Debian 13's
# packages, which the scripts that build enter first (ndr_buildroot_reexec "$0" "$@"), and scripts
# that run on the host reach through ndr_bazel. Nothing but Debian packages is downloaded.
# ndr_install_deps: what the host build and the demo need; ndr_install_cross_deps: every package
# of toolchain/buildroot/packages (the tests, the images, the other architectures) and their
# sysroots. Needs root (or sudo) only when it installs.
source "$(dirname "${BASH_SOURCE[0]}")/../toolchain/buildroot/buildroot.sh"

# What the host build and the demo need: Bazel, the compiler and the libraries the programs link.
# Each is in toolchain/buildroot/packages too (//toolchain/buildroot:buildroot_test).
NDR_PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java bazel-rules-proto bazel-skylib
  g++ pkg-config zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgflags-dev libabsl-dev
  libevent-dev libyaml-cpp-dev nlohmann-json3-dev libssl-dev libcpp-httplib-dev
  python3 openssl mount
)

# Everything else the test suite, the image builds and the cross builds need: the rest of the
# build root's packages.
mapfile -t NDR_TEST_PACKAGES < <(ndr_buildroot_packages)

# For a script that runs on the host and builds only through ndr_bazel: where the host is not
# Debian 13, makes the build root (once) and installs the named packages, which the script runs
# on the host itself; on a Debian 13 host, installs everything a build needs as well.
ndr_install_host_deps() {
  if ndr_buildroot_needed; then
    ndr_buildroot_make >/dev/null && ndr_install_packages "$@"
  else
    ndr_install_cross_deps "$@"
  fi
}

# Runs Bazel where the project builds: in the build root when the host is not Debian 13 (its
# bazel-* links and `bazel info` paths are the same inside and out), else on the host. For the
# scripts that run on the host (the real node, the benchmarks) and only build through Bazel.
ndr_bazel() {
  if ndr_buildroot_needed; then
    ndr_buildroot_run bazel "$@"
  else
    bazel "$@"
  fi
}

ndr_install_deps() {
  ndr_install_packages "${NDR_PACKAGES[@]}" "$@"
}

# Installs the named Debian packages that are missing, on this machine (the build root, when run
# inside it), and nothing else. Scripts that run on a host that is not Debian 13 name only what
# they run there themselves.
ndr_install_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0

  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "error: these Debian packages are missing and installing them needs root:" >&2
      echo "  apt-get install ${missing[*]}" >&2
      return 1
    fi
  fi
  ndr_step "Installing ${#missing[@]} missing Debian packages: ${missing[*]}" \
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive sh -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' sh "${missing[@]}"
}

# Runs a step's command with its output kept in a log file, and prints one line for the step:
# what it does and the log's path, then, if the command fails, its status and the log's last
# lines. ndr_step "what it does" COMMAND [ARGS...]
ndr_step() {
  local what=$1 log
  shift
  log=$(mktemp /tmp/ndr-install-XXXXXX.log)
  echo "==> $what (log: $log)"
  local status=0
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "error: that step failed (exit $status); the last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    return 1
  fi
  rm -f "$log"
}

# The cross builds (--config=arm64, armv7, ppc64le, s390x, and //... through
# toolchain/cross:<arch>_binaries) need, besides Debian's cross compilers and qemu (in the
# package set), each architecture's sysroot, which toolchain/cross/make-sysroot.sh unpacks from
# Debian's packages for that architecture into /var/cache/ndr-<debian arch>-sysroot (once; it
# checks).
NDR_CROSS_DEBIAN_ARCHES=(arm64 armhf ppc64el s390x)

ndr_install_cross_deps() {
  ndr_install_deps "${NDR_TEST_PACKAGES[@]}" "$@" || return 1
  local sudo=() arch log
  if [ "$(id -u)" -ne 0 ] && [ ! -w /var/cache ]; then
    sudo=(sudo)
  fi
  NDR_CROSS_UNAVAILABLE=()
  for arch in "${NDR_CROSS_DEBIAN_ARCHES[@]}"; do
    # Quiet when the sysroot is there already (it checks its versions).
    bash toolchain/cross/make-sysroot.sh --check "$arch" >/dev/null 2>&1 && continue
    echo "==> Unpacking Debian's $arch packages into the cross build's sysroot"
    log=$(mktemp /tmp/ndr-install-XXXXXX.log)
    if "${sudo[@]}" bash toolchain/cross/make-sysroot.sh "$arch" >"$log" 2>&1; then
      "${sudo[@]}" rm -f "/var/cache/ndr-$arch-sysroot.unavailable"
      rm -f "$log"
    else
      # Not fatal here: that architecture is left out of the build, its test says why
      # (toolchain/cross/sysroots.bzl), and the image builds refuse to make images for it
      # (ndr_require_platforms, images/platforms.sh).
      { sed -n '/lists these, but/,$p' "$log" | grep . || tail -n 5 "$log"; } |
        sed 's/^make-sysroot: //' |
        "${sudo[@]}" tee "/var/cache/ndr-$arch-sysroot.unavailable" >/dev/null
      echo "warning: no $arch sysroot, so no $arch build here; from $log:" >&2
      sed 's/^/    /' "/var/cache/ndr-$arch-sysroot.unavailable" >&2
      NDR_CROSS_UNAVAILABLE+=("$arch")
    fi
  done
  ndr_export_cross_sysroots
}

# Bazel reads which sysroots there are again when NDR_CROSS_SYSROOTS changes
# (toolchain/cross/sysroots.bzl): a digest of their lists of versions and of why any is missing.
ndr_export_cross_sysroots() {
  NDR_CROSS_SYSROOTS=$(cat /var/cache/ndr-*-sysroot/.ndr-packages /var/cache/ndr-*-sysroot.unavailable \
    2>/dev/null | sha256sum | cut -c1-16)
  export NDR_CROSS_SYSROOTS
}

# Bazel options for scripts: quiet, non-interactive output when run by CI or without a terminal.
ndr_bazel_flags() {
  if [ -n "${CI:-}" ] || [ ! -t 1 ]; then
    echo "--color=no --curses=no --show_progress_rate_limit=60"
  fi
}

# Sourced by the scripts that build: installs the Debian packages a script needs when any of them
# is missing, and nothing else. ndr_install_deps: the host build's (what the demo needs);
# ndr_install_cross_deps: those, the test suite's, the images' and the other architectures'.
# Needs root (or sudo) only when it installs.

# What the host build and the demo need: Bazel, the compiler and the libraries the programs link.
NDR_PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java bazel-rules-proto bazel-skylib
  g++ pkg-config libunwind-dev liblzma-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgflags-dev libgoogle-glog-dev libabsl-dev
  libevent-dev libyaml-cpp-dev nlohmann-json3-dev libssl-dev libcpp-httplib-dev
  python3 openssl mount
)

# What the test suite and the image builds add: the test frameworks, the Python the checks of
# documents, manifests and images run on, buildah, and the ELF tools the image checks use.
NDR_TEST_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-yaml python3-kubernetes python3-jwt python3-cryptography python3-prometheus-client
  buildah file binutils
)

ndr_install_deps() {
  local missing=() pkg
  for pkg in "${NDR_PACKAGES[@]}" "$@"; do
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
# toolchain/cross:<arch>_binaries): Debian's cross compilers, qemu to run what they build, and each
# architecture's sysroot, which toolchain/cross/make-sysroot.sh unpacks from Debian's packages for
# that architecture into /var/cache/ndr-<debian arch>-sysroot (once; it checks).
NDR_CROSS_PACKAGES=(
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-powerpc64le-linux-gnu g++-s390x-linux-gnu
  qemu-user-static
)
NDR_CROSS_DEBIAN_ARCHES=(arm64 armhf ppc64el s390x)

ndr_install_cross_deps() {
  ndr_install_deps "${NDR_TEST_PACKAGES[@]}" "${NDR_CROSS_PACKAGES[@]}" "$@" || return 1
  local sudo=() arch
  if [ "$(id -u)" -ne 0 ] && [ ! -w /var/cache ]; then
    sudo=(sudo)
  fi
  for arch in "${NDR_CROSS_DEBIAN_ARCHES[@]}"; do
    # Quiet when the sysroot is there already (it checks its versions).
    if ! bash toolchain/cross/make-sysroot.sh --check "$arch" >/dev/null 2>&1; then
      ndr_step "Unpacking Debian's $arch packages into the cross build's sysroot" \
        "${sudo[@]}" bash toolchain/cross/make-sysroot.sh "$arch" || return 1
    fi
  done
}

# Bazel options for scripts: quiet, non-interactive output when run by CI or without a terminal.
ndr_bazel_flags() {
  if [ -n "${CI:-}" ] || [ ! -t 1 ]; then
    echo "--color=no --curses=no --show_progress_rate_limit=60"
  fi
}

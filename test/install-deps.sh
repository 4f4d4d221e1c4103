# Sourced by test/demo.sh and test/run-tests.sh: installs the Debian packages this project needs
# when any of them is missing, and nothing else. Needs root (or sudo) only when it installs.

NDR_PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java bazel-rules-proto bazel-skylib
  g++ pkg-config libunwind-dev liblzma-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgflags-dev libgoogle-glog-dev libgtest-dev libgmock-dev libabsl-dev libbenchmark-dev
  libevent-dev libyaml-cpp-dev nlohmann-json3-dev libssl-dev libcpp-httplib-dev
  python3 python3-yaml python3-kubernetes buildah file binutils
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

# The arm64 build (--config=arm64, and //... through toolchain/arm64:binaries): Debian's cross
# compiler, qemu to run what it builds, and the arm64 sysroot that toolchain/arm64/make-sysroot.sh
# unpacks from Debian's arm64 packages into /var/cache/ndr-arm64-sysroot (once; it checks).
NDR_ARM64_PACKAGES=(g++-aarch64-linux-gnu qemu-user-static)

ndr_install_arm64_deps() {
  ndr_install_deps "${NDR_ARM64_PACKAGES[@]}" "$@" || return 1
  local sudo=()
  if [ "$(id -u)" -ne 0 ] && [ ! -w /var/cache ]; then
    sudo=(sudo)
  fi
  # Quiet when the sysroot is there already (it checks its versions).
  if ! bash toolchain/arm64/make-sysroot.sh --check >/dev/null 2>&1; then
    ndr_step "Unpacking Debian's arm64 packages into the cross build's sysroot" \
      "${sudo[@]}" bash toolchain/arm64/make-sysroot.sh
  fi
}

# Bazel options for scripts: quiet, non-interactive output when run by CI or without a terminal.
ndr_bazel_flags() {
  if [ -n "${CI:-}" ] || [ ! -t 1 ]; then
    echo "--color=no --curses=no --show_progress_rate_limit=60"
  fi
}

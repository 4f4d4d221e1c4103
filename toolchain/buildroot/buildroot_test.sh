#!/usr/bin/env bash
# The build root's package set and key: every package the scripts install is in the set, the set
# is read as written, and the key follows what makes the root and nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "PASS: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

work=$(mktemp -d /tmp/ndr-buildroot-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/toolchain/buildroot" "$work/toolchain/hostsafe" "$work/test"
cp "$here/buildroot.sh" "$here/packages" "$work/toolchain/buildroot/"
cp "$here/../hostsafe/hostsafe.sh" "$work/toolchain/hostsafe/"
cp "$here/../../test/install-deps.sh" "$work/test/"

# shellcheck source=/dev/null
source "$work/test/install-deps.sh"
mapfile -t set < <(ndr_buildroot_packages)

in_set() { [[ " ${set[*]} " == *" $1 "* ]]; }
every_host_package_in_set() {
  local pkg missing=()
  for pkg in "${NDR_PACKAGES[@]}"; do in_set "$pkg" || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] || { echo "  not in toolchain/buildroot/packages: ${missing[*]}"; return 1; }
}
check "every package the demo installs is in the build root's set" every_host_package_in_set
check "the set has no comment, blank or duplicate left in it" \
  test "$(printf '%s\n' "${set[@]}" | sort -u | grep -c '^[a-z0-9][a-z0-9+.-]*$')" -eq "${#set[@]}"
check "the set holds what the cross builds and the fuzzers run" \
  bash -c "$(declare -f in_set); set=(${set[*]}); in_set qemu-user-static && in_set g++-s390x-linux-gnu && in_set clang && in_set bazel-bootstrap"

key=$(ndr_buildroot_key)
check "the key is 16 hex digits" bash -c "[[ $key =~ ^[0-9a-f]{16}$ ]]"
echo "# a comment changes nothing" >>"$work/toolchain/buildroot/packages"
check "a comment in the set leaves the key alone" test "$(ndr_buildroot_key)" = "$key"
echo "hello" >>"$work/toolchain/buildroot/packages"
check "a package added to the set changes the key" test "$(ndr_buildroot_key)" != "$key"
check "the base is named under /var/cache/ndr-buildroot by its key" \
  test "$(ndr_buildroot_base)" = "/var/cache/ndr-buildroot/$(ndr_buildroot_key)"

check "inside the build root (NDR_BUILDROOT set), it is never entered again" \
  bash -c "NDR_BUILDROOT=x; source '$work/toolchain/buildroot/buildroot.sh'; ! ndr_buildroot_needed"

[ "$failures" -eq 0 ]

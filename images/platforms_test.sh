#!/usr/bin/env bash
# images/platforms.sh and the scripts that take --platforms: which lists are platforms, in which
# order they are built, and that a platform this machine cannot build is refused by name with the
# reason make-sysroot.sh left, never left out. Nothing here builds: each refusal comes first.
set -uo pipefail
source test/util/shtest.sh
source images/platforms.sh
work=$(mktemp -d /tmp/ndr-platforms-XXXXXX)
trap 'rm -rf "$work"' EXIT

parses() {  # LIST EXPECTED: ndr_parse_platforms LIST gives EXPECTED (comma-joined)
  ndr_parse_platforms "$1" || return 1
  [ "$(IFS=,; echo "${NDR_WANTED_PLATFORMS[*]}")" = "$2" ] ||
    { echo "got ${NDR_WANTED_PLATFORMS[*]}"; return 1; }
}
refused() {  # LIST TEXT: ndr_parse_platforms LIST exits 2 saying TEXT
  local out status=0
  out=$(ndr_parse_platforms "$1" 2>&1) || status=$?
  [ "$status" -eq 2 ] && [[ $out == *"$2"* ]] || { echo "exit $status: $out"; return 1; }
}
shtest_case "no list is every platform, in the index's order" \
  parses "" amd64,arm64,arm/v7,ppc64le,s390x
shtest_case "a list in any order is built in the index's order" parses arm/v7,amd64 amd64,arm/v7
shtest_case "an unknown name is refused, with the names there are" \
  refused amd64,riscv64 "'riscv64' is not a platform; name some of amd64,arm64,arm/v7,ppc64le,s390x"
shtest_case "a name twice is refused" refused arm64,arm64 "arm64 is named twice"
shtest_case "an empty name is refused" refused amd64, "an empty name between commas"

# Sysroots here: arm64's made, armhf's missing with make-sysroot's reason, ppc64el's never tried.
ndr_sysroot_dir_=$work
mkdir -p "$work/ndr-arm64-sysroot"
touch "$work/ndr-arm64-sysroot/.ndr-packages"
echo "Debian's armhf index lists libc6-dev 2.41-12, but neither pool holds it" \
  >"$work/ndr-armhf-sysroot.unavailable"
buildable() {  # LIST: ndr_require_platforms passes
  ndr_parse_platforms "$1" && ndr_require_platforms
}
missing_named() {  # LIST TEXT...: ndr_require_platforms refuses, saying each TEXT
  local out status=0 text
  ndr_parse_platforms "$1" || return 1
  shift
  out=$(ndr_require_platforms 2>&1) || status=$?
  [ "$status" -eq 1 ] || { echo "exit $status: $out"; return 1; }
  for text in "$@"; do [[ $out == *"$text"* ]] || { echo "no '$text' in: $out"; return 1; }; done
}
shtest_case "amd64 and a platform whose sysroot is made are built" buildable amd64,arm64
shtest_case "a platform without its sysroot is refused with make-sysroot's reason" \
  missing_named amd64,arm/v7 "cannot build arm/v7" "neither pool holds it" \
  "this machine can build amd64,arm64."
shtest_case "every platform (the default): each missing one named" \
  missing_named "" "cannot build arm/v7 ppc64le s390x" \
  "its sysroot is not made (bash toolchain/cross/make-sysroot.sh ppc64el)"

# The scripts refuse before anything is built.
script_refuses() {  # STATUS TEXT COMMAND...
  local want=$1 text=$2 out status=0
  shift 2
  out=$("$@" 2>&1) || status=$?
  [ "$status" -eq "$want" ] && [[ $out == *"$text"* ]] || { echo "exit $status: $out"; return 1; }
}
shtest_case "build.sh refuses an unknown platform" \
  script_refuses 2 "'sparc' is not a platform" bash images/build.sh --platforms=amd64,sparc "$work/o"
shtest_case "build.sh refuses an empty list" \
  script_refuses 2 "--platforms= names no platform" bash images/build.sh --platforms= "$work/o"
shtest_case "release.sh refuses other platforms than RELEASES records for a release" \
  script_refuses 1 "RELEASES records release 1.1.0 for amd64,arm64,arm/v7,ppc64le,s390x, not amd64" \
  bash images/release.sh 1.1.0 "$work/r" --source-uri=https://github.com/kubernetes-csi/x \
  --platforms=amd64
shtest_case "nothing was made before the refusals" test ! -e "$work/o" -a ! -e "$work/r"

# What each platform builds, and where its binaries are.
is() {  # WANT COMMAND...: COMMAND prints WANT
  local want=$1 got
  shift
  got=$("$@") || return 1
  [ "$got" = "$want" ] || { echo "got: $got"; return 1; }
}
programs=(registrar/csi-node-driver-registrar test/csidriver/sample-csi-driver)
shtest_case "amd64 is built by the programs' own targets" \
  is $'//registrar:csi-node-driver-registrar.stripped\n//test/csidriver:sample-csi-driver.stripped' \
  ndr_platform_targets amd64 "${programs[@]}"
shtest_case "arm/v7 by its cross build's one target" \
  is //toolchain/cross:armv7_binaries ndr_platform_targets arm/v7 "${programs[@]}"
shtest_case "amd64's binaries are under the programs' packages" \
  is /b/registrar/csi-node-driver-registrar.stripped,/b/test/csidriver/sample-csi-driver.stripped \
  ndr_platform_binaries /b amd64 "${programs[@]}"
shtest_case "ppc64le's under its cross build's directory" \
  is /b/toolchain/cross/ppc64le_binaries/csi-node-driver-registrar.stripped,/b/toolchain/cross/ppc64le_binaries/sample-csi-driver.stripped \
  ndr_platform_binaries /b ppc64le "${programs[@]}"
shtest_end

#!/usr/bin/env bash
# make-sysroot.sh makes one sysroot at a time and trusts only a whole one: two makes of one sysroot
# at once end with one complete sysroot whose list of versions (.ndr-packages) is what was
# unpacked, and a make killed (SIGKILL) midway leaves the sysroot that was there whole and usable,
# and its leftovers to the next make, which removes them. apt is run with its own lock and its
# download methods as _apt; a package missing from the main pool comes from the security pool.
# apt-get, apt-cache, apt-helper and dpkg-query are stand-ins on PATH (no network):
# the packages they "download" are tiny .debs made here with the real dpkg-deb, which unpacks
# them; a stand-in waits on a FIFO where the test holds a make.
#   bash toolchain/cross/make_sysroot_lock_test.sh [MAKE_SYSROOT]   (default: the one beside this)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
source "$top/test/util/shtest.sh"
script=${1:-$here/make-sysroot.sh}
real_dpkg_deb=$(command -v dpkg-deb) || { echo "FAIL: dpkg-deb is missing (apt-get install dpkg)"; exit 1; }
work=$(mktemp -d /tmp/ndr-mslt-XXXXXX)
chmod 0755 "$work"
cleanup() {
  local group
  # Each make runs in a session of its own (setsid), whose process group is its pid.
  for group in $(cat "$work"/run-*/pid 2>/dev/null); do kill -9 -- "-$group" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# --- the stand-ins ------------------------------------------------------------------------------
mkdir "$work/bin"
cat >"$work/bin/dpkg-query" <<'EOF'
#!/bin/bash
# dpkg-query -W -f='${Version}' PACKAGE: every package is installed at $NDR_TEST_VERSION.
echo -n "$NDR_TEST_VERSION"
EOF
cat >"$work/bin/apt-cache" <<'EOF'
#!/bin/bash
# apt-cache ... madison PACKAGE:ARCH: the archive has $NDR_TEST_VERSION.
echo "$*" >>"$NDR_TEST_DIR/apt-calls"
echo " ${!#%%:*} | $NDR_TEST_VERSION | http://deb.invalid/debian trixie/main arm64 Packages"
EOF
cat >"$work/bin/apt-get" <<'EOF'
#!/bin/bash
# apt-get ... update | download PACKAGE:ARCH=VERSION. A download makes a .deb of one file,
# usr/lib/ndr-test/PACKAGE (holding its version), in the current directory; libc6-dev's also holds
# a GNU ld script naming /usr/lib paths and an absolute symlink. The download of
# $NDR_TEST_HOLD_AT touches $NDR_TEST_DIR/held and waits for a line on $NDR_TEST_DIR/release.
set -eu
echo "$*" >>"$NDR_TEST_DIR/apt-calls"
want=${!#}
package=${want%%:*} version=${want#*=}
[ "$version" != "$want" ] || version=$NDR_TEST_VERSION
case " $* " in
  *" update "*) exit 0 ;;
  *" indextargets "*)
    printf '%s\n' "http://deb.invalid/debian/ trixie" "http://deb.invalid/debian-security/ trixie-security"
    exit 0 ;;
  # The package $NDR_TEST_UNSERVED is listed in the main archive's index, and not in its pool.
  *" --print-uris "*)
    [ "$package" = "${NDR_TEST_UNSERVED:-}" ] || exit 1
    echo "'http://deb.invalid/debian/pool/main/t/$package/${package}_${version}_arm64.deb' ${package}_${version}_arm64.deb 1000 SHA256:0123"
    exit 0 ;;
esac
[ "$package" != "${NDR_TEST_UNSERVED:-}" ] || exit 100
if [ "$package" = "${NDR_TEST_HOLD_AT:-}" ]; then
  touch "$NDR_TEST_DIR/held"
  read -r _ <"$NDR_TEST_DIR/release"
fi
tree=$(mktemp -d)
mkdir -p "$tree/DEBIAN" "$tree/usr/lib/ndr-test"
printf 'Package: %s\nVersion: %s\nArchitecture: arm64\nMaintainer: test <test@invalid>\nDescription: test\n' \
  "$package" "$version" >"$tree/DEBIAN/control"
echo "$package $version" >"$tree/usr/lib/ndr-test/$package"
if [ "$package" = libc6-dev ]; then
  printf '/* GNU ld script */\nGROUP ( /usr/lib/ndr-test/libm-2.41.a )\n' >"$tree/usr/lib/ndr-test/libm.a"
  ln -s /usr/lib/ndr-test/libc6-dev "$tree/usr/lib/ndr-test/absolute"
fi
"$NDR_TEST_REAL_DPKG_DEB" --root-owner-group -Zgzip -b "$tree" "${package}_${version}_arm64.deb" >/dev/null
rm -rf "$tree"
EOF
cat >"$work/bin/apt-helper" <<'EOF'
#!/bin/bash
# apt-helper ... download-file URI DEST HASH: the security archive's pool holds every package.
set -eu
args=("$@")
uri=${args[-3]} dest=${args[-2]}
echo "download-file $uri" >>"$NDR_TEST_DIR/apt-calls"
[[ $uri == http://deb.invalid/debian-security/pool/updates/main/* ]] || exit 100
file=${uri##*/}
package=${file%%_*} rest=${file#*_}
cd "$(dirname "$dest")"
NDR_TEST_UNSERVED= apt-get download "$package:arm64=${rest%%_*}"
[ "$file" = "$(basename "$dest")" ] || mv "$file" "$dest"
EOF
cat >"$work/bin/dpkg-deb" <<'EOF'
#!/bin/bash
# The real dpkg-deb; the unpacking (-x) of the $NDR_TEST_HOLD_UNPACK-th package touches
# $NDR_TEST_DIR/held and waits for a line on $NDR_TEST_DIR/release.
if [ "$1" = -x ] && [ -n "${NDR_TEST_HOLD_UNPACK:-}" ]; then
  echo x >>"$NDR_TEST_DIR/unpacked"
  if [ "$(wc -l <"$NDR_TEST_DIR/unpacked")" -eq "$NDR_TEST_HOLD_UNPACK" ]; then
    touch "$NDR_TEST_DIR/held"
    read -r _ <"$NDR_TEST_DIR/release"
  fi
fi
exec "$NDR_TEST_REAL_DPKG_DEB" "$@"
EOF
chmod 0755 "$work/bin"/*
export PATH="$work/bin:$PATH" NDR_TEST_REAL_DPKG_DEB=$real_dpkg_deb
packages=$(sed -n '/^packages=(/,/^)/p' "$script" | sed '1d;$d' | tr -s ' \n' '\n' | sed '/^$/d')
[ -n "$packages" ] || { echo "FAIL: $script lists no packages"; exit 1; }

# A run's directory: its FIFO, its calls, what it held at.
new_run() {
  local dir=$work/run-$1-$BASHPID
  mkdir "$dir" && mkfifo "$dir/release" && echo "$dir"
}
# Starts a make in the background: make_start RUN_DIR VERSION [VAR=VALUE...]; its pid in $made.
make_start() {
  local dir=$1 version=$2
  shift 2
  setsid env NDR_TEST_DIR="$dir" NDR_TEST_VERSION="$version" "$@" \
    bash "$script" arm64 "$sysroot" >"$dir/out" 2>"$dir/err" &
  made=$!
  echo "$made" >"$dir/pid"
}
wait_for() {  # wait_for SECONDS COMMAND...: polls until COMMAND succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
# The sysroot is whole at VERSION: its list is that version's, every package's file is there with
# that version, .ndr-files names them, the linker script names the sysroot's own path, no absolute
# symlink is left, and nothing of a make (*.new.*, *.apt*) lies beside it.
expect_whole() {
  local version=$1 what=$2 package expected
  expected="files ldscripts $(for package in $packages; do printf '%s ' "$package=$version"; done)"
  [ "$(cat "$sysroot/.ndr-packages" 2>/dev/null)" = "${expected% }" ] ||
    { fail "$what: $sysroot/.ndr-packages is '$(cat "$sysroot/.ndr-packages" 2>&1)', not the list of $version"; return; }
  for package in $packages; do
    [ "$(cat "$sysroot/usr/lib/ndr-test/$package" 2>/dev/null)" = "$package $version" ] ||
      fail "$what: the list says $version, but $package's file is '$(cat "$sysroot/usr/lib/ndr-test/$package" 2>&1)'"
    grep -q "^/usr/lib/ndr-test/$package	$package	arm64	$version	" "$sysroot/.ndr-files" ||
      fail "$what: .ndr-files does not name $package $version"
  done
  grep -qxF "GROUP ( $sysroot/usr/lib/ndr-test/libm-2.41.a )" "$sysroot/usr/lib/ndr-test/libm.a" ||
    fail "$what: the linker script does not name the sysroot's path: $(tail -n 1 "$sysroot/usr/lib/ndr-test/libm.a")"
  [ ! -L "$sysroot/usr/lib/ndr-test/absolute" ] || fail "$what: an absolute symlink is left"
  local left
  left=$(ls -d "$sysroot".new.* "$sysroot".apt* 2>/dev/null)
  [ -z "$left" ] || fail "$what: left beside the sysroot: $left"
}

# Two makes of one sysroot at once: the second waits for the first, naming it, and finds the
# sysroot made; apt runs with its lock and its download methods as _apt.
two_makes_at_once() {
  sysroot=$work/sysroot-1
  a=$(new_run a) b=$(new_run b)
  make_start "$a" 1.0 NDR_TEST_HOLD_AT=libabsl-dev
  pid_a=$made
  wait_for 120 test -e "$a/held" || fail "the first make did not reach its download: $(cat "$a/err")"
  make_start "$b" 1.0
  pid_b=$made
  # The second waits for the first's lock, having named it, and touches nothing meanwhile.
  if wait_for 120 grep -q "waiting for the arm64 sysroot" "$b/err"; then
    wait_for 120 grep -q "pid $pid_a, " "$b/err" ||
      fail "the second make's wait does not name the first: $(cat "$b/err")"
  else
    fail "the second make did not wait for the first: $(cat "$b/err")"
  fi
  [ ! -e "$b/apt-calls" ] ||
    fail "the second make ran apt while the first held the sysroot: apt-get $(head -n 1 "$b/apt-calls")"
  echo go >"$a/release"
  wait "$pid_a"; status_a=$?
  wait "$pid_b"; status_b=$?
  [ "$status_a" -eq 0 ] || fail "the first make failed (exit $status_a): $(cat "$a/err")"
  [ "$status_b" -eq 0 ] || fail "the second make failed (exit $status_b): $(cat "$b/err")"
  [ "$(cat "$a/out")" = "$sysroot" ] && [ "$(cat "$b/out")" = "$sysroot" ] ||
    fail "the makes did not both print the sysroot's path: '$(cat "$a/out")', '$(cat "$b/out")'"
  expect_whole 1.0 "two makes at once"
  NDR_TEST_VERSION=1.0 bash "$script" --check arm64 "$sysroot" >/dev/null 2>&1 ||
    fail "--check does not find the sysroot the makes made"
  grep -q -e 'Debug::NoLocking' -e 'APT::Sandbox::User' "$a/apt-calls" &&
    fail "apt is run without its lock or with its download methods as root: apt-get $(head -n 1 "$a/apt-calls")"
  return "$failures"
}

# A make killed midway (while it unpacks) leaves the sysroot that was there whole, and the next
# make removes what the killed one left and makes the sysroot whole at the new versions.
killed_midway() {
  sysroot=$work/sysroot-2
  local v1
  v1=$(new_run v1)
  make_start "$v1" 1.0
  wait "$made" || { fail "the first make failed: $(cat "$v1/err")"; return 1; }
  c=$(new_run c) d=$(new_run d)
  list_1=$(cat "$sysroot/.ndr-packages" 2>/dev/null) || list_1="(none)"
  make_start "$c" 2.0 NDR_TEST_HOLD_UNPACK=5
  pid_c=$made
  if wait_for 120 test -e "$c/held"; then
    kill -9 -- "-$pid_c"
    wait "$pid_c" 2>/dev/null
    # Until a make completes, the sysroot is the one that was there: whole, at its version.
    [ "$(cat "$sysroot/.ndr-packages" 2>/dev/null)" = "$list_1" ] &&
      [ "$(cat "$sysroot/usr/lib/ndr-test/libc6-dev" 2>/dev/null)" = "libc6-dev 1.0" ] ||
      fail "a make killed midway did not leave the sysroot that was there whole: $(ls -a "$sysroot" 2>&1 | tr '\n' ' ')"
    NDR_TEST_VERSION=2.0 bash "$script" --check arm64 "$sysroot" >/dev/null 2>&1 &&
      fail "--check takes the half-made sysroot of a killed make for version 2.0"
  else
    fail "the make to be killed did not reach its unpacking: $(cat "$c/err")"
  fi
  make_start "$d" 2.0
  pid_d=$made
  wait "$pid_d"; status_d=$?
  [ "$status_d" -eq 0 ] || fail "the make after the killed one failed (exit $status_d): $(cat "$d/err")"
  expect_whole 2.0 "a make after one killed midway"
  return "$failures"
}

# A package the main archive's index lists and its pool does not hold (a mirror mid-sync) is
# taken, the same file by the same hash, from the security archive's pool, whose address apt
# gives (its sources may be deb822 .sources: apt-get indextargets reads both forms).
other_pool() {
  sysroot=$work/sysroot-3
  local e
  e=$(new_run e)
  make_start "$e" 1.0 NDR_TEST_UNSERVED=libssl-dev
  wait "$made" || { fail "the make with libssl-dev in the other pool failed: $(cat "$e/err")"; return "$failures"; }
  grep -qx "download-file http://deb.invalid/debian-security/pool/updates/main/t/libssl-dev/libssl-dev_1.0_arm64.deb" \
    "$e/apt-calls" || fail "libssl-dev was not asked of the security archive's pool: $(grep download-file "$e/apt-calls")"
  grep -q "libssl-dev:arm64=1.0: .* is not served; took the same file" "$e/err" ||
    fail "the make did not say where libssl-dev came from: $(cat "$e/err")"
  expect_whole 1.0 "a make with a package in the other pool"
  return "$failures"
}

shtest_case "two makes of one sysroot at once end with one whole sysroot" two_makes_at_once
shtest_case "a make killed midway leaves the old sysroot whole; the next makes it anew" killed_midway
shtest_case "a package the main pool lacks is taken from the security archive's pool" other_pool
shtest_end

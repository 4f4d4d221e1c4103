#!/usr/bin/env bash
# The build root is a guest on the host: two makes at once, a make killed midway, and runs at once
# leave the host's mounts and shared memory as they were, and the root is made from Debian's
# archive with Debian's keys alone. mmdebstrap is replaced by a stand-in on PATH that mounts what
# the real one mounts into its target (a tmpfs standing for the host's /dev/shm, with a canary
# file in it) and, when told, waits to be killed. Needs root; the whole test runs in a mount
# namespace of its own, so nothing it mounts is ever the host's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
source "$top/test/util/shtest.sh"

if [ "$(id -u)" -ne 0 ]; then
  shtest_skip "the build root's safety on a shared host" "needs root (CI runs as root)"
  shtest_end
  exit
fi
if [ -z "${NDR_BUILDROOT_SAFETY_NS:-}" ]; then
  NDR_BUILDROOT_SAFETY_NS=1 exec unshare --mount --propagation private -- bash "$0" "$@"
fi

work=$(mktemp -d /tmp/ndr-brs-XXXXXX)
source "$top/toolchain/hostsafe/hostsafe.sh"
cleanup() {
  local pid
  for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ndr_remove_tree "$work"
}
trap cleanup EXIT

# A copy of the scripts, with its roots kept under $work/cache.
mkdir -p "$work/src/toolchain/buildroot" "$work/src/toolchain/hostsafe" "$work/bin" "$work/cache"
cp "$here/buildroot.sh" "$here/packages" "$work/src/toolchain/buildroot/"
cp "$top/toolchain/hostsafe/hostsafe.sh" "$work/src/toolchain/hostsafe/"
export NDR_BUILDROOT_CACHE=$work/cache
# The stand-in for the host's /dev/shm.
mkdir "$work/shm"
mount -t tmpfs -o size=1m ndr-test-shm "$work/shm"
echo "another program's shared memory" >"$work/shm/canary"
canary_intact() { [ "$(cat "$work/shm/canary" 2>/dev/null)" = "another program's shared memory" ]; }

# mmdebstrap's stand-in: binds the "host's /dev/shm" into the target as mmdebstrap --mode=root
# binds the real one, records its arguments, then (FAKE_MMDEBSTRAP=hang) says so and waits to be
# killed, or (FAKE_MMDEBSTRAP=wait) waits for $work/release, or finishes a root.
cat >"$work/bin/mmdebstrap" <<EOF
#!/bin/bash
set -eu
target=\${@: -4:1}
echo "\$*" >>"$work/mmdebstrap.calls"
mkdir -p "\$target/dev/shm" "\$target/etc"
mount --bind "$work/shm" "\$target/dev/shm"
case \${FAKE_MMDEBSTRAP:-ok} in
  hang) touch "$work/hung"; while :; do sleep 1; done ;;
  wait) touch "$work/waiting"; while [ ! -e "$work/release" ]; do sleep 0.05; done ;;
esac
umount "\$target/dev/shm"
echo 'ID=debian' >"\$target/etc/os-release"
EOF
# The packages mmdebstrap and debian-archive-keyring count as installed.
cat >"$work/bin/dpkg-query" <<'EOF'
#!/bin/sh
echo "install ok installed"
EOF
chmod +x "$work/bin/mmdebstrap" "$work/bin/dpkg-query"
export PATH=$work/bin:$PATH
export NDR_DEBIAN_MIRROR=http://debian.test/debian NDR_DEBIAN_SECURITY_MIRROR=http://debian.test/security
buildroot=$work/src/toolchain/buildroot/buildroot.sh
base=$(bash -c "source '$buildroot'; ndr_buildroot_base")
calls() { [ -f "$work/mmdebstrap.calls" ] && wc -l <"$work/mmdebstrap.calls" || echo 0; }
reset_cache() {
  ndr_remove_tree "$work/cache" && mkdir "$work/cache" && rm -f "$work/mmdebstrap.calls" \
    "$work/hung" "$work/waiting" "$work/release"
}

# 1. A make killed by SIGKILL (with all it started, as the OOM killer or a CI timeout kills),
#    then a make of the same root: the second removes what the first left without reaching the
#    host's /dev/shm through it.
killed_then_made() {
  reset_cache
  FAKE_MMDEBSTRAP=hang setsid bash "$buildroot" make >"$work/first.log" 2>&1 &
  local first=$!
  shtest_wait_for 120 test -e "$work/hung" || { echo "the first make never reached mmdebstrap"; cat "$work/first.log"; return 1; }
  kill -9 -- "-$first"
  wait "$first" 2>/dev/null || true
  ls -d "$base"/root.new.* >/dev/null || { echo "the killed make left no partial root to clean"; return 1; }
  bash "$buildroot" make >"$work/second.log" 2>&1 || { cat "$work/second.log"; return 1; }
  canary_intact || { echo "the canary in the host's /dev/shm stand-in is gone"; return 1; }
  [ -f "$base/root/etc/ndr-buildroot" ] || { echo "no root after the second make"; return 1; }
  ! ls -d "$base"/root.new.* 2>/dev/null || { echo "the partial root was left behind"; return 1; }
  [ -z "$(ndr_mounts_under "$work/cache")" ] || { echo "mounts left: $(ndr_mounts_under "$work/cache")"; return 1; }
}
shtest_case "a make after one killed midway removes its leftovers and never the host's /dev/shm" \
  killed_then_made

# 2. Two makes of one root at once: the second waits, saying who holds the root, and then finds
#    the root made; mmdebstrap ran once.
two_makes_at_once() {
  reset_cache
  FAKE_MMDEBSTRAP=wait bash "$buildroot" make >"$work/a.log" 2>&1 &
  local a=$!
  shtest_wait_for 120 test -e "$work/waiting" || { echo "make A never reached mmdebstrap"; return 1; }
  bash "$buildroot" make >"$work/b.log" 2>&1 &
  local b=$!
  shtest_wait_for 120 grep -q "waiting for the Debian 13 build root" "$work/b.log" ||
    { echo "make B did not say it waits:"; cat "$work/b.log"; return 1; }
  shtest_wait_for 120 grep -q "pid $a, since .*buildroot.sh make" "$work/b.log" ||
    { echo "make B did not name make A:"; cat "$work/b.log"; return 1; }
  touch "$work/release"
  wait "$a" || { echo "make A failed:"; cat "$work/a.log"; return 1; }
  wait "$b" || { echo "make B failed:"; cat "$work/b.log"; return 1; }
  [ "$(calls)" -eq 1 ] || { echo "mmdebstrap ran $(calls) times"; return 1; }
  [ "$(tail -n 1 "$work/b.log")" = "$base/root" ] || { echo "make B printed: $(tail -n 1 "$work/b.log")"; return 1; }
  canary_intact
}
shtest_case "a second make of one root waits for the first, naming it, and makes nothing" \
  two_makes_at_once

three_nowait_refused() {
  reset_cache
  FAKE_MMDEBSTRAP=wait bash "$buildroot" make >"$work/a.log" 2>&1 &
  local a=$! status=0
  shtest_wait_for 120 test -e "$work/waiting" || return 1
  NDR_LOCK_NOWAIT=1 timeout 120 bash "$buildroot" make >"$work/b.log" 2>&1 || status=$?
  touch "$work/release"
  wait "$a" || return 1
  [ "$status" -eq 1 ] || { echo "exit $status, not 1"; cat "$work/b.log"; return 1; }
  grep -q "is in use" "$work/b.log" && grep -q "pid $a" "$work/b.log" ||
    { cat "$work/b.log"; return 1; }
  canary_intact
}
shtest_case "with NDR_LOCK_NOWAIT=1 a second make is refused at once, naming the first" \
  three_nowait_refused

# 3. What an earlier, unlocked make left mounted in its partial root (the host's /dev/shm, bound
#    there in the host's namespace) is unmounted before the partial root is removed.
leftover_mount_unmounted() {
  reset_cache
  mkdir -p "$base/root.new/dev/shm"
  mount --bind "$work/shm" "$base/root.new/dev/shm"
  bash "$buildroot" make >"$work/make.log" 2>&1 || { cat "$work/make.log"; return 1; }
  canary_intact || { echo "the canary is gone"; return 1; }
  [ -z "$(ndr_mounts_under "$work/cache")" ]
}
# (root.new is the name the make used before it took a fresh name; it is cleaned as well.)
shtest_case "a mount left in a partial root is unmounted, not deleted through" leftover_mount_unmounted

busy_mount_refused() {
  reset_cache
  mkdir -p "$base/root.new.busy/dev/shm"
  mount --bind "$work/shm" "$base/root.new.busy/dev/shm"
  (cd "$base/root.new.busy/dev/shm" && touch "$work/busy" && while [ ! -e "$work/release" ]; do sleep 0.05; done) &
  local holder=$! status=0
  shtest_wait_for 120 test -e "$work/busy"
  bash "$buildroot" make >"$work/make.log" 2>&1 || status=$?
  touch "$work/release"
  wait "$holder"
  umount "$base/root.new.busy/dev/shm"
  rm -f "$work/busy"
  [ "$status" -ne 0 ] || { echo "the make went on"; return 1; }
  grep -q "refusing to remove $base/root.new.busy" "$work/make.log" &&
    grep -q "$base/root.new.busy/dev/shm" "$work/make.log" || { cat "$work/make.log"; return 1; }
  canary_intact
}
shtest_case "a partial root whose mount cannot be unmounted is refused, naming the mount" \
  busy_mount_refused

# 4. Runs at once in one root all start: none removes another's old-root directory. The root is
#    this machine's own root file system under an overlay (nothing written reaches it), with the
#    stamp.
runs_at_once() {
  reset_cache
  local root=$base/root pids=() failed=0 i
  mkdir -p "$root" "$base/upper" "$base/overlay-work"
  mount -t overlay ndr-test-root -o "lowerdir=/,upperdir=$base/upper,workdir=$base/overlay-work" "$root" ||
    return 1
  echo "key test" >"$root/etc/ndr-buildroot"
  for i in $(seq 1 12); do
    # From $work: the host's /tmp is in the root, wherever the test itself runs.
    (cd "$work" && bash "$buildroot" run /bin/sh -c 'test -e /etc/ndr-buildroot') >"$work/run$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { failed=$((failed + 1)); cat "$work/run$((i + 1)).log"; }
  done
  local left
  left=$(ls -A "$root" | grep ndr-old-root || true)
  umount "$root"
  [ "$failed" -eq 0 ] || { echo "$failed of 12 runs failed"; return 1; }
  [ -z "$left" ] || { echo "old-root directories left: $left"; return 1; }
}
shtest_case "twelve runs at once in one root all start and leave nothing in it" runs_at_once

# A run started from a directory the root does not mount (here a tmpfs outside /tmp, in this
# test's own mount namespace: the overlay's lower layer does not show it) runs in the checkout.
run_from_elsewhere() {
  reset_cache
  local root=$base/root out status=0
  mkdir -p "$root" "$base/upper" "$base/overlay-work"
  mount -t overlay ndr-test-root -o "lowerdir=/,upperdir=$base/upper,workdir=$base/overlay-work" "$root" ||
    return 1
  echo "key test" >"$root/etc/ndr-buildroot"
  mount -t tmpfs -o size=1m ndr-test-elsewhere /mnt
  mkdir /mnt/elsewhere
  out=$(cd /mnt/elsewhere && bash "$buildroot" run /bin/sh -c pwd 2>"$work/elsewhere.log") || status=$?
  umount /mnt
  umount "$root"
  [ "$status" -eq 0 ] && [ "$out" = "$work/src" ] || { echo "status $status, in '$out'"; cat "$work/elsewhere.log"; return 1; }
  grep -q "/mnt/elsewhere is not mounted in the build root" "$work/elsewhere.log" ||
    { cat "$work/elsewhere.log"; return 1; }
}
shtest_case "a run started outside what the root mounts runs in the checkout, and says so" \
  run_from_elsewhere

# 5. The package source: Debian's, chosen by the Release file's origin, checked with Debian's
#    keys alone; through sudo the NDR_* settings are kept.
mirror_is_debian() {
  cat >"$work/bin/apt-get" <<'EOF'
#!/bin/sh
[ "$1" = indextargets ] || exit 1
echo "http://archive.raspberrypi.com/debian/ trixie Raspberry Pi Foundation"
echo "http://mirror.example/debian/ trixie Debian"
echo "http://mirror.example/debian-security/ trixie-security Debian"
echo "http://vendor.example/debian-security/ trixie-security Vendor"
EOF
  chmod +x "$work/bin/apt-get"
  local main security
  main=$(bash -c "source '$buildroot'; ndr_buildroot_mirror_ main")
  security=$(bash -c "source '$buildroot'; ndr_buildroot_mirror_ security")
  rm -f "$work/bin/apt-get"
  [ "$main" = http://mirror.example/debian ] || { echo "main: $main"; return 1; }
  [ "$security" = http://mirror.example/debian-security ] || { echo "security: $security"; return 1; }
}
shtest_case "the host's Debian source is taken, not the first whose URI says debian" mirror_is_debian

keyring_is_debian() {
  reset_cache
  bash "$buildroot" make >"$work/make.log" 2>&1 || { cat "$work/make.log"; return 1; }
  grep -q -- "--keyring=/usr/share/keyrings/debian-archive-keyring.gpg" "$work/mmdebstrap.calls" ||
    { cat "$work/mmdebstrap.calls"; return 1; }
  grep -q "deb http://debian.test/debian trixie main" "$work/mmdebstrap.calls"
}
shtest_case "the root is made with Debian's archive keys alone, from NDR_DEBIAN_MIRROR" keyring_is_debian

sudo_keeps_settings() {
  reset_cache
  cat >"$work/bin/id" <<'EOF'
#!/bin/sh
[ "$1" = -u ] && { echo 1000; exit 0; }
exec /usr/bin/id "$@"
EOF
  rm -f "$work/sudo.args"
  cat >"$work/bin/sudo" <<EOF
#!/bin/sh
echo "\$*" >>"$work/sudo.args"
EOF
  chmod +x "$work/bin/id" "$work/bin/sudo"
  bash "$buildroot" make >/dev/null 2>&1 || true
  bash -c "source '$buildroot'; ndr_buildroot_run true" >/dev/null 2>&1 || true
  rm -f "$work/bin/id" "$work/bin/sudo"
  # Each call: the make's, then the run's (which makes the root first, then runs).
  [ "$(grep "NDR_DEBIAN_MIRROR=http://debian.test/debian " "$work/sudo.args" |
        grep -c "NDR_BUILDROOT_CACHE=$work/cache ")" -eq 3 ] &&
    [ "$(grep -c "buildroot.sh make$" "$work/sudo.args")" -eq 2 ] || { cat "$work/sudo.args"; return 1; }
}
shtest_case "through sudo, the NDR_* settings reach the make" sudo_keeps_settings

shtest_case "the host's /dev/shm stand-in still holds the canary" canary_intact
shtest_end

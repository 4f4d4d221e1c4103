#!/usr/bin/env bash
# release.sh and publish.sh refuse, before anything is built, pushed or signed,
# a directory that someone other than root and whoever runs them could change: release.sh's
# OUT_DIR another user owns, one group or others may write, one beneath such a directory, a
# symbolic link, one not empty; publish.sh's release directory likewise, and one holding a symbolic
# link (digests.txt, cosign.pub) where it reads or writes. git, bazel, apt-get, sudo, unshare,
# mmdebstrap, skopeo and cosign are stand-ins on PATH that record being run: a refused run runs
# none of them, and a directory that passes the checks reaches the first of them. Cases about
# another user's directory need root; without it they are skipped.
#   bash images/release_dirs_test.sh [RELEASE_SH PUBLISH_SH]   (default: the ones beside this)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
source "$top/test/util/shtest.sh"
release_sh=${1:-$here/release.sh}
publish_sh=${2:-$here/publish.sh}
work=$(mktemp -d /tmp/ndr-rdt-XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir "$work/bin"
for tool in git bazel apt-get sudo unshare mmdebstrap skopeo cosign; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/ran"\nexit 1\n' "$tool" "$work" >"$work/bin/$tool"
  chmod 0755 "$work/bin/$tool"
done
# No build root is entered or made from here (NDR_BUILDROOT_CACHE: a stand-in's, should a
# refusal be missed).
export PATH="$work/bin:$PATH" NDR_BUILDROOT_CACHE=$work/buildroot-cache
unset NDR_BUILDROOT NDR_RELEASE_USER

# refused PATTERN COMMAND...: COMMAND fails (120 s is only a guard against a hang), saying PATTERN,
# and runs no stand-in: nothing slow ran before the refusal.
refused() {
  local pattern=$1 out status=0
  shift
  rm -f "$work/ran"
  out=$(timeout 120 "$@" 2>&1) || status=$?
  if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
    echo "not refused (exit $status; 124: still running after 120 s): $out"
    return 1
  fi
  grep -q -- "$pattern" <<<"$out" || { echo "refused, but said: $out"; return 1; }
  if [ -e "$work/ran" ]; then
    echo "refused only after running: $(cat "$work/ran")"
    return 1
  fi
}
# passes_checks COMMAND...: COMMAND gets past its directory checks to the first stand-in it runs.
passes_checks() {
  local out
  rm -f "$work/ran"
  out=$(timeout 120 "$@" 2>&1)
  [ -e "$work/ran" ] || { echo "stopped before any stand-in ran: $out"; return 1; }
}
# release.sh 1.1.0 OUT_DIR, as run on the host; and as run in the build root (no build root
# entered) for the user NDR_RELEASE_USER who ran it on the host: $(inside USER).
release=(bash "$release_sh" --source-uri=https://git.corp.internal/storage/ndr 1.1.0)
inside() { echo env NDR_BUILDROOT=test NDR_RELEASE_USER="$1"; }

# --- release.sh's OUT_DIR ---------------------------------------------------------------------
mkdir -m 0700 "$work/private"
if [ "$(id -u)" -eq 0 ]; then
  mkdir -m 0755 "$work/private/theirs" && chown 65534 "$work/private/theirs"
  shtest_case "release.sh refuses an empty OUT_DIR another user owns, naming the user" \
    refused "belongs to user 65534" "${release[@]}" "$work/private/theirs"
  mkdir -m 0755 "$work/theirs-above" && chown 65534 "$work/theirs-above"
  mkdir -m 0700 "$work/theirs-above/out"
  shtest_case "release.sh refuses an OUT_DIR beneath a directory another user owns" \
    refused "$work/theirs-above belongs to user 65534" "${release[@]}" "$work/theirs-above/out"
  mkdir -m 0700 "$work/private/users" && chown 65534 "$work/private/users"
  shtest_case "in the build root, the OUT_DIR of the user who ran release.sh is theirs" \
    passes_checks $(inside 65534) "${release[@]}" "$work/private/users"
  shtest_case "in the build root, another user's OUT_DIR is refused" \
    refused "belongs to user 65534" $(inside 1234) "${release[@]}" "$work/private/users"
  mkdir -m 0770 "$work/private/users-open" && chown 65534 "$work/private/users-open"
  shtest_case "in the build root, a group-writable OUT_DIR of the user who ran it is refused" \
    refused "may be written by group or others" $(inside 65534) "${release[@]}" "$work/private/users-open"
else
  for case in "release.sh refuses an empty OUT_DIR another user owns, naming the user" \
      "release.sh refuses an OUT_DIR beneath a directory another user owns" \
      "in the build root, the OUT_DIR of the user who ran release.sh is theirs" \
      "in the build root, another user's OUT_DIR is refused" \
      "in the build root, a group-writable OUT_DIR of the user who ran it is refused"; do
    shtest_skip "$case" "needs root, to make another user's directory"
  done
fi
mkdir -m 0700 "$work/private/group" && chmod 0770 "$work/private/group"
shtest_case "release.sh refuses a group-writable OUT_DIR, saying chmod go-w" \
  refused "may be written by group or others.*chmod go-w" "${release[@]}" "$work/private/group"
mkdir -m 0777 "$work/open"
shtest_case "release.sh refuses a new OUT_DIR in a directory others may write" \
  refused "$work/open may be written by group or others" "${release[@]}" "$work/open/new"
[ ! -e "$work/open/new" ] || echo "note: release.sh left $work/open/new"
mkdir -m 0700 "$work/private/target"
ln -s "$work/private/target" "$work/private/link"
shtest_case "release.sh refuses an OUT_DIR that is a symbolic link" \
  refused "symbolic link" "${release[@]}" "$work/private/link"
mkdir -m 0700 "$work/private/full" && touch "$work/private/full/digests.txt"
shtest_case "release.sh refuses an OUT_DIR that is not empty" \
  refused "not empty" "${release[@]}" "$work/private/full"
shtest_case "release.sh makes a new OUT_DIR in a private directory, and goes on" \
  passes_checks $(inside "$(id -u)") "${release[@]}" "$work/private/new"
made_new() { [ "$(stat -c '%u %a' "$work/private/new")" = "$(id -u) 755" ]; }
shtest_case "the OUT_DIR release.sh made is its user's, mode 0755" made_new

# --- publish.sh's release directory -----------------------------------------------------------
# A release directory as release.sh leaves it, as far as publish.sh reads it before it pushes.
make_release() {
  mkdir -m 0755 "$1"
  echo "registrar index sha256:0" >"$1/digests.txt"
  echo "{}" >"$1/registrar.openvex.json"
  (cd "$1" && sha256sum digests.txt registrar.openvex.json >SHA256SUMS)
}
echo key >"$work/cosign.key"
export COSIGN_PASSWORD=
# publish.sh with its flags: RELEASE_DIR REPOSITORY follow.
publish=(bash "$publish_sh" --key "$work/cosign.key" --cosign="$work/bin/cosign")

make_release "$work/private/release"
shtest_case "publish.sh takes a release directory of its own, and goes on" \
  passes_checks "${publish[@]}" "$work/private/release" registry.internal/storage
if [ "$(id -u)" -eq 0 ]; then
  make_release "$work/private/their-release" && chown -R 65534 "$work/private/their-release"
  shtest_case "publish.sh refuses a release directory another user owns" \
    refused "belongs to user 65534" "${publish[@]}" "$work/private/their-release" registry.internal/storage
else
  shtest_skip "publish.sh refuses a release directory another user owns" "needs root"
fi
make_release "$work/private/group-release" && chmod 0775 "$work/private/group-release"
shtest_case "publish.sh refuses a group-writable release directory" \
  refused "may be written by group or others" "${publish[@]}" "$work/private/group-release" registry.internal/storage
make_release "$work/open/release"
shtest_case "publish.sh refuses a release directory in a directory others may write" \
  refused "$work/open may be written by group or others" "${publish[@]}" "$work/open/release" registry.internal/storage

# digests.txt a link to a file of root's: its SHA256SUMS matches (the link's target is what is
# summed), so only the link itself gives it away. cosign.pub a link to another file of root's,
# which publish.sh would write.
make_release "$work/private/linked-digests"
mv "$work/private/linked-digests/digests.txt" "$work/private/digests-target"
ln -s "$work/private/digests-target" "$work/private/linked-digests/digests.txt"
shtest_case "publish.sh refuses a release directory whose digests.txt is a symbolic link" \
  refused "symbolic links (digests.txt" "${publish[@]}" "$work/private/linked-digests" registry.internal/storage
make_release "$work/private/linked-pub"
echo "root's file" >"$work/private/pub-target"
ln -s "$work/private/pub-target" "$work/private/linked-pub/cosign.pub"
shtest_case "publish.sh refuses a release directory whose cosign.pub is a symbolic link" \
  refused "symbolic links (cosign.pub" "${publish[@]}" "$work/private/linked-pub" registry.internal/storage
unchanged() { [ "$(cat "$work/private/pub-target")" = "root's file" ]; }
shtest_case "nothing was written through the link" unchanged
shtest_end

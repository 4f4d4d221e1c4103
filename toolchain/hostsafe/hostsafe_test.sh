#!/usr/bin/env bash
# hostsafe.sh's checks of directories, locks and removal, on directories this test makes. The
# cases about another user's directory and about mounts need root; without it they are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
source "$top/test/util/shtest.sh"
source "$here/hostsafe.sh"

if [ "$(id -u)" -eq 0 ] && [ -z "${NDR_HOSTSAFE_NS:-}" ]; then
  NDR_HOSTSAFE_NS=1 exec unshare --mount --propagation private -- bash "$0" "$@"
fi
work=$(mktemp -d /tmp/ndr-hostsafe-XXXXXX)
trap 'ndr_remove_tree "$work"' EXIT

refused() {  # refused PATTERN COMMAND...: COMMAND fails, and says PATTERN
  local out
  if out=$("${@:2}" 2>&1); then echo "accepted: $*"; return 1; fi
  grep -q -- "$1" <<<"$out" || { echo "said: $out"; return 1; }
}

mkdir -m 0700 "$work/good"
shtest_case "a directory of ours, writable by us alone, under /tmp is accepted" \
  ndr_check_private_dir "$work/good" "the test's directory"
mkdir -m 0770 "$work/group-writable"
shtest_case "a group-writable directory is refused, naming it and chmod go-w" \
  refused "$work/group-writable may be written by group or others.*chmod go-w" \
  ndr_check_private_dir "$work/group-writable" "the test's directory"
mkdir -m 0777 "$work/open" && mkdir -m 0700 "$work/open/inner"
shtest_case "a directory beneath one that others may write is refused, naming the parent" \
  refused "$work/open may be written" ndr_check_private_dir "$work/open/inner" "the test's directory"
chmod 1777 "$work/open"
if [ "$(id -u)" -eq 0 ]; then
  shtest_case "beneath a sticky directory of root's (as /tmp), our own directory is accepted" \
    ndr_check_private_dir "$work/open/inner" "the test's directory"
  mkdir -m 0700 "$work/open/theirs" && chown 65534 "$work/open/theirs"
  shtest_case "a directory another user owns is refused, naming the user" \
    refused "$work/open/theirs belongs to user 65534" \
    ndr_check_private_dir "$work/open/theirs" "the test's directory"
  shtest_case "making a directory that another user made first is refused" \
    refused "belongs to user 65534" ndr_make_private_dir "$work/open/theirs" "the output directory"
else
  shtest_skip "beneath a sticky directory of root's (as /tmp), our own directory is accepted" "needs root"
  shtest_skip "a directory another user owns is refused, naming the user" "needs root"
  shtest_skip "making a directory that another user made first is refused" "needs root"
fi
ln -s "$work/group-writable" "$work/link"
shtest_case "a link is judged by what it leads to" \
  refused "$work/group-writable may be written" ndr_check_private_dir "$work/link" "the test's directory"
shtest_case "ndr_make_private_dir refuses to make through a symbolic link" \
  refused "is a symbolic link" ndr_make_private_dir "$work/link" "the output directory"
made() { ndr_make_private_dir "$work/new" "the output directory" && [ "$(stat -c %a "$work/new")" = 700 ]; }
shtest_case "ndr_make_private_dir makes a new directory 0700" made
touch "$work/new/file"
shtest_case "ndr_make_private_dir refuses a directory that is not empty" \
  refused "is not empty" ndr_make_private_dir "$work/new" "the output directory"

lock_refused() {
  local fd
  ndr_lock fd "$work/lock" exclusive "the test's state" || return 1
  NDR_LOCK_NOWAIT=1 refused "the test's state is in use.*held by" \
    bash -c "source '$here/hostsafe.sh'; ndr_lock fd '$work/lock' shared \"the test's state\""
  local status=$?
  ndr_unlock "$fd"
  return "$status"
}
shtest_case "a lock held is refused to a second taker with NDR_LOCK_NOWAIT=1" lock_refused
shared_twice() {
  local a b
  ndr_lock a "$work/lock" shared "the test's state" &&
    NDR_LOCK_NOWAIT=1 bash -c "source '$here/hostsafe.sh'; ndr_lock fd '$work/lock' shared x" &&
    ndr_unlock "$a"
}
shtest_case "two shared holders do not exclude each other" shared_twice

if [ "$(id -u)" -eq 0 ]; then
  removal() {
    mkdir -p "$work/tree/a/b" "$work/victim"
    mount -t tmpfs ndr-test "$work/victim" && echo kept >"$work/victim/canary"
    mount --bind "$work/victim" "$work/tree/a/b"
    ndr_remove_tree "$work/tree" || return 1
    [ ! -e "$work/tree" ] && [ "$(cat "$work/victim/canary")" = kept ]
  }
  shtest_case "a tree is removed after what is mounted in it is unmounted, never through it" removal
else
  shtest_skip "a tree is removed after what is mounted in it is unmounted, never through it" "needs root"
fi
shtest_case "a symbolic link is never removed as a tree" \
  refused "is not a directory" ndr_remove_tree "$work/link"
shtest_end

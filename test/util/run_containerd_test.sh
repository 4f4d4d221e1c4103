#!/usr/bin/env bash
# test/util/run-containerd.sh removes what a private containerd left under /run/containerd and
# nothing else: played on a scratch directory standing in for it, with each kind of entry.
set -uo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
root=$(mktemp -d /tmp/ndr-rct-XXXXXX)
listener=
trap '[[ -n $listener ]] && kill "$listener" 2>/dev/null; rm -rf "$root"' EXIT
export NDR_RUN_CONTAINERD=$root/run-containerd
source test/util/run-containerd.sh

bind() {  # bind PATH [listen]: a unix socket file at PATH; with listen, one that stays listened on
  python3 - "$@" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
if len(sys.argv) > 2:
    s.listen(1)
    time.sleep(600)
PY
  local pid=$!
  for _ in $(seq 100); do [[ -S $1 ]] && break; sleep 0.05; done
  if [[ ${2:-} == listen ]]; then
    for _ in $(seq 100); do grep -q " $1\$" /proc/net/unix && break; sleep 0.05; done
    listener=$pid
  else
    wait "$pid"
  fi
}

failures=0
expect() {  # expect present|absent PATH
  local there=absent
  [[ -e $2 || -S $2 ]] && there=present
  if [[ $there != "$1" ]]; then
    echo "FAIL: $2 is $there, expected $1"
    failures=$((failures + 1))
  fi
}

# Before: another containerd's socket (no longer listened on) and directory, and an empty one.
mkdir -p "$NDR_RUN_CONTAINERD/s" "$NDR_RUN_CONTAINERD/runc/theirs" "$NDR_RUN_CONTAINERD/fifo"
bind "$NDR_RUN_CONTAINERD/s/theirs-old"
ndr_run_containerd_note "$root/before"

# The run: its shims' sockets, one of them still listened on (a shim of a containerd that runs),
# runc's and ctr's directories, and a file this helper does not know.
bind "$NDR_RUN_CONTAINERD/s/ours-dead"
bind "$NDR_RUN_CONTAINERD/s/live" listen
mkdir -p "$NDR_RUN_CONTAINERD/runc/k8s.io" "$NDR_RUN_CONTAINERD/fifo/123" "$NDR_RUN_CONTAINERD/kept"
touch "$NDR_RUN_CONTAINERD/kept/file"

ndr_run_containerd_restore "$root/before"
expect absent "$NDR_RUN_CONTAINERD/s/ours-dead"
expect absent "$NDR_RUN_CONTAINERD/runc/k8s.io"
expect absent "$NDR_RUN_CONTAINERD/fifo/123"
expect present "$NDR_RUN_CONTAINERD/s/live"
expect present "$NDR_RUN_CONTAINERD/s/theirs-old"
expect present "$NDR_RUN_CONTAINERD/runc/theirs"
expect present "$NDR_RUN_CONTAINERD/fifo"
expect present "$NDR_RUN_CONTAINERD/kept/file"

# A machine that had no /run/containerd: once nothing listens, it is gone altogether.
kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null
listener=
rm -rf "$NDR_RUN_CONTAINERD"
ndr_run_containerd_note "$root/before-empty"
mkdir -p "$NDR_RUN_CONTAINERD/s" "$NDR_RUN_CONTAINERD/runc/ndr"
bind "$NDR_RUN_CONTAINERD/s/ours"
ndr_run_containerd_restore "$root/before-empty"
expect absent "$NDR_RUN_CONTAINERD"

# Without a note, nothing is touched.
mkdir -p "$NDR_RUN_CONTAINERD/s"
ndr_run_containerd_restore "$root/no-such-note"
expect present "$NDR_RUN_CONTAINERD/s"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "PASS: run-containerd.sh removes what the run left under /run/containerd, and only that"

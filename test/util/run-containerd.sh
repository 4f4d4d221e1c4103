# Sourced by the scripts that run a private containerd (images/release-check.sh,
# test/e2e/real-node.sh). Whatever state directory it is given, containerd 1.6 puts each shim's
# socket under /run/containerd/s (SocketAddress in pkg/shim/util_unix.go joins
# defaults.DefaultStateDir, v1.6.20), and ctr puts a task's FIFOs under /run/containerd/fifo and
# runc's state under /run/containerd/runc/NAMESPACE unless told otherwise (--fifo-dir,
# --runc-root). So such a script notes what /run/containerd holds before it starts, and
# afterwards removes what its containerd made there and nothing else.

# The directory in question; a test points it elsewhere.
NDR_RUN_CONTAINERD=${NDR_RUN_CONTAINERD:-/run/containerd}

# ndr_run_containerd_note FILE: what /run/containerd holds now.
ndr_run_containerd_note() {
  find "$NDR_RUN_CONTAINERD" 2>/dev/null | sort >"$1"
}

# ndr_run_containerd_restore FILE: removes what /run/containerd gained since FILE was noted:
# shim sockets no process listens on (a socket still listened on is a running containerd's)
# and directories left empty. Without FILE, nothing.
ndr_run_containerd_restore() {
  local before=$1 listening path
  [[ -f $before ]] || return 0
  listening=$(awk 'NR > 1 && $8 != "" {print $8}' /proc/net/unix 2>/dev/null)
  find "$NDR_RUN_CONTAINERD" -type s 2>/dev/null | while read -r path; do
    grep -qxF "$path" "$before" && continue
    grep -qxF "$path" <<<"$listening" && continue
    rm -f "$path"
  done
  # Deepest first; rmdir leaves a directory that still holds something.
  find "$NDR_RUN_CONTAINERD" -depth -type d 2>/dev/null | while read -r path; do
    grep -qxF "$path" "$before" || rmdir "$path" 2>/dev/null || true
  done
}

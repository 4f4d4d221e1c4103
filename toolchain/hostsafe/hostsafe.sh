# What a script that runs as root needs to be a guest on the host (docs/host-safety.md): locks
# held for an operation's whole life and inherited by what it starts, removal that never crosses
# a mount point, and directories that only root (or the user running the script) can change.
# Sourced; every function returns non-zero with a message on stderr that names what was wrong
# and what to do.

# Takes a flock(2) lock on FILE (made 0600 when missing) and leaves the open descriptor's number
# in the variable VAR: the lock lasts while that descriptor is open, in this shell and in every
# process it starts, and ends with the last of them, however they end (no stale lock after a
# SIGKILL). MODE is exclusive or shared. A lock held by someone else is waited for, after one
# line naming the holders, unless NDR_LOCK_NOWAIT=1, when that is an error.
#   ndr_lock VAR FILE exclusive|shared "what the lock guards"
ndr_lock() {
  # The locals end in _ so that no caller's VAR is one of them.
  local var_=$1 file_=$2 mode_=$3 what_=$4 flag_ fd_
  case $mode_ in
    exclusive) flag_=-x ;;
    shared) flag_=-s ;;
    *) echo "ndr_lock: mode must be exclusive or shared, not '$mode_'" >&2; return 2 ;;
  esac
  if [ -L "$file_" ]; then
    echo "error: the lock file $file_ is a symbolic link; remove it (only root should be able to" \
      "write $(dirname "$file_"))" >&2
    return 1
  fi
  (umask 077 && : >>"$file_") || { echo "error: cannot make the lock file $file_" >&2; return 1; }
  exec {fd_}<"$file_" || return 1
  if ! flock -n "$flag_" "$fd_"; then
    if [ "${NDR_LOCK_NOWAIT:-0}" = 1 ]; then
      echo "error: $what_ is in use ($file_); held by:" >&2
      { ndr_lock_holders "$file_" | sed 's/^/    /' >&2; } {fd_}<&-
      echo "Wait for that run to end, or stop it, and try again." >&2
      exec {fd_}<&-
      return 1
    fi
    echo "==> waiting for $what_ ($file_), held by:" >&2
    # (Not through the descriptor: the listing would name itself.)
    { ndr_lock_holders "$file_" | sed 's/^/    /' >&2; } {fd_}<&-
    flock "$flag_" "$fd_" || { exec {fd_}<&-; return 1; }
  fi
  printf -v "$var_" '%s' "$fd_"
}

# Releases what ndr_lock took in this shell (the processes it started keep theirs).
#   ndr_unlock FD
ndr_unlock() { [[ $1 =~ ^[0-9]+$ ]] && eval "exec $1<&-"; }

# The processes that have FILE open, and so hold its lock or wait for it, a line each: pid, since
# when, command line (its first 160 characters); the first ten. A lock belongs to the open file, which every process started
# under it shares: /proc/locks names only the process that took it, which may have ended.
ndr_lock_holders() {
  local file=$1 pid count=0 fd since
  local -A seen=()
  while IFS= read -r fd; do
    pid=${fd#/proc/}
    pid=${pid%%/*}
    [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] || [ -n "${seen[$pid]:-}" ] && continue
    seen[$pid]=1
    since=$(ps -o lstart= -p "$pid" 2>/dev/null) || continue  # ended meanwhile (or was find)
    count=$((count + 1))
    [ "$count" -le 10 ] || continue
    echo "pid $pid, since $since:" \
      "$({ tr '\0\n' '  ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-160)"
  done < <(find -L /proc/[0-9]*/fd -maxdepth 1 -samefile "$file" 2>/dev/null)
  [ "$count" -le 10 ] || echo "and $((count - 10)) more"
  [ "$count" -gt 0 ] || echo "(no process here: one in another mount namespace, or one that just ended)"
}

# The mount points at DIR or beneath it in this mount namespace, deepest first.
ndr_mounts_under() {
  local dir=${1%/} target
  while IFS= read -r target; do
    case $target in
      "$dir" | "$dir"/*) printf '%s\n' "$target" ;;
    esac
  done < <(findmnt -l -n -o TARGET) | awk '{print length($0) "\t" $0}' | sort -rn | cut -f2-
}

# Removes the directory tree DIR without ever crossing a mount point: what is mounted beneath it
# is unmounted first (deepest first, never lazily), and a tree that still holds a mount is
# refused, naming it. DIR itself must not be a symbolic link.
#   ndr_remove_tree DIR
ndr_remove_tree() {
  local dir=$1 mount left
  [ -e "$dir" ] || [ -L "$dir" ] || return 0
  if [ -L "$dir" ] || [ ! -d "$dir" ]; then
    echo "error: refusing to remove $dir: it is not a directory (a symbolic link?)" >&2
    return 1
  fi
  dir=$(cd "$dir" && pwd -P) || return 1
  while IFS= read -r mount; do
    umount -- "$mount" 2>/dev/null || true
  done < <(ndr_mounts_under "$dir")
  left=$(ndr_mounts_under "$dir")
  if [ -n "$left" ]; then
    echo "error: refusing to remove $dir: these are still mounted in it and could not be" \
      "unmounted:" >&2
    printf '    %s\n' $left >&2
    echo "Unmount them (findmnt -R $dir), then run this again." >&2
    return 1
  fi
  rm -rf --one-file-system -- "$dir"
}

# Succeeds when DIR and every directory above it can be changed by no one but root and the
# user running this (owned by one of them, not writable by group or others; a sticky directory
# owned by root, such as /tmp, may be writable by all, as then only its entry's owner can replace
# that entry). Otherwise names the directory at fault and the fix. Symbolic links are resolved
# first: a link is as safe as the directory that holds it, which is checked too. UID, if given,
# is trusted as well (the user a script runs for, through sudo).
#   ndr_check_private_dir DIR "what DIR is for" [UID]
ndr_check_private_dir() {
  local dir=$1 what=$2 also=${3:-0} real path="" part owner mode me
  me=$(id -u)
  real=$(cd "$dir" 2>/dev/null && pwd -P) || {
    echo "error: $what $dir is not a directory that can be entered" >&2
    return 1
  }
  local parts=()
  IFS=/ read -r -a parts <<<"${real#/}"
  for part in "" "${parts[@]}"; do
    path=${path%/}/$part
    read -r owner mode < <(stat -c '%u %a' "$path") || return 1
    mode=$((8#$mode))
    if [ "$owner" != 0 ] && [ "$owner" != "$me" ] && [ "$owner" != "$also" ]; then
      echo "error: $what $dir is not safe: $path belongs to user $owner, who could replace what" \
        "is in it; use a directory that root owns (or let the script make its own)" >&2
      return 1
    fi
    if [ $((mode & 8#022)) -ne 0 ] && ! { [ "$owner" = 0 ] && [ $((mode & 8#1000)) -ne 0 ] &&
        [ "$path" != "$real" ]; }; then
      echo "error: $what $dir is not safe: $path may be written by group or others (mode" \
        "$(printf '%o' "$mode")); run chmod go-w $path, or use another directory" >&2
      return 1
    fi
  done
}

# Makes DIR (its parent must exist and pass ndr_check_private_dir), mode 0700 by default, or
# accepts it if it exists already, is empty, and passes the check itself. Never mkdir -p: a
# directory someone else made first is refused, not used.
#   ndr_make_private_dir DIR "what DIR is for" [MODE]
ndr_make_private_dir() {
  local dir=$1 what=$2 mode=${3:-0700}
  if [ -L "$dir" ]; then
    echo "error: $what $dir is a symbolic link; name the directory itself" >&2
    return 1
  fi
  if mkdir -m "$mode" -- "$dir" 2>/dev/null; then
    ndr_check_private_dir "$dir" "$what" || { rmdir -- "$dir"; return 1; }
    return 0
  fi
  if [ ! -d "$dir" ]; then
    echo "error: cannot make $what $dir: $(mkdir -- "$dir" 2>&1 | sed 's/^mkdir: //')" >&2
    return 1
  fi
  ndr_check_private_dir "$dir" "$what" || return 1
  if [ -n "$(ls -A -- "$dir")" ]; then
    echo "error: $what $dir is not empty; name a new or empty directory" >&2
    return 1
  fi
}

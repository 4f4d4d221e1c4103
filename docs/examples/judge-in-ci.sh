#!/usr/bin/env bash
# Judges a CSI node plugin in its own container with the judge's container beside it: both on one
# kubelet root directory that they share as kubelet and a plugin share /var/lib/kubelet on a node
# (a mount point with shared propagation, bound into each container rshared), privileged, with the
# host's /dev. Any CI with docker or podman and root can run it; nothing else is needed on the
# machine, and nothing of the run is left on it.
#
#   sudo JUDGE_IMAGE=... DRIVER_IMAGE=... DRIVER_ARGS="..." bash judge-in-ci.sh
#
# Environment:
#   JUDGE_IMAGE   the judge's image (kubeletclient: the judge and the registrar)       required
#   DRIVER_IMAGE  the driver's image                                                   required
#   DRIVER_ARGS   the driver's arguments, split on spaces; it must serve its CSI socket at
#                 /csi/csi.sock (e.g. --endpoint=unix:///csi/csi.sock) and name its node by
#                 NODE_NAME where it takes a node ID
#   DRIVER_ENV    environment of the driver, KEY=VALUE separated by spaces
#   JUDGE_ARGS    more `kubeletclient sanity` flags, split on spaces (e.g.
#                 --objects=/in/objects.yaml --service-account-key-file=/in/sa.key)
#   JUDGE_ENV     environment of the judge, KEY=VALUE separated by spaces
#   INPUT_DIR     a directory mounted read-only at /in in the judge: objects, keys, a secrets file
#   RESULTS_DIR   where sanity.txt and junit.xml go (default: ./judge-results)
#   NODE_NAME     the made-up node's name (default: ci-node)
#   ENGINE        docker or podman (default: docker if there is one, else podman)
#   ENGINE_ARGS   more `run` flags for both containers, split on spaces (e.g. --ulimit ...)
#
# The exit status is the judge's: 0 when nothing failed, 1 on a FAIL or bad input.
#
# The root directory is made here, under a new directory in /tmp, never /var/lib/kubelet; the
# judge refuses a root directory that a running kubelet uses (it sees the host's processes:
# --pid=host). The containers have no network. At the end, however the judge ended, both
# containers go, then whatever a killed run left under the root directory (mounts that propagated
# to the host: the driver's, and the judge's own, which a judge killed with its container could
# not undo), the loop devices over files in the run's directory, and the directory.
set -euo pipefail
: "${JUDGE_IMAGE:?give the judge's image}" "${DRIVER_IMAGE:?give the driver's image}"
if [ "$(id -u)" -ne 0 ]; then
  echo "judge-in-ci.sh: run as root: the judge mounts and makes loop devices, as kubelet does" >&2
  exit 1
fi
engine=${ENGINE:-$(command -v docker >/dev/null 2>&1 && echo docker || echo podman)}
results=${RESULTS_DIR:-judge-results}
node=${NODE_NAME:-ci-node}
work=$(mktemp -d /tmp/judge.XXXXXX)
root=$work/kubelet
mkdir -p "$root" "$work/csi" "$work/out" "$results"
results=$(cd "$results" && pwd)
driver=judge-ci-driver-${work##*.} judge=judge-ci-judge-${work##*.}

teardown() {
  local rc=$?
  local name file loop
  for name in "$judge" "$driver"; do "$engine" rm -f "$name" >/dev/null 2>&1 || true; done
  # Everything still mounted at or below the root directory.
  while mountpoint -q "$root" || grep -q " ${root}/" /proc/self/mountinfo; do
    umount -R "$root" 2>/dev/null || umount -R -l "$root" 2>/dev/null || break
  done
  # Loop devices over the run's files. Found by the file (losetup -j matches device and inode): a
  # device attached in a container names its file by the container's path.
  while IFS= read -r -d '' file; do
    losetup -j "$file" -O NAME -n 2>/dev/null | while read -r loop; do losetup -d "$loop" || true; done
  done < <(find "$work" -xdev -type f -print0 2>/dev/null)
  cp -f "$work/out/junit.xml" "$results/" 2>/dev/null || true
  rm -rf "$work"
  exit "$rc"
}
trap teardown EXIT

# As kubelet makes its root directory at start (kubelet.go setupDataDirs): a shared mount point.
mount --bind "$root" "$root"
mount --make-shared "$root"
common=(--privileged --network=none -v "$root:$root:rshared" -v "$work/csi:/csi" -v /dev:/dev)
# shellcheck disable=SC2206  # split on spaces, as documented
common+=(${ENGINE_ARGS:-})
env_flags() { local kv; for kv in $1; do printf -- '-e\n%s\n' "$kv"; done; }
mapfile -t driver_env < <(env_flags "${DRIVER_ENV:-}")
mapfile -t judge_env < <(env_flags "${JUDGE_ENV:-}")
# shellcheck disable=SC2086  # the arguments are split on spaces, as documented
"$engine" run -d --name "$driver" "${common[@]}" "${driver_env[@]}" "$DRIVER_IMAGE" \
  ${DRIVER_ARGS:-} >/dev/null
for _ in $(seq 1 600); do
  [ -S "$work/csi/csi.sock" ] && break
  if [ "$("$engine" inspect -f '{{.State.Running}}' "$driver")" != true ]; then break; fi
  sleep 0.1
done
if [ ! -S "$work/csi/csi.sock" ]; then
  echo "judge-in-ci.sh: the driver serves no socket at /csi/csi.sock; its log:" >&2
  "$engine" logs "$driver" >&2 || true
  exit 1
fi
inputs=()
[ -n "${INPUT_DIR:-}" ] && inputs=(-v "$(cd "$INPUT_DIR" && pwd):/in:ro")
set +e
# shellcheck disable=SC2086
"$engine" run --name "$judge" --pid=host "${common[@]}" "${judge_env[@]}" "${inputs[@]}" \
  -v "$work/out:/out" "$JUDGE_IMAGE" sanity --csi-address=unix:///csi/csi.sock \
  --root-dir="$root" --node-name="$node" --junit=/out/junit.xml ${JUDGE_ARGS:-} \
  2>&1 | tee "$results/sanity.txt"
status=${PIPESTATUS[0]}
set -e
exit "$status"

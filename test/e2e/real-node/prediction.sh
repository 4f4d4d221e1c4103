# What the real kubelet sent the sample driver, against what kubeletclient predicts it sends
# (test/e2e/real-node.sh's check "kubeletclient-prediction"). Sourced after checks.sh.
#
# The DaemonSet's driver runs with --record (one JSON line per request it receives, in the shape
# of `kubeletclient publish`'s calls). For each pod of checks 2 and 3 (a "case"), the checks mark
# where in that record the pod's publish and unpublish begin and end (record_mark) and save, while
# the pod runs, the pod and the objects kubelet read as the API server holds them, and the files
# kubelet wrote for its CSI volumes (record_capture). Afterwards each case is replayed: the same
# pod and objects through `kubeletclient publish` and `unpublish`, against the same sample driver
# and our registrar with the same flags, in a scratch root; compare_calls.py compares the
# requests and the files.

# Where the driver writes (its /csi is this host directory, deploy/daemonset.yaml's socket-dir).
RN_RECORD_FILE=/var/lib/kubelet/plugins/$DRIVER/calls.jsonl

record_lines() { if [[ -f $RN_RECORD_FILE ]]; then wc -l <"$RN_RECORD_FILE"; else echo 0; fi; }

# record_mark CASE NAME: remembers the record's length now as CASE's NAME (e.g. publish-from).
record_mark() {
  mkdir -p "$RN_RECORD_DIR/$1"
  echo "$2 $(record_lines)" >>"$RN_RECORD_DIR/$1/marks"
}
record_mark_of() { awk -v n="$2" '$1 == n {print $2}' "$RN_RECORD_DIR/$1/marks" 2>/dev/null | tail -1; }

# Whether the record, after line FROM, has a METHOD request whose JSON contains TEXT.
record_has_since() {  # record_has_since FROM METHOD TEXT
  tail -n +"$(($1 + 1))" "$RN_RECORD_FILE" 2>/dev/null | grep "\"method\":\"$2\"" | grep -qF "$3"
}

# record_capture CASE POD [CLAIM]: the pod (namespace default), its CSIDriver, its claim, PV and
# VolumeAttachments as the API server has them, and kubelet's vol_data.json files of the pod.
record_capture() {
  local dir=$RN_RECORD_DIR/$1 pod=$2 claim=${3:-} uid pv p
  mkdir -p "$dir/objects" "$dir/real-files"
  rn_kubectl -n default get pod "$pod" -o yaml >"$dir/pod.yaml" &&
    rn_kubectl get csidriver "$DRIVER" -o yaml >"$dir/objects/csidriver.yaml" || return 1
  if [[ -n $claim ]]; then
    pv=$(rn_kubectl -n default get pvc "$claim" -o 'jsonpath={.spec.volumeName}')
    rn_kubectl -n default get pvc "$claim" -o yaml >"$dir/objects/claim.yaml" &&
      rn_kubectl get pv "$pv" -o yaml >"$dir/objects/pv.yaml" &&
      rn_kubectl get volumeattachments -o yaml >"$dir/objects/volumeattachments.yaml" || return 1
  fi
  uid=$(rn_kubectl -n default get pod "$pod" -o 'jsonpath={.metadata.uid}')
  # Only this pod runs a volume of the driver now: every vol_data.json under the CSI plugin's
  # directories is its.
  (cd /var/lib/kubelet && find "pods/$uid/volumes/kubernetes.io~csi" plugins/kubernetes.io/csi \
    -name vol_data.json 2>/dev/null) | while read -r p; do
    mkdir -p "$dir/real-files/$(dirname "$p")"
    cp "/var/lib/kubelet/$p" "$dir/real-files/$p"
  done
  echo "$uid" >"$dir/uid"
}

# start_scratch_plugin LOG_DIR SCRATCH [DRIVER FLAG...]: the sample driver with the DaemonSet's
# flags (and these) and our registrar with the DaemonSet's --requires-publish-pod, registering in
# SCRATCH/reg (kubeletclient, like kubelet, does not ask it: CSIRegistration is an opt-in);
# stop_scratch_plugin ends both.
start_scratch_plugin() {
  local dir=$1 scratch=$2
  shift 2
  mkdir -p "$scratch/reg" "$scratch/csi"
  "$RN_TOOLS/sample-csi-driver" --endpoint="unix://$scratch/csi/csi.sock" --drivername="$DRIVER" \
    --nodeid="$RN_NODE" "${RN_DRIVER_ARGS[@]}" "$@" >"$dir/driver.log" 2>&1 &
  SCRATCH_PIDS=($!)
  "$RN_TOOLS/csi-node-driver-registrar" --csi-address="$scratch/csi/csi.sock" \
    --kubelet-registration-path="$scratch/csi/csi.sock" --plugin-registration-path="$scratch/reg" \
    --requires-publish-pod >"$dir/registrar.log" 2>&1 &
  SCRATCH_PIDS+=($!)
}
stop_scratch_plugin() {
  kill "${SCRATCH_PIDS[@]}" 2>/dev/null
  wait "${SCRATCH_PIDS[@]}" 2>/dev/null
}

# predict_case CASE [DRIVER FLAG...]: kubeletclient publish and unpublish of CASE's pod against
# the sample driver with the DaemonSet's flags (and these), in a scratch root; then the
# comparison. Prints compare_calls.py's lines; fails on an unexplained difference.
predict_case() {
  local case=$1 dir=$RN_RECORD_DIR/$1 scratch=$RN_WORK/p/$1
  shift
  local driver_flags=("$@")
  local from mid to
  from=$(record_mark_of "$case" publish-from) mid=$(record_mark_of "$case" publish-to)
  to=$(record_mark_of "$case" unpublish-to)
  if [[ -z $from || -z $mid || -z $to || ! -f $dir/pod.yaml ]]; then
    echo "$case: not compared: its check did not get the pod through publish and unpublish"
    return 1
  fi
  local status=0
  rm -rf "$scratch"
  mkdir -p "$scratch/root"
  start_scratch_plugin "$dir" "$scratch" "${driver_flags[@]}"
  if ! poll 60 test -S "$scratch/reg/$DRIVER-reg.sock"; then
    echo "$case: not compared: the scratch registrar did not register (logs: $dir/*.log)"
    status=1
  else
    local common=(--pod="$dir/pod.yaml" --root-dir="$scratch/root" --plugin-registry-dir="$scratch/reg"
      --node-name="$RN_NODE" --block-host-ops=skip)
    "$RN_TOOLS/kubeletclient" publish "${common[@]}" --objects="$dir/objects" \
      --allowed-inline-drivers="$DRIVER" >"$dir/predicted-publish.json" 2>"$dir/predicted-publish.err" ||
      echo "$case: kubeletclient publish failed: $(tail -1 "$dir/predicted-publish.err")"
    mkdir -p "$dir/predicted-files"
    (cd "$scratch/root" && find pods plugins -name vol_data.json 2>/dev/null) | while read -r p; do
      mkdir -p "$dir/predicted-files/$(dirname "$p")"
      cp "$scratch/root/$p" "$dir/predicted-files/$p"
    done
    "$RN_TOOLS/kubeletclient" unpublish "${common[@]}" >"$dir/predicted-unpublish.json" \
      2>"$dir/predicted-unpublish.err" ||
      echo "$case: kubeletclient unpublish failed: $(tail -1 "$dir/predicted-unpublish.err")"
    local compare=$here/real-node/compare_calls.py
    python3 "$compare" calls "$case" publish "$RN_RECORD_DIR/calls.jsonl" "$from" "$mid" \
      "$dir/predicted-publish.json" "$scratch/root" || status=1
    python3 "$compare" calls "$case" unpublish "$RN_RECORD_DIR/calls.jsonl" "$mid" "$to" \
      "$dir/predicted-unpublish.json" "$scratch/root" || status=1
    python3 "$compare" files "$case" "$dir/real-files" "$dir/predicted-files" "$scratch/root" || status=1
  fi
  stop_scratch_plugin
  return $status
}

# predict_node: what `kubeletclient watch` makes of the driver (the DaemonSet's flags) against
# the CSINode and Node the real kubelet wrote.
predict_node() {
  local dir=$RN_RECORD_DIR/node scratch=$RN_WORK/p/node status=0
  rm -rf "$dir" "$scratch"
  mkdir -p "$dir"
  rn_kubectl get csinode "$RN_NODE" -o json >"$dir/real-csinode.json" &&
    rn_kubectl get node "$RN_NODE" -o json >"$dir/real-node.json" || {
    echo "node: not compared: the API server did not give CSINode and Node $RN_NODE"
    return 1
  }
  start_scratch_plugin "$dir" "$scratch"
  "$RN_TOOLS/kubeletclient" watch --plugin-registry-dir="$scratch/reg" \
    --node-status-file="$dir/predicted-status.json" --node-name="$RN_NODE" >"$dir/watch.log" 2>&1 &
  local watch_pid=$!
  if poll 60 grep -q "\"$DRIVER\"" "$dir/predicted-status.json"; then
    python3 "$here/real-node/compare_calls.py" node "$dir/real-csinode.json" "$dir/real-node.json" \
      "$dir/predicted-status.json" "$DRIVER" || status=1
  else
    echo "node: not compared: kubeletclient watch did not register the scratch driver (logs: $dir/*.log)"
    status=1
  fi
  kill "$watch_pid" 2>/dev/null
  wait "$watch_pid" 2>/dev/null
  stop_scratch_plugin
  return $status
}

# The check: every case of checks 2 and 3, each through publish and unpublish; and the node.
check_prediction() {
  local name=kubeletclient-prediction out status=0 case
  # The record as it is now (the driver goes on appending, and the teardown removes it).
  cp "$RN_RECORD_FILE" "$RN_RECORD_DIR/calls.jsonl" 2>/dev/null
  : >"$RN_RECORD_DIR/comparison.txt"
  for case in inline-info inline-no-info persistent; do
    local flags=()
    [[ $case == persistent ]] && flags=(--stage-unstage)
    predict_case "$case" "${flags[@]}" >>"$RN_RECORD_DIR/comparison.txt" 2>&1 || status=1
  done
  predict_node >>"$RN_RECORD_DIR/comparison.txt" 2>&1 || status=1
  sed 's/^/  /' "$RN_RECORD_DIR/comparison.txt" >&2
  local same different
  same=$(grep -c ': SAME' "$RN_RECORD_DIR/comparison.txt")
  different=$(grep -c ': DIFFERENT\|not compared\|failed' "$RN_RECORD_DIR/comparison.txt")
  if ((status == 0 && different == 0)); then
    result PASS $name "3 pods through publish and unpublish, and the node: $same comparisons of requests, kubelet's files, CSINode, annotation and labels the same as kubeletclient's; $RN_RECORD_DIR/comparison.txt"
  else
    result FAIL $name "$different differences or failures, $same the same: $RN_RECORD_DIR/comparison.txt (shown above)"
  fi
}

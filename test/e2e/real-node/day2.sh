# The day-two scenarios of test/e2e/real-node.sh (--day2): what an operator does to a node that
# already serves volumes, with the Go registrar and with ours side by side. Sourced after the node
# is up; uses rn_kubectl, rn_ctr, result, poll and the RN_* settings of real-node.sh and
# cluster.sh.
#
# Two drivers run on the node, each the sample driver under its own name with its own registrar:
# driver a with the Go registrar (D2_GO_IMAGE), driver b with ours. Each has a pod with a
# persistent volume (a static PV, staged and published by kubelet) and a pod with an inline
# volume; each pod wrote a marker file into its volume when it started. Every scenario acts on
# both drivers at once where the action is the node's (kubelet restarted or upgraded, a reboot, the
# API server away), so both registrars meet the very same events, or on one driver and then the
# other where the action is the operator's on one DaemonSet. For each registrar it writes one row:
#   - what kubelet logged for the driver (registrations, deregistrations, failed registrations);
#   - every change to the node's CSINode entry of the driver, from a watch (not sampled);
#   - whether each running pod still reads the marker it wrote (its volume was kept);
#   - whether a pod created during the change ran with its volume, and when;
#   - when the driver was registered again, and how often the registrar's container restarted.

D2_ALL=(kubelet drivers swap locked-down api-away brownout rollback crash reboot)
D2_DIR=$RN_WORK/day2
D2_ROWS=$D2_DIR/rows.jsonl
D2_WATCH=$D2_DIR/csinode-watch.txt
D2_POD_DEADLINE=180
declare -gA D2_IMAGE_OF=()       # letter -> registrar image the DaemonSet runs now
declare -gA D2_MARKER=()         # pod -> marker it wrote
declare -ga D2_ROWS_NOW=()       # the rows of the scenario running
# Every action runs in this shell, never in a command substitution: what it changes (the
# components' process IDs, the images the DaemonSets run) must outlive it.

d2_driver() { echo "$1.day2.csi.example.com"; }
d2_who() { case ${D2_IMAGE_OF[$1]} in "$D2_GO_IMAGE") echo "Go $RN_GO_REGISTRAR_TAG" ;; *) echo ours ;; esac; }
d2_obs() { python3 "$here/real-node/day2_observe.py" "$@"; }
d2_now() { date +%s.%N; }

# The securityContext of the registrar containers (JSON). deploy/ ships the first.
D2_LOCKED='{"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}'
D2_LOCKED_NONROOT='{"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532}'
D2_PLAIN='{}'

# A driver's CSIDriver, DaemonSet and static PV with its claim.
d2_manifests() {  # d2_manifests LETTER REGISTRAR_IMAGE SECURITY_CONTEXT_JSON
  local l=$1 image=$2 sc=$3 driver
  driver=$(d2_driver "$l")
  cat <<EOF
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $driver}
spec:
  attachRequired: false
  # With pod information kubelet marks an inline volume csi.storage.k8s.io/ephemeral, which tells
  # a driver that stages (as this one does, for the PV) that this volume is never staged.
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: day2-$l, namespace: kube-system}
spec:
  selector: {matchLabels: {app: day2-$l}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app: day2-$l}}
    spec:
      priorityClassName: system-node-critical
      automountServiceAccountToken: false
      containers:
      - name: sample-csi-driver
        image: $D2_DRIVER_IMAGE
        args: [--endpoint=unix:///csi/csi.sock, --drivername=$driver, "--nodeid=\$(KUBE_NODE_NAME)", --stage-unstage]
        env: [{name: KUBE_NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        volumeMounts:
        - {name: socket-dir, mountPath: /csi}
        - {name: pods-dir, mountPath: /var/lib/kubelet/pods}
        - {name: staging-dir, mountPath: /var/lib/kubelet/plugins/kubernetes.io/csi}
      - name: csi-node-driver-registrar
        image: $image
        args: [--csi-address=/csi/csi.sock, --kubelet-registration-path=/var/lib/kubelet/plugins/$driver/csi.sock, --http-endpoint=:9809, --v=2]
        ports: [{name: healthz, containerPort: 9809, protocol: TCP}]
        livenessProbe:
          httpGet: {path: /healthz, port: healthz}
          initialDelaySeconds: 5
          periodSeconds: 10
          timeoutSeconds: 3
          failureThreshold: 5
        securityContext: $sc
        volumeMounts:
        - {name: socket-dir, mountPath: /csi}
        - {name: registration-dir, mountPath: /registration}
      volumes:
      - {name: socket-dir, hostPath: {path: /var/lib/kubelet/plugins/$driver, type: DirectoryOrCreate}}
      - {name: registration-dir, hostPath: {path: /var/lib/kubelet/plugins_registry, type: Directory}}
      - {name: pods-dir, hostPath: {path: /var/lib/kubelet/pods, type: Directory}}
      - {name: staging-dir, hostPath: {path: /var/lib/kubelet/plugins/kubernetes.io/csi, type: DirectoryOrCreate}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: day2-$l}
spec:
  capacity: {storage: 1Mi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: default, name: day2-$l}
  csi: {driver: $driver, volumeHandle: day2-$l-volume}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: day2-$l, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: day2-$l
  resources: {requests: {storage: 1Mi}}
EOF
}

# A pod that writes a marker into its volume once (the first time it starts) and then sleeps.
d2_pod() {  # d2_pod NAME LETTER pv|inline
  local volume
  if [[ $3 == pv ]]; then
    volume="persistentVolumeClaim: {claimName: day2-$2}"
  else
    volume="csi: {driver: $(d2_driver "$2")}"
  fi
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default, labels: {day2: "$2"}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: $RN_BUSYBOX_IMAGE
    command: [sh, -c, 'test -s /data/marker || echo "\$(hostname) \$(date +%s)" >/data/marker; exec sleep 2147483647']
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    $volume
EOF
}

d2_marker_of() { rn_kubectl -n default exec "$1" -- cat /data/marker 2>/dev/null; }
d2_pod_has_marker() { [[ -n $(d2_marker_of "$1") ]]; }

# Starts a pod and waits for it to run and hold its marker.
d2_start_pod() {  # d2_start_pod NAME LETTER pv|inline
  d2_pod "$@" | rn_kubectl apply -f - >&2 || return 1
  poll "$D2_POD_DEADLINE" d2_pod_has_marker "$1"
}

# The pod's UID, and its app container's ID and restart count: "UID CONTAINER_ID RESTARTS".
d2_pod_identity() {  # d2_pod_identity POD
  rn_kubectl -n default get pod "$1" -o json 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)
for c in p["status"].get("containerStatuses", []):
    if c["name"] == "app":
        print(p["metadata"]["uid"], c.get("containerID", "-"), c.get("restartCount", 0))' 2>/dev/null
}
declare -gA D2_IDENTITY=()

# How many of the running pods of LETTER still read the marker they wrote, in the same container
# that wrote it (an app container restarted on a volume mounted again would read it too): "K/N".
# With D2_PODS_RESTARTED=1 (a reboot restarts every container) the same pod object is enough.
d2_marker_is() { [[ $(d2_marker_of "$1") == "$2" ]]; }
# The API server knows the pod's app container: its ID is reported (kubelet reports a started
# container a moment after `kubectl exec` into it already works).
d2_identity_known() { [[ $(d2_pod_identity "$1") =~ ^[^\ ]+\ [a-z]+://[^\ ]+\ [0-9]+$ ]]; }
d2_pods_kept() {  # d2_pods_kept LETTER
  local pod kept=0 all=0 now
  for pod in day2-$1-pv day2-$1-inline; do
    all=$((all + 1))
    # Polled, each read: after a reboot kubelet mounts the pods' volumes again before their
    # containers run, and right after the API server's return one `kubectl exec` or GET may
    # fail where the next succeeds (seen at v1.26.15), which is not a lost volume.
    poll "$D2_POD_DEADLINE" d2_marker_is "$pod" "${D2_MARKER[$pod]}" || continue
    poll 60 d2_identity_known "$pod"
    now=$(d2_pod_identity "$pod")
    if [[ -n ${D2_PODS_RESTARTED:-} ]]; then
      [[ ${now%% *} == "${D2_IDENTITY[$pod]%% *}" ]] && kept=$((kept + 1))
    else
      [[ $now == "${D2_IDENTITY[$pod]}" ]] && kept=$((kept + 1))
    fi
  done
  echo "$kept/$all"
}

d2_ds_pod() {  # the DaemonSet pod of LETTER that is not being deleted
  rn_kubectl -n kube-system get pods -l "app=day2-$1" -o json 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if not p["metadata"].get("deletionTimestamp"):
        print(p["metadata"]["name"]); break'
}

# The registrar container's restart count in LETTER's DaemonSet pod; a pod being deleted (the old
# one of a rollout) is not counted: its restarts are not the new registrar's.
d2_restarts() {  # d2_restarts LETTER
  rn_kubectl -n kube-system get pods -l "app=day2-$1" -o json 2>/dev/null | python3 -c '
import json, sys
n = 0
for p in json.load(sys.stdin)["items"]:
    if p["metadata"].get("deletionTimestamp"):
        continue
    for c in p["status"].get("containerStatuses", []):
        if c["name"] == "csi-node-driver-registrar":
            n += c.get("restartCount", 0)
print(n)'
}

d2_in_csinode() {  # the CSINode lists DRIVER with this node's ID
  rn_kubectl get csinode "$RN_NODE" -o json 2>/dev/null | python3 -c '
import json, sys
drivers = json.load(sys.stdin)["spec"].get("drivers") or []
sys.exit(0 if [d for d in drivers if d["name"] == sys.argv[1] and d["nodeID"] == sys.argv[2]] else 1)' \
    "$1" "$RN_NODE"
}

d2_log_size() { stat -c %s "$RN_WORK/logs/kubelet.log"; }
# Kubelet registered the driver of LETTER since OFFSET of its log (a registration begun and no
# failure after it) and CSINode lists it.
# With D2_SINCE set (RFC 3339, taken before the change), the registrar must also have logged
# kubelet's confirmation since then (d2_confirmed_since): the CSINode entry may be the one from
# before the change.
d2_registered_since() {  # d2_registered_since OFFSET LETTER
  d2_obs kubelet "$RN_WORK/logs/kubelet.log" "$1" "$(d2_driver "$2")" |
    python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["last_ok"] else 1)' &&
    d2_in_csinode "$(d2_driver "$2")" &&
    { [[ -z ${D2_SINCE:-} ]] || d2_confirmed_since "$D2_SINCE" "$2"; }
}
d2_since_now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# The CSINode watch: one line per event the API server sends, "EPOCH @RESOURCE_VERSION NAME ...",
# read from its watch API itself; connected again whenever the API server drops it (each
# connection starts with the object as it is, and every one after the first writes a line
# "EPOCH !connected": what happened between two connections is not seen, and a row whose window
# holds such a gap says so). resourceVersion=0 starts from the API server's watch cache: without
# it the API server first waits for its cache to reach etcd's newest revision, which with
# Debian 12's etcd 3.4 (no progress notifications) it may not do until the next CSINode change,
# and answers "Too large resource version" (kubectl get -w then lists again: a sample, not a
# watch).
d2_watch_start() {
  (
    again=
    while :; do
      curl -sN --cacert "$RN_WORK/pki/ca.crt" --cert "$RN_WORK/pki/admin.crt" \
        --key "$RN_WORK/pki/admin.key" \
        "https://127.0.0.1:$RN_API_PORT/apis/storage.k8s.io/v1/csinodes?watch=1&resourceVersion=0&timeoutSeconds=7200&fieldSelector=metadata.name%3D$RN_NODE" |
        python3 -u "$here/real-node/day2_observe.py" watch-lines $again
      # Every connection after the first marks itself (a gap the rows must not hide).
      again=--reconnect
      sleep 1  # the API server is away: connect again
    done
  ) >>"$D2_WATCH" &
  D2_WATCH_PID=$!
}
d2_watch_stop() {
  [[ -n ${D2_WATCH_PID:-} ]] || return 0
  local children
  children=$(pgrep -P "$D2_WATCH_PID")
  kill "$D2_WATCH_PID" 2>/dev/null
  [[ -n $children ]] && kill $children 2>/dev/null
  wait "$D2_WATCH_PID" 2>/dev/null
  D2_WATCH_PID=
}

# The watch has delivered the CSINode as a fresh GET returns it (its resourceVersion or later).
d2_watch_caught_up() {
  local rv
  rv=$(rn_kubectl get csinode "$RN_NODE" -o 'jsonpath={.metadata.resourceVersion}' 2>/dev/null)
  [[ -n $rv ]] && d2_obs caught-up "$D2_WATCH" "$rv"
}

# One row of the table, for LETTER, from what was observed since START (epoch) and OFFSET (of
# kubelet's log). NEW_POD: seconds the pod created during the change took, or "no", or "–";
# RECOVERED: seconds until registered again, or "no", or "–" where nothing was to recover;
# RESTARTS_BEFORE: the registrar's restart count before. PROBLEMS: what is wrong ("" for
# nothing). Appends the row's JSON to D2_ROWS_NOW and to the run's rows. With D2_REPORTED=1 the
# row is reported, not required: its problems are said, and are not a failure. D2_ATTEMPTS, where
# set, is the row's registration attempts per minute (d2_attempts).
d2_row() {  # d2_row SCENARIO STEP LETTER START OFFSET NEW_POD RECOVERED RESTARTS_BEFORE PROBLEMS [NOTE]
  local scenario=$1 step=$2 l=$3 start=$4 offset=$5 new_pod=$6 recovered=$7 restarts_before=$8
  local problems=$9 note=${10:-} driver kubelet csinode pods restarts
  driver=$(d2_driver "$l")
  # The watch delivers events a moment late: the window ends once it has caught up, or where the
  # caller closed it for both drivers at once (D2_WINDOW_END).
  local end=${D2_WINDOW_END:-}
  if [[ -z $end ]]; then
    poll 30 d2_watch_caught_up || problems+="${problems:+; }the CSINode watch did not catch up with the API server within 30 s"
    end=$(d2_now)
  fi
  kubelet=$(d2_obs kubelet "$RN_WORK/logs/kubelet.log" "$offset" "$driver")
  csinode=$(d2_obs csinode "$D2_WATCH" "$driver" "$start" "$end")
  pods=$(d2_pods_kept "$l")
  restarts=$(($(d2_restarts "$l") - restarts_before))
  # A watch that connected again missed what happened in between, unless the harness itself took
  # the API server away (D2_WATCH_BREAKS: how many times), when nothing could change.
  local reconnects
  reconnects=$(d2_row_field "$csinode" reconnects)
  ((reconnects <= ${D2_WATCH_BREAKS:-0})) ||
    problems+="${problems:+; }the CSINode watch connected again $reconnects times in this window: changes in between are not seen"
  [[ $pods == 2/2 ]] || problems+="${problems:+; }a running pod lost its volume's marker ($pods kept)"
  [[ $new_pod == no ]] && problems+="${problems:+; }the pod created during the change did not run with its volume within ${D2_POD_DEADLINE}s"
  [[ $recovered == no ]] && problems+="${problems:+; }not registered again"
  d2_in_csinode "$driver" || problems+="${problems:+; }CSINode does not list $driver at the end"
  local row
  row=$(python3 - "$scenario" "$step" "$(d2_who "$l")" "$kubelet" "$csinode" "$pods" "$new_pod" \
    "$recovered" "$restarts" "$problems" "$note" "${D2_REPORTED:-}" "${D2_ATTEMPTS:-}" <<'EOF'
import json, sys
a = sys.argv[1:]
def secs(v):
    return v if v in ("no", "–", "") else v + " s"
print(json.dumps({"scenario": a[0], "step": a[1], "registrar": a[2], "kubelet": json.loads(a[3]),
                  "csinode": json.loads(a[4]), "pods": a[5], "new_pod": secs(a[6]),
                  "recovered": secs(a[7]), "restarts": int(a[8]),
                  "attempts": json.loads(a[12]) if a[12] else None,
                  "verdict": ("reported, not required: " if a[11] else "FAIL: ") + a[9]
                             if a[9] else "ok", "note": a[10]}))
EOF
  )
  echo "$row" >>"$D2_ROWS"
  D2_ROWS_NOW+=("$row")
  rn_log "day2 $scenario, $step, $(d2_who "$l"): $row"
}
# A requirement judged after the row was written (against another row): the row's verdict says
# it too, in D2_ROWS_NOW and in the run's rows, so that the table shows the failure where it is.
d2_row_fail() {  # d2_row_fail INDEX PROBLEM: INDEX into D2_ROWS_NOW
  local old=${D2_ROWS_NOW[$1]} new
  new=$(python3 - "$old" "$2" <<'EOF2'
import json, sys
row = json.loads(sys.argv[1])
if row["verdict"].startswith("FAIL: "):
    row["verdict"] += "; " + sys.argv[2]
else:
    row["verdict"] = "FAIL: " + sys.argv[2]
print(json.dumps(row))
EOF2
  ) || return 1
  D2_ROWS_NOW[$1]=$new
  python3 - "$D2_ROWS" "$old" "$new" <<'EOF2'
import sys
path, old, new = sys.argv[1:]
with open(path, encoding="utf-8") as f:
    lines = f.read().split("\n")
lines = [new if line == old else line for line in lines]
with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
EOF2
}
d2_row_ok() {  # ok, or reported and not required
  python3 -c 'import json, sys; sys.exit(0 if json.loads(sys.argv[1])["verdict"].startswith(("ok", "reported")) else 1)' "$1"
}
d2_row_field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]); [v := v[k] for k in sys.argv[2:]]; print(v)' "$@"; }

# For both drivers at once (each is timed on its own, not after the other): polls CHECK ARGS...
# LETTER for each until it succeeds, and sets D2_WHEN[LETTER] to the seconds from START_SECONDS
# when it first did, or "no" if it did not within DEADLINE seconds.
declare -gA D2_WHEN=()
d2_when_each() {  # d2_when_each START_SECONDS DEADLINE CHECK [ARGS...]
  local s0=$1 deadline=$((SECONDS + $2)) l
  shift 2
  D2_WHEN=([a]=no [b]=no)
  while :; do
    for l in a b; do
      [[ ${D2_WHEN[$l]} == no ]] && "$@" "$l" >/dev/null 2>&1 && D2_WHEN[$l]=$((SECONDS - s0))
    done
    [[ ${D2_WHEN[a]} != no && ${D2_WHEN[b]} != no ]] && return 0
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}
d2_new_pod_ready() { d2_pod_has_marker "day2-$1-new"; }

# For both drivers at once, the registration and the pod created during the change, each timed
# from START_SECONDS on its own: sets D2_WHEN[LETTER] (registered, d2_registered_since OFFSET)
# and D2_WHEN_POD[LETTER] (the new pod ran with its marker), or "no" after DEADLINE seconds.
declare -gA D2_WHEN_POD=()
d2_when_registered_and_pod() {  # d2_when_registered_and_pod START_SECONDS DEADLINE OFFSET
  local s0=$1 deadline=$((SECONDS + $2)) offset=$3 l
  D2_WHEN=([a]=no [b]=no)
  D2_WHEN_POD=([a]=no [b]=no)
  while :; do
    for l in a b; do
      [[ ${D2_WHEN[$l]} == no ]] && d2_registered_since "$offset" "$l" >/dev/null 2>&1 &&
        D2_WHEN[$l]=$((SECONDS - s0))
      [[ ${D2_WHEN_POD[$l]} == no ]] && d2_new_pod_ready "$l" >/dev/null 2>&1 &&
        D2_WHEN_POD[$l]=$((SECONDS - s0))
    done
    [[ " ${D2_WHEN[*]} ${D2_WHEN_POD[*]} " != *" no "* ]] && return 0
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

d2_apply_driver() {  # d2_apply_driver LETTER IMAGE SECURITY_CONTEXT
  D2_IMAGE_OF[$1]=$2
  d2_manifests "$@" | rn_kubectl apply -f - >&2
}

d2_rollout_done() { rn_kubectl -n kube-system rollout status "daemonset/day2-$1" --timeout=5s >/dev/null 2>&1; }

# Both drivers, their pods and the watch. Returns non-zero, with the reason in D2_WHY, on failure.
d2_setup() {
  : >"$D2_WATCH"
  D2_DRIVER_IMAGE=localhost/ndr/sample-csi-driver:$("$RN_TOOLS/csi-node-driver-registrar" --version | head -n 1 | cut -d' ' -f2 | tr + _)
  D2_OURS_IMAGE=localhost/ndr/csi-node-driver-registrar:${D2_DRIVER_IMAGE##*:}
  local offset l pod
  offset=$(d2_log_size)
  # No securityContext at first: the locked-down scenario then changes it, and keeps it.
  d2_apply_driver a "$D2_GO_IMAGE" "$D2_PLAIN" && d2_apply_driver b "$D2_OURS_IMAGE" "$D2_PLAIN" ||
    { D2_WHY="applying the two drivers failed"; return 1; }
  for l in a b; do
    poll 240 d2_rollout_done "$l" && poll 120 d2_registered_since "$offset" "$l" || {
      rn_kubectl -n kube-system describe pods -l "app=day2-$l" >&2
      D2_WHY="driver $l ($(d2_who "$l")) did not become Ready and registered within 360 s"
      return 1
    }
  done
  poll 120 rn_kubectl -n default get serviceaccount default
  for l in a b; do
    for pod in day2-$l-pv:pv day2-$l-inline:inline; do
      d2_start_pod "${pod%%:*}" "$l" "${pod#*:}" || {
        rn_kubectl -n default describe pod "${pod%%:*}" >&2
        D2_WHY="pod ${pod%%:*} did not run with its volume within ${D2_POD_DEADLINE}s"
        return 1
      }
      D2_MARKER[${pod%%:*}]=$(d2_marker_of "${pod%%:*}")
      poll 60 d2_identity_known "${pod%%:*}" || {
        D2_WHY="pod ${pod%%:*} runs, but the API server did not report its container within 60 s"
        return 1
      }
      D2_IDENTITY[${pod%%:*}]=$(d2_pod_identity "${pod%%:*}")
    done
  done
  d2_watch_start
  poll 30 test -s "$D2_WATCH" || { D2_WHY="the CSINode watch delivered nothing"; return 1; }
}

# The verdict of a scenario from its rows (D2_ROWS_NOW): PASS when every row is ok and
# EXTRA_PROBLEMS is empty.
d2_verdict() {  # d2_verdict NAME SUMMARY EXTRA_PROBLEMS
  local name=$1 summary=$2 extra=$3 row bad=()
  [[ -n $extra ]] && bad+=("$extra")
  ((${#D2_ROWS_NOW[@]})) || bad+=("no row was written")
  for row in "${D2_ROWS_NOW[@]}"; do
    d2_row_ok "$row" || bad+=("$(d2_row_field "$row" step), $(d2_row_field "$row" registrar): $(d2_row_field "$row" verdict)")
  done
  if ((${#bad[@]})); then
    result FAIL "day2-$name" "$(IFS=';'; echo "${bad[*]}")"
  else
    result PASS "day2-$name" "$summary"
  fi
}

# --- 3. kubelet restarted, and upgraded in place ---------------------------------------------

kubelet_version_of() { "$1" --version 2>/dev/null | cut -d' ' -f2; }

# kubelet stopped and started again from BINARY, with both registrars running; a pod of each
# driver is created while kubelet is away.
d2_kubelet_restart() {  # d2_kubelet_restart STEP BINARY
  local step=$1 binary=$2 start offset s0 l D2_SINCE
  D2_SINCE=$(d2_since_now)
  start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
  local -A restarts=() rec=() new=()
  for l in a b; do restarts[$l]=$(d2_restarts "$l"); done
  kill "${RN_PID_OF[kubelet]}"
  poll 60 bash -c "! kill -0 ${RN_PID_OF[kubelet]}"
  for l in a b; do d2_pod "day2-$l-new" "$l" inline | rn_kubectl apply -f - >&2; done
  RN_KUBELET_BIN=$binary
  rn_start_kubelet || return 1
  d2_when_registered_and_pod "$s0" 240 "$offset"
  for l in a b; do rec[$l]=${D2_WHEN[$l]} new[$l]=${D2_WHEN_POD[$l]}; done
  local version problems
  version=$(rn_kubectl get node "$RN_NODE" -o 'jsonpath={.status.nodeInfo.kubeletVersion}')
  for l in a b; do
    problems=
    (($(d2_restarts "$l") == ${restarts[$l]})) || problems="the registrar's container restarted"
    d2_row kubelet "$step" "$l" "$start" "$offset" "${new[$l]}" "${rec[$l]}" "${restarts[$l]}" \
      "$problems" "the node reports kubelet $version"
  done
  rn_kubectl -n default delete pod day2-a-new day2-b-new --wait=true --timeout=120s >&2
}

d2_scenario_kubelet() {
  local extra= now
  now=${RN_KUBELET_BIN:-$RN_BIN/kubelet}
  d2_kubelet_restart "restarted ($(kubelet_version_of "$now"))" "$now" ||
    extra="kubelet $(kubelet_version_of "$now") did not come back (its log: $RN_WORK/logs/kubelet.log)"
  if [[ -z $extra && -n ${D2_KUBELET_FROM:-} ]]; then
    d2_kubelet_restart "upgraded $D2_KUBELET_FROM → $RN_KUBE_VERSION" "$RN_BIN/kubelet" ||
      extra="kubelet $RN_KUBE_VERSION did not come up on $D2_KUBELET_FROM's root directory (its log: $RN_WORK/logs/kubelet.log)"
  elif [[ -z $extra ]]; then
    extra="the upgrade was not run: ${D2_KUBELET_FROM_WHY:-no kubelet of the previous release}"
  fi
  RN_KUBELET_BIN=$RN_BIN/kubelet
  d2_verdict kubelet "kubelet restarted, then upgraded ${D2_KUBELET_FROM:-?} → $RN_KUBE_VERSION on the same root directory, with both registrars running: registered again without a registrar restart, volumes kept, pods created meanwhile mounted" "$extra"
}

# --- 2. several drivers on one node --------------------------------------------------------

# Acts on ACTED (its DaemonSet restarted, then its registration socket deleted) and writes the
# row of OTHER, which must see nothing of it.
d2_drivers_one() {  # d2_drivers_one ACTED OTHER
  local acted=$1 other=$2 start offset problems=() socket restarts s0 took=()
  start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
  restarts=$(d2_restarts "$other")
  rn_kubectl -n kube-system rollout restart "daemonset/day2-$acted" >&2
  if poll 240 d2_rollout_done "$acted" && poll 120 d2_registered_since "$offset" "$acted"; then
    took+=("its DaemonSet restarted: registered again in $((SECONDS - s0)) s")
  else
    problems+=("driver $acted ($(d2_who "$acted")) was not registered again after its DaemonSet was restarted")
  fi
  local offset2
  offset2=$(d2_log_size) s0=$SECONDS
  socket=/var/lib/kubelet/plugins_registry/$(d2_driver "$acted")-reg.sock
  rm -f "$socket"
  # A registrar that does not make its socket again is restarted by its liveness probe, whose
  # /healthz fails without the socket (5 failures 10 s apart).
  if poll 180 d2_registered_since "$offset2" "$acted"; then
    took+=("its registration socket deleted: registered again in $((SECONDS - s0)) s")
  else
    problems+=("driver $acted ($(d2_who "$acted")): its registration socket deleted, it was not registered again within 180 s")
  fi
  local counts
  counts=$(d2_obs kubelet "$RN_WORK/logs/kubelet.log" "$offset" "$(d2_driver "$other")")
  [[ $(d2_row_field "$counts" registered)/$(d2_row_field "$counts" deregistered)/$(d2_row_field "$counts" failed) == 0/0/0 ]] ||
    problems+=("kubelet registered or deregistered the other driver too: $counts")
  local cs
  cs=$(d2_obs csinode "$D2_WATCH" "$(d2_driver "$other")" "$start" "$(d2_now)")
  [[ $(d2_row_field "$cs" removed) == 0 ]] || problems+=("the other driver's CSINode entry went away: $cs")
  d2_row drivers "driver $acted restarted, then its socket deleted: the row of the other driver" \
    "$other" "$start" "$offset" – – "$restarts" "$(IFS=';'; echo "${problems[*]}")" \
    "acted on $acted ($(d2_who "$acted")): $(printf '%s; ' "${took[@]}" | sed 's/; $//')"
}

d2_scenario_drivers() {
  local extra=
  d2_in_csinode "$(d2_driver a)" && d2_in_csinode "$(d2_driver b)" || extra="CSINode does not list both drivers"
  d2_drivers_one a b
  d2_drivers_one b a
  d2_verdict drivers "two drivers, each with its registrar: restarting one's DaemonSet or deleting its registration socket left the other's registration, CSINode entry and volumes untouched, both ways" "$extra"
}

# --- 1. swap by rolling update ---------------------------------------------------------------

# Why the new pod's first mounts failed, if they did (e.g. the driver not registered yet when
# kubelet first tried), in short.
d2_pod_events() {
  rn_kubectl -n default get events --field-selector "involvedObject.name=$1,reason=FailedMount" \
    -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null |
    sed 's/^FailedMount: MountVolume.SetUp failed for volume "[^"]*" : /FailedMount: /' |
    cut -c1-140 | sort -u | head -2 | paste -sd ';'
}

# One rollout of driver a's DaemonSet: to IMAGE, or "restart" (the same image again).
d2_swap_step() {  # d2_swap_step STEP IMAGE|restart
  local step=$1 to=$2 start offset s0 new rec D2_SINCE
  D2_SINCE=$(d2_since_now)
  start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
  if [[ $to == restart ]]; then
    rn_kubectl -n kube-system rollout restart daemonset/day2-a >&2
  else
    rn_kubectl -n kube-system set image daemonset/day2-a "csi-node-driver-registrar=$to" >&2
    D2_IMAGE_OF[a]=$to
  fi
  # A pod created mid-rollout, while the old registrar goes or the new one starts. It and the
  # registration are timed together, each from the rollout's start.
  d2_pod day2-a-new a inline | rn_kubectl apply -f - >&2
  rec=no new=no
  local deadline=$((SECONDS + 240))
  while [[ $rec == no || $new == no ]] && ((SECONDS < deadline)); do
    [[ $rec == no ]] && d2_rollout_done a && d2_registered_since "$offset" a >/dev/null 2>&1 &&
      rec=$((SECONDS - s0))
    [[ $new == no ]] && d2_pod_has_marker day2-a-new && new=$((SECONDS - s0))
    [[ $rec == no || $new == no ]] && sleep 1
  done
  d2_row swap "$step" a "$start" "$offset" "$new" "$rec" 0 "" "$(d2_pod_events day2-a-new)"
  rn_kubectl -n default delete pod day2-a-new --wait=true --timeout=120s >&2
}

# What of ROW is worse than the yardstick's: deregistrations, failed registrations, CSINode
# entries removed, restarts, and by more than 2 s (the harness polls once a second) the longest
# CSINode absence and the time to register again.
d2_not_worse() {  # d2_not_worse YARDSTICK_ROW ROW
  python3 - "$1" "$2" <<'EOF2'
import json, sys
y, r = json.loads(sys.argv[1]), json.loads(sys.argv[2])
worse = []
for part, key in (("kubelet", "deregistered"), ("kubelet", "failed"), ("csinode", "removed")):
    if r[part][key] > y[part][key]:
        worse.append("%s %s %d against the Go → Go restart's %d" % (part, key, r[part][key], y[part][key]))
if r["restarts"] > y["restarts"]:
    worse.append("%d restarts against the Go → Go restart's %d" % (r["restarts"], y["restarts"]))
if r["csinode"]["longest_away_s"] > y["csinode"]["longest_away_s"] + 2:
    worse.append("CSINode entry away %.1f s against the Go → Go restart's %.1f s"
                 % (r["csinode"]["longest_away_s"], y["csinode"]["longest_away_s"]))
def secs(v):
    return float(v.split()[0]) if v.endswith(" s") else None
if secs(r["recovered"]) is None and secs(y["recovered"]) is not None:
    worse.append("not registered again, where the Go → Go restart was")
elif None not in (secs(r["recovered"]), secs(y["recovered"])) and secs(r["recovered"]) > secs(y["recovered"]) + 2:
    worse.append("registered again after %s against the Go → Go restart's %s" % (r["recovered"], y["recovered"]))
print("; ".join(worse))
EOF2
}

d2_scenario_swap() {
  local go=$D2_GO_IMAGE ours=$D2_OURS_IMAGE extra= yard to_ours to_go w
  if [[ ${D2_IMAGE_OF[a]} != "$go" ]]; then
    rn_kubectl -n kube-system set image daemonset/day2-a "csi-node-driver-registrar=$go" >&2
    D2_IMAGE_OF[a]=$go
    poll 240 d2_rollout_done a
  fi
  d2_swap_step "Go → Go (rollout restart: the yardstick)" restart
  yard=${D2_ROWS_NOW[-1]}
  d2_swap_step "Go → ours (kubectl set image)" "$ours"
  d2_swap_step "ours → Go (kubectl set image: the rollback)" "$go"
  # The last two rows against the yardstick: what is worse fails the row itself.
  local i
  for i in 1 2; do
    w=$(d2_not_worse "$yard" "${D2_ROWS_NOW[$i]}")
    [[ -n $w ]] && d2_row_fail "$i" "worse than the yardstick: $w"
  done
  d2_verdict swap "Go → ours and back by rolling update (maxUnavailable 1), a PV pod and an inline pod running and a pod created mid-rollout: volumes kept, the new pod mounted, no count worse than the Go → Go restart's" "$extra"
}

# --- 5. a locked-down registrar --------------------------------------------------------------

d2_context_name() {
  case $1 in
    locked) echo "locked down: seccomp RuntimeDefault, drop ALL, read-only root, no privilege escalation" ;;
    nonroot) echo "locked down and runAsNonRoot, as 65532:65532" ;;
  esac
}

d2_healthz() {  # d2_healthz LETTER: the registrar answers /healthz on its pod's address
  local ip
  ip=$(rn_kubectl -n kube-system get pod "$(d2_ds_pod "$1")" -o 'jsonpath={.status.podIP}' 2>/dev/null)
  [[ -n $ip ]] && curl -sf -m 3 "http://$ip:9809/healthz" >/dev/null
}
d2_registrar_ready() {  # the registrar container of LETTER's current pod is ready [and never restarted]
  rn_kubectl -n kube-system get pod "$(d2_ds_pod "$1")" -o json 2>/dev/null | python3 -c '
import json, sys
ready = [c for c in json.load(sys.stdin)["status"].get("containerStatuses", [])
         if c["name"] == "csi-node-driver-registrar" and c.get("ready")
         and (len(sys.argv) < 2 or c.get("restartCount", 0) == 0)]
sys.exit(0 if ready else 1)' ${2:+never-restarted}
}

d2_locked_registered() {  # d2_locked_registered OFFSET LETTER
  d2_rollout_done "$2" && d2_registrar_ready "$2" && d2_registered_since "$1" "$2"
}

d2_scenario_locked_down() {
  local variant sc l extra= what start offset s0 D2_SINCE
  local -A ran=()
  for variant in locked nonroot; do
    if [[ $variant == locked ]]; then sc=$D2_LOCKED; else sc=$D2_LOCKED_NONROOT; fi
    D2_SINCE=$(d2_since_now)
    start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
    for l in a b; do d2_apply_driver "$l" "${D2_IMAGE_OF[$l]}" "$sc"; done
    # Both timed at once, each from the change: rolled out, ready and registered.
    d2_when_each "$s0" 240 d2_locked_registered "$offset"
    local -A when=([a]=${D2_WHEN[a]} [b]=${D2_WHEN[b]})
    # Both rows' windows close together, once the watch has caught up.
    local window_end=
    poll 30 d2_watch_caught_up && window_end=$(d2_now)
    for l in a b; do
      local runs=no registers=no healthz=no why= rec=${when[$l]}
      [[ $rec != no ]] && registers=yes
      # Runs: ready, and still the first start of its container once both are judged (a
      # registrar that cannot work exits, and is ready for a moment before each exit).
      if d2_rollout_done "$l" && d2_registrar_ready "$l"; then
        poll 30 d2_healthz "$l" && healthz=yes
        d2_registrar_ready "$l" never-restarted && runs=yes
      fi
      what="runs $runs, registers $registers, answers /healthz $healthz"
      ran[$variant-$l]=$runs/$registers/$healthz
      [[ $registers == no ]] &&
        why="; its last words: $(rn_kubectl -n kube-system logs "$(d2_ds_pod "$l")" -c csi-node-driver-registrar --tail=1 2>&1 |
          sed 's/^[IWEF][0-9]\{4\} [0-9:.]* *[0-9]* [^]]*\] //' | cut -c1-300)"
      if [[ $variant == locked ]]; then
        # What deploy/ ships must run, register and answer: the row fails otherwise.
        local required=
        [[ ${ran[$variant-$l]} == yes/yes/yes ]] || required="with what deploy/ ships: $what"
        D2_WINDOW_END=$window_end d2_row locked-down "$(d2_context_name "$variant")" "$l" \
          "$start" "$offset" – "$rec" 0 "$required" "$what$why"
      else
        # Reported, not required: kubelet's registration directory is root's.
        D2_REPORTED=1
        D2_WINDOW_END=$window_end d2_row locked-down "$(d2_context_name "$variant")" "$l" \
          "$start" "$offset" – – 0 "" "$what$why"
        D2_REPORTED=
      fi
    done
    # Ours must run wherever the Go registrar runs: its row (driver b's, the last) fails if not.
    if [[ ${ran[$variant-a]} == yes/yes/yes && ${ran[$variant-b]} != yes/yes/yes ]]; then
      d2_row_fail -1 "the Go registrar runs with $(d2_context_name "$variant") and ours does not"
    fi
  done
  # Back to the context deploy/ ships.
  offset=$(d2_log_size)
  for l in a b; do d2_apply_driver "$l" "${D2_IMAGE_OF[$l]}" "$D2_LOCKED"; done
  for l in a b; do
    poll 240 d2_rollout_done "$l" && poll 120 d2_registered_since "$offset" "$l" ||
      extra+="${extra:+; }driver $l did not come back with the locked-down context"
  done
  d2_verdict locked-down "with seccomp RuntimeDefault, no capabilities, a read-only root and no privilege escalation (what deploy/ ships) both registrars run, register and answer /healthz; as non-root 65532 (run/register/healthz): Go ${ran[nonroot-a]:-?}, ours ${ran[nonroot-b]:-?}" "$extra"
}

# --- 6. the API server away during registration ----------------------------------------------

d2_registrar_container() {  # containerd ID of LETTER's running registrar container
  rn_kubectl -n kube-system get pod "$(d2_ds_pod "$1")" -o json 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin)["status"].get("containerStatuses", []):
    if c["name"] == "csi-node-driver-registrar" and c.get("state", {}).get("running"):
        print(c["containerID"].split("//", 1)[1])'
}

d2_registrar_running() { [[ -n $(d2_registrar_container "$1") ]]; }

# What the registrar's logs that kubelet kept (under /var/log/pods: the running container's and
# at most the one before) say of the watchdog: ours logs "Offering the registration socket ..."
# or "... offering the socket again" at each offer. Older containers' logs are gone; the restart count is in the row.
d2_registrar_log_says() {  # d2_registrar_log_says LETTER
  local pod offers
  pod=$(d2_ds_pod "$1")
  # The pod's name names a directory: only a name the API server could have given it.
  [[ $pod =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "watchdog offers: not read (no pod, or an unexpected name '$pod')"; return; }
  offers=$(cat /var/log/pods/kube-system_"$pod"_*/csi-node-driver-registrar/*.log 2>/dev/null |
    grep -cE 'ffering the (registration )?socket')
  echo "watchdog offers in the logs kubelet kept: $offers"
}

# The registrar of LETTER has logged kubelet's NotifyRegistrationStatus(registered=true) since
# SINCE (RFC 3339): the registration's end, as the registrar saw it. Ours logs `"Registration
# notified" registered=true`; the Go registrar v2.17.0 `"Received NotifyRegistrationStatus call"
# status="plugin_registered:true"` (cmd/csi-node-driver-registrar/main.go
# NotifyRegistrationStatus; the status in protobuf's text form, as seen on this node).
d2_confirmed_since() {  # d2_confirmed_since SINCE LETTER
  local pod
  pod=$(d2_ds_pod "$2")
  [[ -n $pod ]] || return 1
  rn_kubectl -n kube-system logs "$pod" -c csi-node-driver-registrar --since-time="$1" 2>/dev/null |
    grep -qE '"Registration notified" registered=true|NotifyRegistrationStatus call.*(plugin_registered|PluginRegistered): ?true'
}

# Registered again since the API server's return: kubelet's log (a registration begun with no
# failure or deregistration after it), CSINode, and the registrar's own confirmation since then
# (the CSINode entry may be the one from before the change, which kubelet could not remove).
d2_back_registered() {  # d2_back_registered OFFSET SINCE LETTER
  d2_registered_since "$1" "$3" && d2_confirmed_since "$2" "$3"
}

# How many registrations of LETTER's driver kubelet's log FILE shows failed after OFFSET.
d2_failed_in() {  # d2_failed_in FILE OFFSET LETTER
  d2_obs kubelet "$1" "$2" "$(d2_driver "$3")" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["failed"])'
}

# One outage: the API server stopped for MINUTES, both registrars started again while it is
# away; with "kubelet", kubelet is also restarted half-way through (a node rebooted during a
# control-plane outage). Appends both rows; says what went wrong in D2_EXTRA.
d2_api_away_step() {  # d2_api_away_step MINUTES [kubelet]
  local minutes=$1 also=${2:-} start offset back id ids=() l step kubelet_started=
  local -A restarts=() rec=()
  step="away ${minutes} min"
  [[ $also == kubelet ]] && step+=", kubelet restarted half-way"
  start=$(d2_now) offset=$(d2_log_size)
  for l in a b; do
    restarts[$l]=$(d2_restarts "$l")
    ids+=("$(d2_registrar_container "$l")")
  done
  kill "${RN_PID_OF[kube-apiserver]}"
  poll 60 bash -c "! kill -0 ${RN_PID_OF[kube-apiserver]}"
  # Both registrars start again while the API server is away: kubelet registers them and
  # cannot write the Node or CSINode.
  for id in "${ids[@]}"; do rn_ctr tasks kill -s SIGKILL "$id" >&2; done
  local until_=$((SECONDS + minutes * 60)) half=$((SECONDS + minutes * 30))
  rn_log "day2 api-away: the API server stays away for $minutes min${also:+ (kubelet restarted half-way)}"
  if [[ $also == kubelet ]]; then
    while ((SECONDS < half)); do sleep 5; done  # half the outage, not a wait for anything
    kill "${RN_PID_OF[kubelet]}"
    poll 60 bash -c "! kill -0 ${RN_PID_OF[kubelet]}"
    kubelet_started=$(d2_now)
    # kubelet cannot report the node Ready without the API server: only its own health counts.
    RN_KUBELET_NO_NODE_WAIT=1 rn_start_kubelet ||
      { D2_EXTRA+="${D2_EXTRA:+; }kubelet did not start again while the API server was away"; }
  fi
  while ((SECONDS < until_)); do sleep 5; done  # the outage's length, not a wait for anything
  # No registration can be confirmed while the API server is away: the registrar's log from
  # here on is the registration after its return.
  local since away_end
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  away_end=$(d2_log_size)
  local back_epoch
  back_epoch=$(d2_now)
  rn_start_apiserver || { D2_EXTRA+="${D2_EXTRA:+; }the API server did not come back"; return 1; }
  back=$SECONDS
  d2_when_each "$back" 600 d2_back_registered "$offset" "$since"
  for l in a b; do rec[$l]=${D2_WHEN[$l]}; done
  d2_minute_after "$back_epoch"
  # kubelet's log up to the API server's return (the reader seeks: a file, not a pipe).
  head -c "$away_end" "$RN_WORK/logs/kubelet.log" >"$D2_DIR/kubelet-while-away.log"
  for l in a b; do
    # The scenario is what it says only if kubelet tried to register the driver while the API
    # server was away, and failed.
    local failed problems=
    failed=$(d2_failed_in "$D2_DIR/kubelet-while-away.log" "$offset" "$l")
    [[ $failed =~ ^[1-9] ]] ||
      problems="kubelet's log shows no failed registration of the driver while the API server was away"
    # The harness's own kill restarts each registrar's container once: not the registrar's. The
    # watch reconnects once, when the API server is back.
    local D2_ATTEMPTS
    D2_ATTEMPTS=$(d2_attempts "$offset" "$l" "$start" "$back_epoch" $kubelet_started)
    problems+=$(d2_ours_paced "$l" "$D2_ATTEMPTS" "${rec[$l]}")
    D2_WATCH_BREAKS=1 d2_row api-away "$step" "$l" "$start" "$offset" – "${rec[$l]}" \
      "$((restarts[$l] + 1))" "${problems#; }" \
      "seconds from the API server's return; failed registrations while it was away: ${failed:-?}; restarts less the harness's kill; $(d2_registrar_log_says "$l")"
  done
}

# The registration attempts of LETTER's driver per minute of a fault from START to END (epoch
# seconds) and in the minute after, against kubelet's own back-off (day2_observe.py attempts),
# counted afresh after each KUBELET_START.
d2_attempts() {  # d2_attempts OFFSET LETTER START END [KUBELET_START...]
  local offset=$1 l=$2
  shift 2
  d2_obs attempts "$RN_WORK/logs/kubelet.log" "$offset" "$(d2_driver "$l")" "$@"
}

# The minute after a fault's end is part of what the rows count: they are written once it is over
# (the observation's window, not a wait for anything).
d2_minute_after() {  # d2_minute_after END_EPOCH
  local end=${1%.*}
  while (($(date +%s) < end + 61)); do sleep 1; done
}

# What ours' row must also show after a fault (each problem with a leading "; "): no
# registration attempt sooner than kubelet's own back-off allows, and registered again within
# that back-off's longest gap and ours' jitter after the fault's end (2 min 2 s + up to 2 min 2 s,
# with 16 s for the registration itself). The Go registrar's rows report the same, unjudged.
d2_ours_paced() {  # d2_ours_paced LETTER ATTEMPTS_JSON RECOVERED
  [[ $(d2_who "$1") == ours ]] || return 0
  python3 - "$2" "$3" <<'EOF2'
import json, sys
a, rec = json.loads(sys.argv[1]), sys.argv[2]
out = ""
if not a["within_backoff"]:
    x = a["ahead"]
    out += ("; a registration attempt %.1f s into the fault came %.1f s after the one before, where"
            " kubelet's own back-off waits %.1f s" % (x["at_s"], x["after_s"], x["backoff_s"]))
if rec.isdigit() and int(rec) > 260:
    out += "; registered again %s s after the fault's end, later than 2 x 2 min 2 s allow" % rec
print(out, end="")
EOF2
}

d2_scenario_api_away() {
  local minutes
  D2_EXTRA=
  for minutes in "${D2_API_AWAY[@]}"; do d2_api_away_step "$minutes" || break; done
  [[ -n $D2_EXTRA ]] || d2_api_away_step 2 kubelet
  d2_verdict api-away "the API server stopped and both registrars started while it was away ($(IFS=,; echo "${D2_API_AWAY[*]}") min, and 2 min with kubelet restarted half-way): both registered again once it was back, volumes kept" "$D2_EXTRA"
}

# --- 7. a brownout: the API server there, answering nothing in time -------------------------

# The API server's process stopped (SIGSTOP) for MINUTES and continued (SIGCONT): its port still
# takes connections (the kernel completes them into the listen backlog) and what kubelet has open
# stays open, but nothing is answered. kubelet's requests fail on its client's own timeouts (a
# TLS handshake after 10 s, an HTTP/2 connection found dead by its health check after 30 s + 15 s;
# k8s.io/apimachinery pkg/util/net/http.go SetTransportDefaults, v0.37.2), not on a refused
# connection as when the API server is away; a registration's requests may instead wait for the
# answer (kubelet v1.37.2 here) or fail (v1.26.15 here). Both registrars start again at its
# beginning, as in api-away.
d2_brownout_step() {  # d2_brownout_step MINUTES
  local minutes=$1 start offset id ids=() l pid=${RN_PID_OF[kube-apiserver]}
  local -A restarts=() rec=()
  start=$(d2_now) offset=$(d2_log_size)
  for l in a b; do
    restarts[$l]=$(d2_restarts "$l")
    ids+=("$(d2_registrar_container "$l")")
  done
  kill -STOP "$pid" || { D2_EXTRA+="${D2_EXTRA:+; }the API server could not be stopped"; return 1; }
  for id in "${ids[@]}"; do rn_ctr tasks kill -s SIGKILL "$id" >&2; done
  rn_log "day2 brownout: the API server answers nothing for $minutes min"
  local until_=$((SECONDS + minutes * 60))
  while ((SECONDS < until_)); do sleep 5; done  # the brownout's length, not a wait for anything
  local since back_epoch away_end back
  since=$(d2_since_now) away_end=$(d2_log_size) back_epoch=$(d2_now)
  kill -CONT "$pid"
  back=$SECONDS
  d2_when_each "$back" 600 d2_back_registered "$offset" "$since"
  for l in a b; do rec[$l]=${D2_WHEN[$l]}; done
  d2_minute_after "$back_epoch"
  head -c "$away_end" "$RN_WORK/logs/kubelet.log" >"$D2_DIR/kubelet-in-brownout.log"
  for l in a b; do
    local failed problems= D2_ATTEMPTS
    failed=$(d2_failed_in "$D2_DIR/kubelet-in-brownout.log" "$offset" "$l")
    D2_ATTEMPTS=$(d2_attempts "$offset" "$l" "$start" "$back_epoch")
    # The scenario is what it says only if kubelet began a registration of the driver while
    # nothing was answered. It need not have failed: kubelet v1.37.2 holds a registration whose
    # requests go unanswered and completes it once they are (seen on this node).
    python3 -c 'import json, sys; sys.exit(0 if sum(json.loads(sys.argv[1])["per_minute"]) else 1)' \
      "$D2_ATTEMPTS" ||
      problems="; kubelet's log shows no registration of the driver begun during the brownout"
    problems+=$(d2_ours_paced "$l" "$D2_ATTEMPTS" "${rec[$l]}")
    # The watch's connection may have been dropped while nothing was answered: nothing changed
    # CSINode then, as the API server served no request.
    D2_WATCH_BREAKS=1 d2_row brownout "answers nothing for ${minutes} min (SIGSTOP)" "$l" "$start" \
      "$offset" – "${rec[$l]}" "$((restarts[$l] + 1))" "${problems#; }" \
      "seconds from the API server's answering again; failed registrations during the brownout: ${failed:-?} (a registration begun then waits for the answer); restarts less the harness's kill; $(d2_registrar_log_says "$l")"
  done
}

d2_scenario_brownout() {
  D2_EXTRA=
  d2_brownout_step 3
  d2_verdict brownout "the API server stopped answering (reachable, its process stopped) for 3 min and both registrars started during it: both registered again once it answered, ours never ahead of kubelet's own back-off and never restarted, volumes kept" "$D2_EXTRA"
}

# --- 8. a rollback from a crash-looping registrar --------------------------------------------

d2_registrar_waiting() {  # the registrar container of LETTER's pod waits in CrashLoopBackOff
  rn_kubectl -n kube-system get pod "$(d2_ds_pod "$1")" -o json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if [c for c in json.load(sys.stdin)["status"].get("containerStatuses", [])
               if c["name"] == "csi-node-driver-registrar"
               and c.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"] else 1)'
}
d2_registrar_not() {  # d2_registrar_not CONTAINER_ID LETTER: that container no longer runs
  [[ $(d2_registrar_container "$2") != "$1" ]]
}

# Driver b's registrar (ours) killed with SIGKILL each time it runs, three times, as the OOM
# killer does to a container over its limit: it dies under its socket's name, leaving the file,
# and kubelet holds it back (CrashLoopBackOff). Then the DaemonSet is rolled back to the Go
# registrar, which must register on its first start: its socket's name is the one kubelet saw
# deleted, so kubelet forgot the earlier registration (a stale name under another path would make
# kubelet refuse it as "Another driver with the same name").
d2_scenario_rollback() {
  local extra= start offset s0 id kills rec=no stale problems= D2_SINCE
  local socket=/var/lib/kubelet/plugins_registry/$(d2_driver b)-reg.sock
  if [[ ${D2_IMAGE_OF[b]} != "$D2_OURS_IMAGE" ]]; then
    offset=$(d2_log_size)
    rn_kubectl -n kube-system set image daemonset/day2-b "csi-node-driver-registrar=$D2_OURS_IMAGE" >&2
    D2_IMAGE_OF[b]=$D2_OURS_IMAGE
    poll 240 d2_rollout_done b && poll 120 d2_registered_since "$offset" b ||
      extra="driver b did not register with ours before the crash loop"
  fi
  for kills in 1 2 3; do
    poll 120 d2_registrar_running b || { extra+="${extra:+; }ours was not running for kill $kills"; break; }
    id=$(d2_registrar_container b)
    rn_ctr tasks kill -s SIGKILL "$id" >&2
    poll 30 d2_registrar_not "$id" b
  done
  poll 60 d2_registrar_waiting b ||
    extra+="${extra:+; }ours' container was not seen in CrashLoopBackOff after three kills"
  if [[ -S $socket ]]; then stale="its socket left behind"; else stale="no socket left"; fi
  D2_SINCE=$(d2_since_now)
  start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
  rn_kubectl -n kube-system set image daemonset/day2-b "csi-node-driver-registrar=$D2_GO_IMAGE" >&2
  D2_IMAGE_OF[b]=$D2_GO_IMAGE
  local deadline=$((SECONDS + 240))
  while ((SECONDS < deadline)); do
    d2_rollout_done b && d2_registered_since "$offset" b >/dev/null 2>&1 && { rec=$((SECONDS - s0)); break; }
    sleep 1
  done
  (($(d2_restarts b) == 0)) ||
    problems="the Go registrar did not register on its first start: restarted $(d2_restarts b) times"
  d2_row rollback "ours in CrashLoopBackOff (SIGKILL x3, $stale), the DaemonSet rolled to Go" b \
    "$start" "$offset" – "$rec" 0 "$problems" "seconds from kubectl set image; restarts of the Go registrar's new container"
  # Back to ours, for the scenarios after this one.
  offset=$(d2_log_size)
  rn_kubectl -n kube-system set image daemonset/day2-b "csi-node-driver-registrar=$D2_OURS_IMAGE" >&2
  D2_IMAGE_OF[b]=$D2_OURS_IMAGE
  poll 240 d2_rollout_done b && poll 120 d2_registered_since "$offset" b ||
    extra+="${extra:+; }driver b did not register again with ours after the rollback"
  d2_verdict rollback "ours killed three times into CrashLoopBackOff, then the DaemonSet rolled back to the Go registrar $RN_GO_REGISTRAR_TAG: registered on its first start, volumes kept" "$extra"
}

# --- 9. why it ended: the crash report and the termination message ---------------------------

# What Kubernetes shows of the registrar container's last end: a jsonpath into LETTER's pod.
d2_last_terminated() {  # d2_last_terminated LETTER FIELD (message, exitCode)
  rn_kubectl -n kube-system get pod "$(d2_ds_pod "$1")" \
    -o jsonpath="{.status.containerStatuses[?(@.name==\"csi-node-driver-registrar\")].lastState.terminated.$2}" 2>/dev/null
}
d2_last_message_has() { [[ $(d2_last_terminated "$1" message) == *"$2"* ]]; }

# The evidence an operator reads, kept under day2/crash/: `kubectl logs --previous` of the
# registrar container and its last state's message, as kubectl prints them.
d2_crash_evidence() {  # d2_crash_evidence LETTER NAME
  local pod
  pod=$(d2_ds_pod "$1")
  mkdir -p "$D2_DIR/crash"
  rn_kubectl -n kube-system logs --previous "$pod" -c csi-node-driver-registrar >"$D2_DIR/crash/$2-logs.txt" 2>&1
  d2_last_terminated "$1" message >"$D2_DIR/crash/$2-message.txt"
  d2_last_terminated "$1" exitCode >"$D2_DIR/crash/$2-exit-code.txt"
  rn_log "day2 crash, $2: kubectl logs --previous (last 20 lines):"
  tail -n 20 "$D2_DIR/crash/$2-logs.txt" >&2
  rn_log "day2 crash, $2: last state's message: $(cat "$D2_DIR/crash/$2-message.txt")"
}

# Driver b's registrar (ours) sent SIGSEGV in its container, where it is process 1, as a crash
# would end it: its log must hold the crash report with function names, its last state the
# report's first line and exit code 139, and it must register again when kubelet restarts it.
# Then driver b's DaemonSet given a driver whose NodeGetInfo answers an empty node ID, which
# kubelet refuses for good: the registrar exits 1, and its last state says kubelet's reason. The
# DaemonSet is rolled back after it, and driver b registers again.
d2_scenario_crash() {
  local extra= id start offset s0 rec restarts text
  poll 120 d2_registrar_running b || extra="ours was not running before the crash"
  id=$(d2_registrar_container b)
  restarts=$(d2_restarts b) start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS rec=no
  rn_ctr tasks kill -s SIGSEGV "$id" >&2
  if poll 60 d2_registrar_not "$id" b && poll 60 d2_last_message_has b "Fatal signal"; then
    d2_crash_evidence b sigsegv
    text=$(cat "$D2_DIR/crash/sigsegv-logs.txt")
    [[ $text == *'"Fatal signal" signal="SIGSEGV"'* ]] || extra+="${extra:+; }the log holds no SIGSEGV report"
    [[ $text == *'ndr::registrar::'* ]] || extra+="${extra:+; }the report names none of the registrar's functions"
    [[ $(cat "$D2_DIR/crash/sigsegv-exit-code.txt") == 139 ]] ||
      extra+="${extra:+; }exit code $(cat "$D2_DIR/crash/sigsegv-exit-code.txt"), not 139"
  else
    extra+="${extra:+; }no termination message with the report's first line within 120 s"
  fi
  poll 180 d2_registered_since "$offset" b && rec=$((SECONDS - s0))
  d2_row crash "ours sent SIGSEGV in its container" b "$start" "$offset" – "$rec" "$restarts" "" \
    "the registrar container restarted once, as kubelet restarts a crashed one"

  restarts=$(d2_restarts b) start=$(d2_now) offset=$(d2_log_size) rec=no
  rn_kubectl -n kube-system patch daemonset day2-b --type=json \
    -p '[{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--faults=empty-node-id"}]' >&2
  if poll 240 d2_last_message_has b "kubelet refused to register the driver"; then
    d2_crash_evidence b refusal
    [[ $(cat "$D2_DIR/crash/refusal-message.txt") == *"driverNodeID must not be empty"* ]] ||
      extra+="${extra:+; }the termination message does not give kubelet's reason"
    [[ $(cat "$D2_DIR/crash/refusal-exit-code.txt") == 1 ]] ||
      extra+="${extra:+; }exit code $(cat "$D2_DIR/crash/refusal-exit-code.txt"), not 1"
  else
    extra+="${extra:+; }no termination message with kubelet's refusal within 240 s"
  fi
  s0=$SECONDS offset=$(d2_log_size)
  rn_kubectl -n kube-system rollout undo daemonset/day2-b >&2
  poll 240 d2_rollout_done b && poll 120 d2_registered_since "$offset" b && rec=$((SECONDS - s0))
  d2_row crash "a driver answering an empty node ID, then rolled back" b "$start" "$offset" – "$rec" \
    "$(d2_restarts b)" "" "registered again: seconds from kubectl rollout undo; restarts: of the pod the rollback started"
  d2_verdict crash "ours' SIGSEGV: the crash report in kubectl logs --previous, its first line as the last state's message, exit 139; kubelet's refusal of an empty node ID as the last state's message, exit 1; registered again after each" "$extra"
}

# --- 4. reboot -------------------------------------------------------------------------------

# Every process of the node stopped at once, as a power cut does, and what /run and the kernel
# held gone; the disk (kubelet's root directory, containerd's images) stays.
d2_power_cut() {
  local name pid
  for name in kubelet kube-proxy containerd; do
    pid=${RN_PID_OF[$name]:-}
    [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
  done
  pkill -9 -f "containerd-shim-runc-v2 .*-address $RN_RUN/containerd.sock" 2>/dev/null
  # Every process of every pod, until none is left.
  local deadline=$((SECONDS + 30)) procs
  while :; do
    procs=$(find /sys/fs/cgroup -path '*kubepods*' -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    [[ -z $procs ]] && break
    ((SECONDS < deadline)) || { rn_log "day2 reboot: pods' processes survive: $procs"; return 1; }
    kill -9 $procs 2>/dev/null
    sleep 0.2
  done
  for name in kubelet kube-proxy containerd; do
    pid=${RN_PID_OF[$name]:-}
    [[ -n $pid ]] && poll 30 bash -c "! kill -0 $pid"
  done
  # What a reboot clears: the mounts under kubelet's pods and the runtime's state, /run, the
  # network namespaces, the bridge with its veths, the pods' cgroups.
  rn_umount_under /var/lib/kubelet
  rn_umount_under "$RN_RUN"
  local ns
  for ns in /run/netns/cni-*; do
    [[ -e $ns ]] || continue
    grep -qx "$ns" "$RN_WORK/host.before" 2>/dev/null && continue
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null
    rm -f "$ns"
  done
  ip link del "$RN_BRIDGE" 2>/dev/null
  rn_remove_cgroups
  rm -rf --one-file-system -- "$RN_RUN"
  ndr_run_containerd_restore "$RN_WORK/run-containerd.before"
}

d2_scenario_reboot() {
  local start offset s0 l extra= D2_SINCE
  local -A rec=() new=()
  D2_SINCE=$(d2_since_now)
  start=$(d2_now) offset=$(d2_log_size) s0=$SECONDS
  d2_power_cut || extra="the pods' processes could not all be stopped"
  # A pod of each driver created while the node is down.
  for l in a b; do d2_pod "day2-$l-new" "$l" inline | rn_kubectl apply -f - >&2; done
  if ! { rn_start_containerd && rn_start_kubelet && rn_start_kube_proxy; }; then
    result FAIL day2-reboot "the node did not come up again (logs under $RN_WORK/logs)"
    return
  fi
  # The power cut stopped every registrar, so each starts once more: its restarts are counted from
  # that first start on, when kubelet first reports the new container running.
  local -A base=()
  for l in a b; do
    base[$l]=
    poll 120 d2_registrar_running "$l" && base[$l]=$(d2_restarts "$l")
  done
  d2_when_registered_and_pod "$s0" 300 "$offset"
  for l in a b; do rec[$l]=${D2_WHEN[$l]} new[$l]=${D2_WHEN_POD[$l]}; done
  for l in a b; do
    local problems=
    [[ -n ${base[$l]} ]] || problems="the registrar's container was not seen running after the power cut"
    D2_PODS_RESTARTED=1 d2_row reboot "every node process killed, /run cleared, started again" \
      "$l" "$start" "$offset" "${new[$l]}" "${rec[$l]}" "${base[$l]:-$(d2_restarts "$l")}" \
      "$problems" "seconds from the power cut; restarts after the registrar's first start since it"
  done
  # The containers that run from now on are the ones later scenarios must keep.
  local pod
  for pod in day2-a-pv day2-a-inline day2-b-pv day2-b-inline; do
    poll 60 d2_identity_known "$pod"
    D2_IDENTITY[$pod]=$(d2_pod_identity "$pod")
  done
  rn_kubectl -n default delete pod day2-a-new day2-b-new --wait=true --timeout=120s >&2
  d2_verdict reboot "a power cut (every node process killed at once; /run, the mounts, network namespaces and cgroups gone), then containerd, kubelet and kube-proxy started: both registrars registered again, kubelet mounted every pod's volume again, a pod created meanwhile ran" "$extra"
}

# --- all of them -----------------------------------------------------------------------------

run_day2() {  # run_day2 NAME...: the scenarios asked for, in the order of D2_ALL
  local why= name
  mkdir -p "$D2_DIR"
  : >"$D2_ROWS"
  if [[ -z ${D2_GO_IMAGE:-} ]]; then
    why="no Go registrar $RN_GO_REGISTRAR_TAG to compare with: ${D2_GO_WHY:-give --source-dir with a node-driver-registrar clone}"
  elif ! d2_setup; then
    why="the setup failed: $D2_WHY"
  fi
  for name in "${D2_ALL[@]}"; do
    [[ " $* " == *" $name "* ]] || continue
    if [[ -n $why ]]; then
      result FAIL "day2-$name" "not run: $why"
      continue
    fi
    rn_log "day2: scenario $name"
    D2_ROWS_NOW=()
    "d2_scenario_${name//-/_}"
  done
  d2_watch_stop
  if [[ -s $D2_ROWS ]]; then
    d2_obs table "$D2_ROWS" >"$D2_DIR/table.md"
    echo
    echo "Day-two scenarios, Kubernetes $RN_KUBE_VERSION, commit ${RN_COMMIT:-?}, $(date -u +%Y-%m-%d):"
    cat "$D2_DIR/table.md"
  fi
}

#!/usr/bin/env bash
# Unit tests of the day-two harness's shell parts (real-node/day2.sh), with kubectl answered from
# files: what each function concludes from what the API server says.
set -uo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
here=$PWD/test/e2e
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/d2h.XXXXXX") || exit 1
trap 'rm -rf -- "$work"' EXIT
RN_WORK=$work
RN_NODE=node-1
# shellcheck source=real-node/day2.sh
source "$here/real-node/day2.sh"

# The harness's helpers, as real-node.sh and checks.sh define them, answered from $work/api.
mkdir -p "$work/api"
poll() { shift; "$@" >/dev/null 2>&1; }
rn_kubectl() {
  case "$*" in
    "-n default exec "*" -- cat /data/marker") cat "$work/api/marker-$4" 2>/dev/null ;;
    "-n default get pod "*" -o json") cat "$work/api/pod-$5.json" 2>/dev/null ;;
    "-n kube-system get pods -l app=day2-"*" -o json") cat "$work/api/ds-${6#app=day2-}.json" ;;
    "get csinode $RN_NODE -o json") cat "$work/api/csinode.json" ;;
    "-n kube-system logs "*" -c csi-node-driver-registrar --since-time="*)
      cat "$work/api/log-$4" ;;
    *) echo "rn_kubectl: not answered here: $*" >&2; return 1 ;;
  esac
}
pod_json() {  # pod_json NAME UID CONTAINER_ID RESTARTS
  printf '{"metadata": {"uid": "%s"}, "status": {"containerStatuses": [{"name": "app", "containerID": "%s", "restartCount": %s}]}}\n' \
    "$2" "$3" "$4" >"$work/api/pod-$1.json"
}

failures=0
expect() {  # expect WHAT GOT WANT
  if [[ $2 == "$3" ]]; then
    echo "ok: $1"
  else
    echo "FAIL: $1: got '$2', want '$3'"
    failures=$((failures + 1))
  fi
}

# Two running pods of driver a that wrote their markers, recorded as the setup records them.
running_pods() {
  local pod
  D2_MARKER=() D2_IDENTITY=()
  for pod in day2-a-pv day2-a-inline; do
    echo "node 1" >"$work/api/marker-$pod"
    pod_json "$pod" "uid-$pod" "containerd://c-$pod" 0
    D2_MARKER[$pod]=$(d2_marker_of "$pod")
    D2_IDENTITY[$pod]=$(d2_pod_identity "$pod")
  done
}
running_pods
expect "both pods untouched are kept" "$(d2_pods_kept a)" 2/2

# The app container of one pod restarted on a volume mounted again: it reads the same marker,
# and its volume was not kept.
pod_json day2-a-pv uid-day2-a-pv containerd://c-new 1
expect "an app container restarted on the same marker is not kept" "$(d2_pods_kept a)" 1/2

# After a reboot every container is new: the same pod objects with their markers are kept; a pod
# made anew under the same name is not.
expect "a reboot's new containers are kept" "$(D2_PODS_RESTARTED=1 d2_pods_kept a)" 2/2
pod_json day2-a-inline uid-other containerd://c-x 0
expect "a pod object made anew is not kept, even after a reboot" \
  "$(D2_PODS_RESTARTED=1 d2_pods_kept a)" 1/2

# A pod whose container the API server has not reported yet has no identity to keep.
pod_json day2-a-inline uid-day2-a-inline "" 0
python3 - "$work/api/pod-day2-a-inline.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
del p["status"]["containerStatuses"][0]["containerID"]
json.dump(p, open(sys.argv[1], "w"))
PY
d2_identity_known day2-a-inline && got=yes || got=no
expect "a container not reported yet is not known" "$got" no
d2_identity_known day2-a-pv && got=yes || got=no
expect "a reported container is known" "$got" yes

# A lost marker is not kept.
pod_json day2-a-inline uid-day2-a-inline containerd://c-day2-a-inline 0
echo "node 2" >"$work/api/marker-day2-a-inline"
expect "a pod reading another marker is not kept" "$(D2_PODS_RESTARTED=1 d2_pods_kept a)" 1/2

# The registrar's own word that kubelet confirmed the registration, in each registrar's log form:
# ours (klog text), and the Go registrar v2.17.0's, whose status is protobuf's text form.
for l in a b; do
  printf '{"items": [{"metadata": {"name": "day2-%s-x"}}]}\n' "$l" >"$work/api/ds-$l.json"
done
printf '%s\n' 'I1129 02:40:10.581656       1 registrar.cc:667] "Registration notified" registered=true' \
  >"$work/api/log-day2-b-x"
printf '%s\n' 'I1129 02:40:56.609683       1 main.go:102] "Received NotifyRegistrationStatus call" status="plugin_registered:true"' \
  >"$work/api/log-day2-a-x"
d2_confirmed_since 2026-11-29T02:39:56Z b && got=yes || got=no
expect "ours confirmed" "$got" yes
d2_confirmed_since 2026-11-29T02:39:56Z a && got=yes || got=no
expect "the Go registrar confirmed" "$got" yes
printf '%s\n' 'I1129 02:40:56.609683       1 main.go:102] "Received NotifyRegistrationStatus call" status="error:\"RegisterPlugin error -- plugin registration failed\""' \
  'I1129 02:40:57.1       1 registrar.cc:667] "Registration notified" err="RegisterPlugin error" registered=false' \
  >"$work/api/log-day2-a-x"
d2_confirmed_since 2026-11-29T02:39:56Z a && got=yes || got=no
expect "a refusal is no confirmation" "$got" no

# A rollout's old pod, being deleted, does not lend its restarts to the new registrar.
cat >"$work/api/ds-b.json" <<'JSON'
{"items": [
  {"metadata": {"name": "day2-b-old", "deletionTimestamp": "2026-11-29T02:00:00Z"},
   "status": {"containerStatuses": [{"name": "csi-node-driver-registrar", "restartCount": 3}]}},
  {"metadata": {"name": "day2-b-new"},
   "status": {"containerStatuses": [{"name": "csi-node-driver-registrar", "restartCount": 1},
                                    {"name": "driver", "restartCount": 5}]}}]}
JSON
expect "restarts of the pod not being deleted" "$(d2_restarts b)" 1

# The swap's rule: no column worse than the yardstick's.
row() {  # row DEREGISTERED FAILED REMOVED LONGEST_AWAY RECOVERED RESTARTS
  printf '{"kubelet": {"deregistered": %s, "failed": %s}, "csinode": {"removed": %s, "longest_away_s": %s}, "recovered": "%s", "restarts": %s}' "$@"
}
yard=$(row 1 0 1 1.0 "3 s" 0)
expect "the same as the yardstick is not worse" "$(d2_not_worse "$yard" "$(row 1 0 1 1.0 "3 s" 0)")" ""
expect "within 2 s of the yardstick is not worse" \
  "$(d2_not_worse "$yard" "$(row 1 0 1 2.9 "5 s" 0)")" ""
expect "a restart is worse" "$(d2_not_worse "$yard" "$(row 1 0 1 1.0 "3 s" 2)")" \
  "2 restarts against the Go → Go restart's 0"
expect "longer away is worse" "$(d2_not_worse "$yard" "$(row 1 0 1 9.5 "3 s" 0)")" \
  "CSINode entry away 9.5 s against the Go → Go restart's 1.0 s"
expect "later registered is worse" "$(d2_not_worse "$yard" "$(row 1 0 1 1.0 "30 s" 0)")" \
  "registered again after 30 s against the Go → Go restart's 3 s"
expect "never registered is worse" "$(d2_not_worse "$yard" "$(row 1 0 1 1.0 "no" 0)")" \
  "not registered again, where the Go → Go restart was"
expect "more failures are worse" "$(d2_not_worse "$yard" "$(row 1 2 1 1.0 "3 s" 0)")" \
  "kubelet failed 2 against the Go → Go restart's 0"

# Registered again: kubelet's log, CSINode, and after a change (D2_SINCE) the registrar's own
# confirmation, since CSINode may still hold the entry from before the change.
mkdir -p "$work/logs"
printf '%s\n' 'I1129 02:40:10.5 1 csi_plugin.go:119] kubernetes.io/csi: Register new plugin with name: a.day2.csi.example.com at endpoint: /var/lib/kubelet/plugins/a.day2.csi.example.com/csi.sock' \
  >"$work/logs/kubelet.log"
echo '{"spec": {"drivers": [{"name": "a.day2.csi.example.com", "nodeID": "node-1"}]}}' \
  >"$work/api/csinode.json"
d2_registered_since 0 a && got=yes || got=no
expect "registered by kubelet's log and CSINode" "$got" yes
D2_SINCE=2026-11-29T02:39:56Z d2_registered_since 0 a && got=yes || got=no
expect "after a change, not without the registrar's confirmation" "$got" no
printf '%s\n' 'I1129 02:40:56.6 1 main.go:102] "Received NotifyRegistrationStatus call" status="plugin_registered:true"' \
  >"$work/api/log-day2-a-x"
D2_SINCE=2026-11-29T02:39:56Z d2_registered_since 0 a && got=yes || got=no
expect "after a change, with it" "$got" yes
printf '%s\n' 'I1129 02:41:10.5 1 csi_plugin.go:271] kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin a.day2.csi.example.com, endpoint /x' \
  >>"$work/logs/kubelet.log"
D2_SINCE=2026-11-29T02:39:56Z d2_registered_since 0 a && got=yes || got=no
expect "deregistered since" "$got" no

# A requirement judged against another row fails the row itself, in the table's rows too.
D2_ROWS=$work/rows.jsonl
D2_ROWS_NOW=('{"step": "yard", "verdict": "ok"}' '{"step": "to ours", "verdict": "ok"}'
  '{"step": "to go", "verdict": "FAIL: slow"}')
printf '%s\n' "${D2_ROWS_NOW[@]}" >"$D2_ROWS"
d2_row_fail 1 "worse than the yardstick: 2 restarts"
d2_row_fail -1 "worse than the yardstick: later"
expect "the row failed" "$(d2_row_field "${D2_ROWS_NOW[1]}" verdict)" \
  "FAIL: worse than the yardstick: 2 restarts"
expect "a failed row says both" "$(d2_row_field "${D2_ROWS_NOW[2]}" verdict)" \
  "FAIL: slow; worse than the yardstick: later"
expect "the run's rows say so too" \
  "$(python3 -c 'import json, sys; print(" | ".join(json.loads(l)["verdict"] for l in open(sys.argv[1]) if l.strip()))' "$D2_ROWS")" \
  "ok | FAIL: worse than the yardstick: 2 restarts | FAIL: slow; worse than the yardstick: later"

# api-away's assertion that the scenario happened: kubelet's log up to the API server's return
# shows a failed registration of the driver, counted after the step's offset only, and never
# another driver's.
printf '%s\n' \
  'E1129 03:00:01.1 1 goroutinemap.go:150] Operation for "/var/lib/kubelet/plugins_registry/b.day2.csi.example.com-reg.sock" failed. Error: RegisterPlugin error -- plugin registration failed with err: error updating Node object' \
  >"$work/away.log"
offset=$(stat -c %s "$work/away.log")
printf '%s\n' \
  'E1129 03:00:09.1 1 goroutinemap.go:150] Operation for "/var/lib/kubelet/plugins_registry/a.day2.csi.example.com-reg-3.sock" failed. Error: RegisterPlugin error -- plugin registration failed with err: error updating CSINode object' \
  >>"$work/away.log"
expect "a failure under another socket name counts" "$(d2_failed_in "$work/away.log" 0 a)" 1
expect "another driver's failure does not" "$(d2_failed_in "$work/away.log" "$offset" b)" 0

# One row as d2_row writes it: restarts counted from before the change less what the harness
# caused, and a watch that connected again only where the harness broke it.
running_pods
cat >"$work/api/ds-a.json" <<'JSON'
{"items": [{"metadata": {"name": "day2-a-x"},
  "status": {"containerStatuses": [{"name": "csi-node-driver-registrar", "restartCount": 3}]}}]}
JSON
declare -A D2_IMAGE_OF=([a]=go-image)
D2_GO_IMAGE=go-image RN_GO_REGISTRAR_TAG=v2.17.0
rn_log() { :; }
D2_WATCH=$work/watch.txt
printf '%s\n' "100.0 @5 a.day2.csi.example.com" "120.0 !connected" \
  "120.1 @9 a.day2.csi.example.com" >"$D2_WATCH"
: >"$work/logs/kubelet.log"
D2_ROWS_NOW=()
# Two restarts before the step, the harness's kill of the registrar the third: none of them its own.
D2_WINDOW_END=200 D2_WATCH_BREAKS=1 d2_row api-away "away 1 min" a 90 0 – 5 "$((2 + 1))" ""
expect "the harness's kill is not the registrar's restart" \
  "$(d2_row_field "${D2_ROWS_NOW[0]}" restarts)" 0
expect "a watch broken by the harness alone is no problem" \
  "$(d2_row_field "${D2_ROWS_NOW[0]}" verdict)" ok
D2_WINDOW_END=200 d2_row swap "to ours" a 90 0 3 3 1 ""
expect "a restart of its own counts" "$(d2_row_field "${D2_ROWS_NOW[1]}" restarts)" 2
expect "a watch that connected again by itself fails the row" \
  "$(d2_row_field "${D2_ROWS_NOW[1]}" verdict)" \
  "FAIL: the CSINode watch connected again 1 times in this window: changes in between are not seen"

# Both drivers timed at once, each from the change: b, ready at once, is not timed from a's end.
# Each check answers by how often it was asked, and the loops' clock is the test's own: each
# `sleep N` they make moves SECONDS on by N at once. The later check succeeds three polls after
# the first, so its time is 3 s more whatever the machine's speed (only a stall of over 2 s
# between two polls could blur the order), and the loops take no real time.
clock=0
sleep() { clock=$((clock + $1)); SECONDS=$clock; }
SECONDS=0
ready_on_poll() {  # ready_on_poll WHAT LETTER: succeeds from the poll named in $work/at-WHAT-LETTER
  local n
  n=$(($(cat "$work/polls-$1-$2" 2>/dev/null || echo 0) + 1))
  echo "$n" >"$work/polls-$1-$2"
  ((n >= $(cat "$work/at-$1-$2")))
}
echo 4 >"$work/at-reg-a"
echo 1 >"$work/at-reg-b"
d2_when_each "$SECONDS" 30 ready_on_poll reg && got=done || got=timeout
expect "both timed" "$got" done
(( D2_WHEN[b] < D2_WHEN[a] )) && got=yes || got="no (a ${D2_WHEN[a]} s, b ${D2_WHEN[b]} s)"
expect "the driver ready first is timed first" "$got" yes
echo 99 >"$work/at-reg-b"
rm -f "$work"/polls-*
d2_when_each "$SECONDS" 2 ready_on_poll reg && got=done || got=timeout
expect "one never ready is a timeout" "$got:${D2_WHEN[b]}" timeout:no

# The registration and the pod created during the change are timed in one loop: a pod running
# before the registration is timed when it ran, not after the registration.
rm -f "$work"/polls-*
echo 4 >"$work/at-reg-a" && echo 4 >"$work/at-reg-b"
echo 1 >"$work/at-pod-a" && echo 1 >"$work/at-pod-b"
d2_registered_since() { ready_on_poll reg "$2"; }
d2_new_pod_ready() { ready_on_poll pod "$1"; }
d2_when_registered_and_pod "$SECONDS" 30 0 && got=done || got=timeout
expect "registration and pod timed" "$got" done
(( D2_WHEN_POD[a] < D2_WHEN[a] && D2_WHEN_POD[b] < D2_WHEN[b] )) && got=yes ||
  got="no (registered a ${D2_WHEN[a]} s, b ${D2_WHEN[b]} s; pods ${D2_WHEN_POD[a]} s, ${D2_WHEN_POD[b]} s)"
expect "the pod that ran first is timed first" "$got" yes

# After a fault, ours' row must show no attempt ahead of kubelet's back-off and a registration
# within 2 x 2 min 2 s (and 16 s); the Go registrar's row is reported, not judged.
D2_GO_IMAGE=go-image
D2_IMAGE_OF=([a]=go-image [b]=ours-image)
paced='{"within_backoff": true, "ahead": null}'
ahead='{"within_backoff": false, "ahead": {"at_s": 40.0, "after_s": 8.5, "backoff_s": 32.0}}'
expect "ours paced and back in time" "$(d2_ours_paced b "$paced" 200)" ""
expect "ours ahead of the back-off" "$(d2_ours_paced b "$ahead" 200)" \
  "; a registration attempt 40.0 s into the fault came 8.5 s after the one before, where kubelet's own back-off waits 32.0 s"
expect "ours back too late" "$(d2_ours_paced b "$paced" 261)" \
  "; registered again 261 s after the fault's end, later than 2 x 2 min 2 s allow"
expect "ours never back is the row's own failure" "$(d2_ours_paced b "$paced" no)" ""
expect "the Go registrar is not judged" "$(d2_ours_paced a "$ahead" 900)" ""

# The crash loop is seen in the registrar container's state, not another container's.
printf '{"items": [{"metadata": {"name": "day2-b-x"}}]}\n' >"$work/api/ds-b.json"
printf '{"status": {"containerStatuses": [{"name": "csi-node-driver-registrar", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}\n' \
  >"$work/api/pod-day2-b-x.json"
rn_kubectl() {
  case "$*" in
    "-n kube-system get pods -l app=day2-"*" -o json") cat "$work/api/ds-${6#app=day2-}.json" ;;
    "-n kube-system get pod "*" -o json") cat "$work/api/pod-$5.json" 2>/dev/null ;;
    *) echo "rn_kubectl: not answered here: $*" >&2; return 1 ;;
  esac
}
d2_registrar_waiting b && got=yes || got=no
expect "the registrar in CrashLoopBackOff" "$got" yes
printf '{"status": {"containerStatuses": [{"name": "csi-node-driver-registrar", "state": {"running": {}}}, {"name": "sample-csi-driver", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}\n' \
  >"$work/api/pod-day2-b-x.json"
d2_registrar_waiting b && got=yes || got=no
expect "another container's crash loop is not the registrar's" "$got" no

((failures == 0)) || { echo "$failures failed"; exit 1; }

#!/usr/bin/env bash
# Replays each golden of test/kubelet-goldens/ with kubeletclient at that golden's release and
# compares, phase by phase, what kubeletclient sent the sample driver and the files it wrote with
# what the release's real kubelet code did (record.sh, harness/): registration (the driver's
# record and the CSINode and Node), the demo pod's publish, stats (with CSIVolumeHealth), expand,
# republish and unpublish (requests in order, by compare_calls.py), and kubelet's files after
# publish and after unpublish. Needs neither Go nor a network: the goldens are committed JSON.
#
#   replay_test.sh [--scenario=NAME] [GOLDEN_DIR...]
#       (default: every v1.N.P directory beside this script, and in each every scenario of
#       scenarios/*/scenario.json whose golden it holds: the demo's in v1.N.P/, another's in
#       v1.N.P/<name>/)
#
# Each scenario's scenario.json drives its replay: the driver's flags, the registrar's, the
# phases in order with the kubeletclient command, its arguments and objects ("base": the golden's
# objects/, "resized": scenarios/<name>/<resized_objects>, "expanded": the resized claim as
# kubeletclient says kubelet leaves it), what is compared after it ("files": kubelet's files after
# publish; "ownership": the group and mode of each volume's target after publish, against
# ownership-after-publish.txt; "health": the pod's status.volumeHealth and the CSINode's status
# after stats, against health-after-stats.json; "claim": the claim's status after expand; "no-files": nothing left
# after unpublish; "dirs": the directories left under plugins/kubernetes.io/csi, against
# dirs-after-unpublish.txt).
# KG_KUBELETCLIENT, KG_DRIVER and KG_REGISTRAR, when set, name the binaries to use.
#
# The replay's world is the golden's: the same objects (test/kubelet-goldens/<v>/objects), the
# same driver flags, an SELinux node (--host-selinux=true; the harness used kubelet's fake
# translator, which says SELinux is on), no host changes (the harness fakes kubelet's bind mounts
# and loop devices). One difference is taken out on purpose: our registrar runs without
# --requires-publish-pod here, because no kubelet release calls CSIRegistration.GetCSIDriverInfo
# (kubeletclient does, and then sends pod information that kubelet would not send); that
# difference is the real-node comparison's explained one (docs/real-node.md).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
find_bin() {
  local rel=$1
  for candidate in "${TEST_SRCDIR:-/nonexistent}/${TEST_WORKSPACE:-_main}/$rel" \
                   "$here/../../bazel-bin/$rel"; do
    [[ -x $candidate ]] && { echo "$candidate"; return; }
  done
  echo "replay_test: cannot find $rel (run it with bazel test //test/kubelet-goldens:replay_test)" >&2
  exit 2
}
kubeletclient=${KG_KUBELETCLIENT:-$(find_bin kubeletclient/kubeletclient)}
driver=${KG_DRIVER:-$(find_bin test/csidriver/sample-csi-driver)}
registrar=${KG_REGISTRAR:-$(find_bin registrar/csi-node-driver-registrar)}
compare=$here/../e2e/real-node/compare_calls.py
python=/usr/bin/python3

# --as=1.N replays every golden as that release instead of its own, and --expect-differences
# passes only if that shows differences: the judge's own test (a replay at the wrong release
# must not come out the same).
as_release=""
expect_differences=false
goldens=()
only_scenario=""
for arg in "$@"; do
  case $arg in
    --as=*) as_release=${arg#--as=} ;;
    --scenario=*) only_scenario=${arg#--scenario=} ;;
    --expect-differences) expect_differences=true ;;
    -*) echo "replay_test: unknown flag $arg" >&2; exit 2 ;;
    *) goldens+=("$arg") ;;
  esac
done
if [[ ${#goldens[@]} -eq 0 ]]; then
  for d in "$here"/v1.*; do [[ -d $d ]] && goldens+=("$d"); done
fi
if [[ ${#goldens[@]} -eq 0 ]]; then
  echo "replay_test: no goldens found beside $here" >&2
  exit 1
fi

# The scenarios, the demo's first.
scenarios=()
for f in "$here"/scenarios/demo/scenario.json "$here"/scenarios/*/scenario.json; do
  [[ -f $f ]] || continue
  name=$(basename "$(dirname "$f")")
  [[ -n $only_scenario && $name != "$only_scenario" ]] && continue
  [[ " ${scenarios[*]} " == *" $name "* ]] || scenarios+=("$name")
done
# sc_get FIELD: a top-level field of the scenario's scenario.json (lists joined by newlines).
sc_get() {
  "$python" -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2], "")
v = "\n".join(v) if isinstance(v, list) else v
v and print(v)' "$scenario_json" "$1"
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Polls (with a deadline only a hang reaches) until `test -e`/grep holds.
wait_for() {
  local what=$1; shift
  for _ in $(seq 1 6000); do "$@" 2>/dev/null && return 0; sleep 0.01; done
  fail "$what: not within 60 s"
  return 1
}

# phase NAME: the golden's 1-based inclusive [first, last] of NAME, as "first last".
phase() {
  "$python" -c 'import json,sys; p=json.load(open(sys.argv[1]))[sys.argv[2]]; print(p[0], p[1])' \
    "$golden/phases.json" "$1"
}

lines() { [[ -f $1 ]] && wc -l <"$1" || echo 0; }
# record_has N: the driver's record has at least N lines (read again at every poll).
record_has() { test "$(lines "$record")" -ge "$1"; }

replay() {
  local version_dir=$1 scenario=$2
  local version minor work label
  scenario_json=$here/scenarios/$scenario/scenario.json
  version=$(basename "$version_dir")
  golden=$version_dir
  local subdir
  subdir=$(sc_get golden_subdir)
  [[ -n $subdir ]] && golden=$version_dir/$subdir
  [[ -f $golden/record.jsonl ]] || return 0
  minor=${version#v}
  minor=${minor%.*}
  [[ -n $as_release ]] && minor=$as_release
  # The demo's lines are as they were before there were scenarios; another's say which.
  label=$version
  if [[ $scenario == demo ]]; then
    echo "=== $version (kubeletclient --kubelet-version=$minor)"
  else
    label="$version $scenario"
    echo "=== $version scenario $scenario (kubeletclient --kubelet-version=$minor)"
  fi
  version=$label
  work=$(mktemp -d /tmp/ndr-kg-XXXXXX)
  local pids=()
  local objects=$golden/objects
  local record=$work/record.jsonl root=$work/kubelet reg=$work/reg
  mkdir -p "$root" "$reg"
  openssl genrsa -out "$work/sa.key" 2048 2>/dev/null ||
    { fail "$version: openssl could not make a service-account key"; return; }

  local driver_flags=() registrar_flags=()
  mapfile -t driver_flags < <(sc_get driver_flags)
  mapfile -t registrar_flags < <(sc_get registrar_flags_replay)
  "$driver" --endpoint="unix://$work/csi.sock" "${driver_flags[@]}" \
    --record="$record" 2>"$work/driver.log" &
  pids+=($!)
  wait_for "$version: the driver's socket" test -S "$work/csi.sock" || { kill "${pids[@]}"; return; }

  # Registration: kubeletclient watch at the release, with the scenario's CSIDriver (its
  # nodeAllocatableUpdatePeriodSeconds), then our registrar.
  local csidrivers="" f
  while read -r f; do
    [[ $f == csidriver*.yaml ]] && csidrivers+=${csidrivers:+,}$objects/$f
  done < <(sc_get object_files)
  "$kubeletclient" watch --kubelet-version="$minor" --plugin-registry-dir="$reg" \
    --node-status-file="$work/status.json" --node-name=demo-node --objects="$csidrivers" \
    2>"$work/watch.log" &
  pids+=($!)
  "$registrar" --csi-address="$work/csi.sock" --kubelet-registration-path="$work/csi.sock" \
    --plugin-registration-path="$reg" "${registrar_flags[@]}" 2>"$work/registrar.log" &
  pids+=($!)
  wait_for "$version: registration" grep -q '"sample.csi.example.com"' "$work/status.json" ||
    { kill "${pids[@]}"; return; }
  wait_for "$version: the registration's requests in the record" record_has 2 ||
    { kill "${pids[@]}"; return; }
  local first last
  read -r first last < <(phase registration)
  # The registration's requests, as recorded by the driver on both sides (the registrar's
  # GetPluginInfo, kubelet's NodeGetInfo).
  if "$python" - "$golden/record.jsonl" "$first" "$last" "$record" <<'EOF'
import json, sys
golden, first, last, ours = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
real = [json.loads(l) for i, l in enumerate(open(golden), 1) if first <= i <= last]
mine = [json.loads(l) for l in open(ours)]  # all of it: nothing else has run yet
same = [json.dumps(c, sort_keys=True) for c in real] == [json.dumps(c, sort_keys=True) for c in mine]
print("registration: %s: %s" % ("SAME" if same else "DIFFERENT",
      ", ".join(c["method"] for c in real)))
if not same:
    print("  real kubelet:  %s" % [json.dumps(c, sort_keys=True) for c in real])
    print("  kubeletclient: %s" % [json.dumps(c, sort_keys=True) for c in mine])
sys.exit(0 if same else 1)
EOF
  then :; else fail "$version: registration requests"; fi
  "$python" "$compare" node "$golden/csinode.json" "$golden/node.json" "$work/status.json" \
    sample.csi.example.com || fail "$version: CSINode and Node"

  local common=(--kubelet-version="$minor" --pod="$objects/pod.yaml"
    --plugin-registry-dir="$reg" --root-dir="$root" --node-name=demo-node
    --allowed-inline-drivers=sample.csi.example.com --host-selinux=true --block-host-ops=skip
    --service-account-key-file="$work/sa.key")
  # The objects of each phase: the golden's (but the pod), the scenario's resized ones, and the
  # resized claim as kubeletclient says kubelet leaves it (after "claim").
  local base="" resized_file
  while read -r f; do
    [[ $f == pod.yaml ]] && continue
    base+=${base:+,}$objects/$f
  done < <(sc_get object_files)
  resized_file=$(sc_get resized_objects)
  [[ -n $resized_file ]] && resized_file=$here/scenarios/$scenario/$resized_file
  # Before 1.28 the claim's resize status is status.resizeStatus (NodeExpansionPending), not
  # allocatedResourceStatuses: the harness writes what the release's API has, and so does this.
  # (A scenario without an expand phase has no resized objects.)
  if [[ -n $resized_file && ${minor#1.} -lt 28 ]]; then
    sed 's/allocatedResourceStatuses: {storage: NodeResizePending}/resizeStatus: NodeExpansionPending/' \
      "$resized_file" >"$work/volume-resized-$scenario.yaml"
    cmp -s "$resized_file" "$work/volume-resized-$scenario.yaml" &&
      fail "$version: $resized_file has no 'allocatedResourceStatuses: {storage: NodeResizePending}' to write as 1.$minor's resizeStatus"
    resized_file=$work/volume-resized-$scenario.yaml
  fi
  local resized=${base/$objects\/volume.yaml/$resized_file}
  local expanded=${base/$objects\/volume.yaml/$work\/volume-expanded.yaml}

  # Each phase: the command, its report, then the comparison with the golden's window.
  run_phase() {
    local name=$1 objects_arg=$2 keep=$3; shift 3
    local sent_before
    sent_before=$(lines "$record")
    "$kubeletclient" "$@" "${common[@]}" --objects="$objects_arg" >"$work/$name.json" \
      2>"$work/$name.log"
    # The report is what is compared with the golden; first, that it is what the driver got.
    "$python" "$compare" sent "$version" "$name" "$record" "$sent_before" "$(lines "$record")" \
      "$work/$name.json" || fail "$version: $name: the report is not what the driver received"
    read -r first last < <(phase "$name")
    local extra=("${empty[@]}")
    [[ $keep == True ]] && extra+=(--keep-periodic)
    "$python" "$compare" calls "$version" "$name" "$golden/record.jsonl" "$((first - 1))" \
      "$last" "$work/$name.json" "$root" "${extra[@]}" || fail "$version: $name requests"
  }
  # The allocatable phase: the watch started at registration goes on; where the real kubelet
  # asked NodeGetInfo again (the golden's window holds the calls), wait for as many calls and
  # for the node status to show the CSINode the real code left (csinode-after-allocatable.json),
  # then compare both. Where it asked nothing, nothing can be waited for: watch for as long as
  # the harness did (two periods and two seconds) and compare what came, which must be nothing.
  replay_allocatable() {
    local period="" a
    for a in "$@"; do [[ $a == --period=* ]] && period=${a#--period=}; done
    period=${period%s}
    [[ $period =~ ^[0-9]+$ ]] || { fail "$version: allocatable: --period=Ns expected, got '$*'"; return; }
    local before want
    read -r first last < <(phase allocatable)
    want=$((last - first + 1))
    before=$(lines "$record")
    if ((want > 0)); then
      wait_for "$version: allocatable: $want requests" record_has $((before + want))
      node_as_left() {
        "$python" "$compare" node "$golden/csinode-after-allocatable.json" "$golden/node.json" \
          "$work/status.json" sample.csi.example.com >/dev/null
      }
      wait_for "$version: allocatable: the CSINode as the real kubelet left it" node_as_left
    else
      sleep $((2 * period + 2))
    fi
    if "$python" - "$golden/record.jsonl" "$first" "$last" "$record" "$before" "$version" <<'EOF'
import json, sys
golden, first, last, ours, before, version = sys.argv[1:7]
real = [json.dumps(json.loads(l), sort_keys=True) for i, l in enumerate(open(golden), 1)
        if int(first) <= i <= int(last)]
mine = [json.dumps(json.loads(l), sort_keys=True) for i, l in enumerate(open(ours), 1)
        if i > int(before)][:len(real) + 1]  # one more: a call too many is a difference
same = real == mine
print("%s allocatable: %s: %s" % (version, "SAME" if same else "DIFFERENT",
      ", ".join(json.loads(c)["method"] for c in real) or "no requests from either"))
if not same:
    print("  real kubelet:  %s" % real)
    print("  kubeletclient: %s" % mine)
sys.exit(0 if same else 1)
EOF
    then :; else fail "$version: allocatable requests"; fi
    "$python" "$compare" node "$golden/csinode-after-allocatable.json" "$golden/node.json" \
      "$work/status.json" sample.csi.example.com || fail "$version: CSINode after allocatable"
  }
  copy_kubelet_files() {  # FROM_ROOT TO_DIR: kubelet's vol_data.json files, paths kept
    rm -rf "$2"; mkdir -p "$2"
    (cd "$1" && find . -name vol_data.json -type f) | while read -r f; do
      mkdir -p "$2/$(dirname "$f")"; cp "$1/$f" "$2/$f"
    done
  }
  local name command objects_kind keep after args empty
  while IFS=$'\t' read -r -a fields; do
    name=${fields[0]} command=${fields[1]} objects_kind=${fields[2]} keep=${fields[3]}
    after=${fields[4]}
    # The phase was recorded doing nothing (no request, no file): nothing from kubeletclient
    # either is then the same, not a phase the replay missed.
    empty=()
    [[ ${fields[5]} == True ]] && empty=(--empty-is-same)
    args=("${fields[@]:6}")
    [[ $name == registration ]] && continue
    if [[ $name == allocatable ]]; then
      replay_allocatable "${args[@]}"
      continue
    fi
    case $command in
      unpublish)
        local sent_before
        sent_before=$(lines "$record")
        "$kubeletclient" unpublish --kubelet-version="$minor" --pod="$objects/pod.yaml" \
          --plugin-registry-dir="$reg" --root-dir="$root" --block-host-ops=skip "${args[@]}" \
          >"$work/unpublish.json" 2>"$work/unpublish.log"
        "$python" "$compare" sent "$version" "$name" "$record" "$sent_before" \
          "$(lines "$record")" "$work/unpublish.json" ||
          fail "$version: $name: the report is not what the driver received"
        read -r first last < <(phase "$name")
        "$python" "$compare" calls "$version" "$name" "$golden/record.jsonl" "$((first - 1))" "$last" \
          "$work/unpublish.json" "$root" "${empty[@]}" || fail "$version: $name requests"
        ;;
      *)
        local objects_arg=$base
        [[ $objects_kind == resized ]] && objects_arg=$resized
        [[ $objects_kind == expanded ]] && objects_arg=$expanded
        run_phase "$name" "$objects_arg" "$keep" "$command" "${args[@]}"
        ;;
    esac
    local check
    for check in ${after//,/ }; do
      case $check in
        files)
          # kubelet's files after publish (the driver's own are not compared: files-skipped.txt).
          copy_kubelet_files "$root" "$work/files-after-publish"
          "$python" "$compare" files "$version publish" "$golden/files-after-publish" \
            "$work/files-after-publish" "$root" "${empty[@]}" || fail "$version: files after publish"
          ;;
        ownership)
          # The group and mode of each volume's target after publish: kubelet's fsGroup change
          # (or the driver's, given volume_mount_group) against kubeletclient's.
          "$python" - "$golden/ownership-after-publish.txt" "$root" "$version" <<'EOF'
import os, sys
golden, root, version = sys.argv[1], sys.argv[2], sys.argv[3]
bad = 0
for line in open(golden):
    fields = line.split()
    if fields[1] == "not-mounted":
        print(f"{version} ownership: {fields[0]}: not mounted by the real kubelet: nothing to compare")
        continue
    volume, rel, real = fields[0], fields[1], " ".join(fields[2:])
    try:
        st = os.stat(os.path.join(root, rel))
        mine = "gid=%d mode=%04o" % (st.st_gid, st.st_mode & 0o7777)
    except OSError as e:
        mine = "missing (%s)" % e.strerror
    bad += mine != real
    print(f"{version} ownership: {volume}: {'SAME' if mine == real else 'DIFFERENT'}: "
          f"real kubelet {real}, kubeletclient {mine}")
sys.exit(1 if bad else 0)
EOF
          [[ $? == 0 ]] || fail "$version: ownership of the volumes' targets after publish"
          ;;
        claim)
          # The claim as kubeletclient says kubelet leaves it, against the real code's; the
          # republish then sees that claim.
          "$python" "$here/claim_after_expand.py" "$resized_file" "$work/expand.json" \
            "$golden/pvc-after-expand.json" "$work/volume-expanded.yaml" ||
            fail "$version: the claim's status after expand"
          ;;
        health)
          # What kubelet writes after its health round (the pod's status.volumeHealth, the
          # CSINode's status), against what kubeletclient stats says it writes. A release without
          # a volume health manager (before 1.37) has no round and no such file: kubeletclient
          # must then report no health either.
          if [[ ! -f $golden/health-after-stats.json ]]; then
            if grep -q '"podStatus"\|"storageHealthProbes"' "$work/$name.json"; then
              fail "$version: kubeletclient reports kubelet's health writes; this release has no health round"
            else
              echo "$version health: SAME: no health round, nothing written"
            fi
            continue
          fi
          # The driver's messages name its data directory, beside its socket: /tmp/kg/ when
          # recorded, the replay's own directory here. A condition's lastTransitionTime kubelet
          # leaves unset (null) says nothing.
          "$python" - "$golden/health-after-stats.json" "$work/$name.json" "$version" "$work" <<'EOF'
import json, sys
def unset_times(value):
    if isinstance(value, dict):
        return {k: unset_times(v) for k, v in value.items()
                if not (k == "lastTransitionTime" and v is None)}
    if isinstance(value, list):
        return [unset_times(v) for v in value]
    return value
real = unset_times(json.load(open(sys.argv[1])))
mine = json.loads(open(sys.argv[2]).read().replace(sys.argv[4] + "/", "/tmp/kg/"))
version = sys.argv[3]
by_name = lambda entries: sorted(entries or [], key=lambda e: e["name"])
probes = mine.get("storageHealthProbes", [])
pairs = [
    ("pod status.volumeHealth", by_name(real["podStatus"].get("volumeHealth")),
     by_name(mine.get("podStatus", {}).get("volumeHealth"))),
    ("CSINode status", real.get("csiNodeStatus"),
     probes[0]["storageHealth"].get("csiNodeStatus") if len(probes) == 1 and
     isinstance(probes[0].get("storageHealth"), dict) else probes),
]
bad = False
for what, r, m in pairs:
    same = r == m
    bad = bad or not same
    print(f"{version} health: {what}: {'SAME' if same else 'DIFFERENT'}: real kubelet "
          f"{json.dumps(r, sort_keys=True)}, kubeletclient {json.dumps(m, sort_keys=True)}")
sys.exit(1 if bad else 0)
EOF
          [[ $? == 0 ]] || fail "$version: what kubelet writes after its health round"
          ;;
        no-files)
          local left
          left=$(cd "$root" && find . -type f | head)
          if [[ -n $left ]]; then
            fail "$version: files left under kubelet's root after unpublish (the real kubelet left none): $left"
          else
            echo "$version unpublish files: SAME: none left"
          fi
          ;;
        dirs)
          local real_dirs our_dirs
          real_dirs=$(cat "$golden/dirs-after-unpublish.txt" 2>/dev/null)
          our_dirs=$(cd "$root" && [[ -d plugins/kubernetes.io/csi ]] &&
            find plugins/kubernetes.io/csi -mindepth 1 -type d | LC_ALL=C sort)
          real_dirs=$(LC_ALL=C sort <<<"$real_dirs")
          if [[ $real_dirs == "$our_dirs" ]]; then
            echo "$version unpublish dirs: SAME: ${real_dirs:-none left}" | tr '\n' ' '; echo
          else
            fail "$version: directories left under plugins/kubernetes.io/csi after unpublish: real kubelet [${real_dirs//$'\n'/, }]; kubeletclient [${our_dirs//$'\n'/, }]"
          fi
          ;;
      esac
    done
  done < <("$python" -c '
import json, sys
for p in json.load(open(sys.argv[1]))["phases"]:
    print("\t".join([p["phase"], p["command"], p.get("objects", "-"), str(p.get("keep_periodic", False)),
                     ",".join(p.get("after", [])) or "-", str(p.get("empty_is_same", False))]
                    + p.get("args", [])))' "$scenario_json")
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  [[ -n ${KG_KEEP:-} ]] || rm -rf "$work"  # KG_KEEP=1 keeps it, for a look
}

replayed=0
for g in "${goldens[@]}"; do
  [[ $g == /* ]] || [[ -d $g ]] || g=$here/$g
  for sc in "${scenarios[@]}"; do
    scenario_json=$here/scenarios/$sc/scenario.json
    sub=$(sc_get golden_subdir)
    [[ -f $g/${sub:+$sub/}record.jsonl ]] && replayed=$((replayed + 1))
    replay "$g" "$sc"
  done
done
if $expect_differences; then
  if [[ $failures -gt 0 ]]; then
    echo "replay_test: as expected, replaying as kubelet $as_release differs ($failures difference(s))"
    exit 0
  fi
  echo "replay_test: replaying as kubelet $as_release came out the same: the comparison cannot tell releases apart"
  exit 1
fi
if [[ $failures -gt 0 ]]; then
  echo "replay_test: $failures difference(s) from the real kubelet code"
  exit 1
fi
echo "replay_test: every golden replayed the same (${#goldens[@]} releases)"

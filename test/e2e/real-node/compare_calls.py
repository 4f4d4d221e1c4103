#!/usr/bin/env python3
"""What the real kubelet sent the sample driver, against what kubeletclient predicted.

  compare_calls.py calls CASE PHASE RECORD FIRST LAST REPORT SCRATCH_ROOT [--explained SPEC]
                   [--keep-periodic] [--empty-is-same]
      RECORD is the driver's --record (one JSON line per request it received); lines FIRST+1 to
      LAST (1-based, inclusive) are the real kubelet's requests while CASE went through PHASE
      (publish or unpublish). REPORT is `kubeletclient publish` (or unpublish)'s JSON for the
      same pod and objects, run with --root-dir=SCRATCH_ROOT. Prints what it compared, what it
      left out of the record and why, and every difference; exits 1 on a difference that
      --explained does not name.
  compare_calls.py files CASE REAL_DIR PREDICTED_DIR SCRATCH_ROOT [--empty-is-same]
      The files kubelet wrote for the pod (copied into REAL_DIR, with their paths under kubelet's
      root) against kubeletclient's (the same paths under PREDICTED_DIR).

  compare_calls.py sent CASE PHASE RECORD FIRST LAST REPORT
      What the driver received in lines FIRST+1 to LAST of its RECORD against what kubeletclient's
      REPORT says it sent, in the order below (NodeGetInfo, the command's own registration
      handshake, left out): a replay's check that its report tells the whole story.
  compare_calls.py node REAL_CSINODE REAL_NODE PREDICTED_STATUS DRIVER
      The API server's CSINode and Node (JSON, as kubectl prints them) against the node status
      `kubeletclient watch` wrote for the same driver: DRIVER's CSINode entry, its
      csi.volume.kubernetes.io/nodeid annotation entry and its topology labels.

--keep-periodic keeps what kubelet does on its own period (volume stats, volume health) in the
record: for a record whose window holds exactly a stats phase (test/kubelet-goldens). The
predicted calls are every volume's "calls" in order (each round's, for a republish report), then
every volume's "deviceCalls" (unpublish: kubelet's reconciler tears every volume out of the pod
before it unmounts any device), then every volume's "healthCalls", then each
"storageHealthProbes" entry's calls.

Nothing on both sides is not taken for agreement (a window or a replay that missed its phase
looks just so) unless --empty-is-same says that the phase was recorded doing nothing (a
scenario's stage that failed for good: no files after publish, no request at unpublish).

--explained 'NodePublishVolume.volume_context-=KEY,KEY:REASON' names a known difference: those
volume-context keys are in kubeletclient's NodePublishVolume only. They are taken out before the
calls are compared, and REASON is printed.

Paths are compared after SCRATCH_ROOT is replaced by kubelet's /var/lib/kubelet. Every request
of the record is shown with what happened to it: compared, or left out and why.
"""
import json
import os
import sys

KUBELET_ROOT = "/var/lib/kubelet"


def normalise(value, scratch_root):
    """`value` with every path under scratch_root moved to kubelet's root."""
    text = json.dumps(value, sort_keys=True)
    return json.loads(text.replace(json.dumps(scratch_root)[1:-1], KUBELET_ROOT))


def read_record(path, first, last):
    calls = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if number <= first or number > last:
                continue
            try:
                calls.append(json.loads(line))
            except ValueError as e:
                sys.exit(f"{path}: line {number} is not a JSON request ({e}); the record is damaged")
    if len(calls) != last - first:
        sys.exit(f"{path} has fewer than {last} lines")
    return calls


def kubelet_volume_calls(recorded, keep_periodic=False):
    """The record without what is not a volume operation of the pod: returns (kept, left_out).

    - NodeGetVolumeStats and the NodeGetCapabilities before it: kubelet's volume stats
      (pkg/volume/csi/csi_metrics.go GetMetrics: NodeSupportVolumeStats, then
      NodeGetVolumeStats), run by its fs resource analyzer on its own period, whenever.
      NodeGetCapabilities requests are all the same (empty), so which one goes does not change
      what is compared.
    - GetPluginInfo, GetPluginCapabilities, Probe: the Identity service, which kubelet does not
      call; the registrar (and probes) do.
    - NodeGetInfo: registration (kubelet's csi_plugin.go RegisterPlugin), not a volume's.
    """
    kept, left_out = [], []
    for call in recorded:
        method = call["method"]
        if keep_periodic and method in ("NodeGetVolumeStats", "NodeGetVolumeHealth",
                                        "NodeGetStorageHealth"):
            kept.append(call)
        elif method in ("NodeGetVolumeStats", "NodeGetVolumeHealth", "NodeGetStorageHealth"):
            left_out.append((method, "kubelet's volume stats or health (csi_metrics.go GetMetrics, "
                                     "volumehealth/manager.go), on its own period, not this phase's"))
            for i in range(len(kept) - 1, -1, -1):
                if kept[i]["method"] == "NodeGetCapabilities":
                    kept.pop(i)
                    left_out.append(("NodeGetCapabilities", "the volume stats' capability check (NodeSupportVolumeStats)"))
                    break
        elif method in ("GetPluginInfo", "GetPluginCapabilities", "Probe"):
            left_out.append((method, "the Identity service: the registrar's call, not kubelet's"))
        elif method == "NodeGetInfo":
            left_out.append((method, "registration (csi_plugin.go RegisterPlugin), not a volume's"))
        else:
            kept.append(call)
    return kept, left_out


def storage_health_last(calls):
    """`calls` with each NodeGetStorageHealth, and the NodeGetCapabilities nearest before it, moved
    to the end: kubelet 1.37's volume health manager runs probeVolumeHealth and
    probeStorageHealth concurrently (volumehealth/manager.go reconcile), so how the two
    interleave is not kubelet's to decide. NodeGetCapabilities requests are all the same, so
    which one moves does not change what is compared."""
    calls = list(calls)
    moved = []
    while any(c["method"] == "NodeGetStorageHealth" for c in calls):
        i = next(i for i, c in enumerate(calls) if c["method"] == "NodeGetStorageHealth")
        storage = calls.pop(i)
        caps = [j for j in range(i) if calls[j]["method"] == "NodeGetCapabilities"]
        if caps:
            moved.append(calls.pop(caps[-1]))
        moved.append(storage)
    return calls + moved


def parse_explained(specs):
    explained = []
    for spec in specs:
        target, _, reason = spec.partition(":")
        where, _, keys = target.partition("-=")
        method, _, field = where.partition(".")
        if not (method and field and keys and reason):
            sys.exit(f"--explained '{spec}': give METHOD.FIELD-=KEY,...:REASON")
        explained.append((method, field, keys.split(","), reason))
    return explained


def one_line(call):
    return json.dumps(call, sort_keys=True)


def compare_calls(argv):
    case, phase, record, first, last, report_path, scratch = argv[:7]
    rest = argv[7:]
    specs = []
    keep_periodic = empty_is_same = False
    while rest:
        if rest[0] == "--explained" and len(rest) > 1:
            specs.append(rest[1])
            rest = rest[2:]
        elif rest[0] == "--keep-periodic":
            keep_periodic = True
            rest = rest[1:]
        elif rest[0] == "--empty-is-same":
            empty_is_same = True
            rest = rest[1:]
        else:
            sys.exit(f"unknown argument {rest[0]}")
    explained = parse_explained(specs)

    recorded, left_out = kubelet_volume_calls(read_record(record, int(first), int(last)),
                                              keep_periodic)
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    label = f"{case} {phase}"
    predicted, unhandled = [], 0
    volumes = report.get("volumes", [])
    for round_ in report.get("rounds", []):
        volumes = volumes + round_.get("volumes", [])
    for volume in volumes:
        if "skipped" in volume:  # not the CSI plugin's (as in kubelet): no calls either side
            print(f"{label}: volume {volume.get('volume')} skipped by kubeletclient: {volume['skipped']}")
        elif "calls" not in volume:
            print(f"{label}: not compared: kubeletclient did not handle volume "
                  f"{volume.get('volume')}: {volume.get('result') or volume.get('error')}")
            unhandled += 1
        else:
            predicted.extend(normalise(volume["calls"], scratch))
    for key in ("deviceCalls", "healthCalls"):
        for volume in volumes:
            predicted.extend(normalise(volume.get(key, []), scratch))
    for probe in report.get("storageHealthProbes", []):
        predicted.extend(normalise(probe.get("calls", []), scratch))
    for method, why in left_out:
        print(f"{label}: left out of the record: {method}: {why}")

    notes = []
    for method, field, keys, reason in explained:
        changed = False
        for call in predicted:
            if call["method"] != method:
                continue
            values = call["request"].get(field, {})
            for key in keys:
                if key in values:
                    del values[key]
                    changed = True
        if changed:
            notes.append(f"{method} {field} keys {', '.join(keys)} only in kubeletclient's: {reason}")
    for note in notes:
        print(f"{label}: explained difference: {note}")

    if keep_periodic:
        recorded, predicted = storage_health_last(recorded), storage_health_last(predicted)
    real_lines = [one_line(c) for c in recorded]
    predicted_lines = [one_line(c) for c in predicted]
    if not real_lines and not predicted_lines:
        if empty_is_same:
            print(f"{label}: SAME: no requests from either, as the real kubelet was recorded")
            return 0
        # Every case publishes and unpublishes something: nothing on both sides means the
        # window or the replay missed it, not that they agree.
        print(f"{label}: not compared: no requests on either side")
        return 1
    if real_lines == predicted_lines and unhandled:
        return 1
    if real_lines == predicted_lines:
        methods = ", ".join(c["method"] for c in recorded) or "no calls"
        print(f"{label}: SAME: {len(recorded)} requests, in order: {methods}")
        return 0
    print(f"{label}: DIFFERENT: the real kubelet sent {len(recorded)} requests, kubeletclient {len(predicted)}")
    import difflib
    for line in difflib.unified_diff(real_lines, predicted_lines, "real kubelet", "kubeletclient",
                                     lineterm="", n=1):
        print(f"{label}:   {line}")
    return 1


def files_under(top):
    found = {}
    for dirpath, _, names in os.walk(top):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                found[os.path.relpath(path, top)] = f.read()
    return found


def compare_sent(argv):
    case, phase, record, first, last, report_path = argv
    received = [c for c in read_record(record, int(first), int(last))
                if c["method"] not in ("NodeGetInfo", "GetPluginInfo")]
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    volumes = report.get("volumes", [])
    for round_ in report.get("rounds", []):
        volumes = volumes + round_.get("volumes", [])
    reported = [c for v in volumes for c in v.get("calls", [])]
    for key in ("deviceCalls", "healthCalls"):
        reported += [c for v in volumes for c in v.get(key, [])]
    reported += [c for p in report.get("storageHealthProbes", []) for c in p.get("calls", [])]
    label = f"{case} {phase}"
    if [one_line(c) for c in received] == [one_line(c) for c in reported]:
        print(f"{label} sent: SAME: the driver received the {len(received)} requests the report lists")
        return 0
    print(f"{label} sent: DIFFERENT: the driver received {len(received)} requests, the report lists "
          f"{len(reported)}")
    import difflib
    for line in difflib.unified_diff([one_line(c) for c in received], [one_line(c) for c in reported],
                                     "driver's record", "kubeletclient's report", lineterm="", n=1):
        print(f"{label}:   {line}")
    return 1


def compare_files(argv):
    case, real_dir, predicted_dir, scratch = argv[:4]
    empty_is_same = argv[4:] == ["--empty-is-same"]
    if argv[4:] and not empty_is_same:
        sys.exit(f"unknown argument {argv[4]}")
    real, predicted = files_under(real_dir), files_under(predicted_dir)
    status = 0
    for path in sorted(set(real) | set(predicted)):
        if path not in predicted:
            print(f"{case} files: DIFFERENT: {path}: written by the real kubelet only")
            status = 1
            continue
        if path not in real:
            print(f"{case} files: DIFFERENT: {path}: written by kubeletclient only")
            status = 1
            continue
        try:
            mine, theirs = json.loads(real[path]), normalise(json.loads(predicted[path]), scratch)
        except ValueError:
            mine, theirs = real[path], predicted[path].replace(scratch, KUBELET_ROOT)
        if mine == theirs:
            print(f"{case} files: SAME: {path}")
        else:
            print(f"{case} files: DIFFERENT: {path}: real kubelet {json.dumps(mine, sort_keys=True)}; "
                  f"kubeletclient {json.dumps(theirs, sort_keys=True)}")
            status = 1
    if not real and not predicted:
        if empty_is_same:
            print(f"{case} files: SAME: none written by either, as the real kubelet was recorded")
        else:
            print(f"{case} files: DIFFERENT: no files on either side to compare")
            status = 1
    return status


def compare_node(argv):
    real_csinode_path, real_node_path, predicted_path, driver = argv
    with open(real_csinode_path, encoding="utf-8") as f:
        real_csinode = json.load(f)
    with open(real_node_path, encoding="utf-8") as f:
        real_node = json.load(f)
    with open(predicted_path, encoding="utf-8") as f:
        predicted = json.load(f)
    status = 0

    def same(what, real, theirs):
        nonlocal status
        if real == theirs:
            print(f"node: SAME: {what}: {json.dumps(real, sort_keys=True)}")
        else:
            print(f"node: DIFFERENT: {what}: real kubelet {json.dumps(real, sort_keys=True)}; "
                  f"kubeletclient {json.dumps(theirs, sort_keys=True)}")
            status = 1

    def entry(csinode):
        for d in (csinode.get("spec") or {}).get("drivers") or []:
            if d.get("name") == driver:
                return d
        return None

    same("CSINode driver entry", entry(real_csinode), entry(predicted["csiNode"]))
    annotation = "csi.volume.kubernetes.io/nodeid"
    real_ids = json.loads((real_node["metadata"].get("annotations") or {}).get(annotation, "{}"))
    predicted_ids = json.loads(predicted["annotations"].get(annotation, "{}"))
    same(f"{annotation} for {driver}", real_ids.get(driver), predicted_ids.get(driver))
    real_labels = real_node["metadata"].get("labels") or {}
    same("topology labels", {k: real_labels.get(k) for k in predicted["labels"]}, predicted["labels"])
    return status


def main():
    if len(sys.argv) >= 9 and sys.argv[1] == "calls":
        return compare_calls(sys.argv[2:])
    if len(sys.argv) == 8 and sys.argv[1] == "sent":
        return compare_sent(sys.argv[2:])
    if len(sys.argv) in (6, 7) and sys.argv[1] == "files":
        return compare_files(sys.argv[2:])
    if len(sys.argv) == 6 and sys.argv[1] == "node":
        return compare_node(sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())

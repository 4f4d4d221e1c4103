#!/usr/bin/env python3
"""What the day-two scenarios of test/e2e/real-node.sh observed, read from their raw records.

  day2_observe.py kubelet LOG OFFSET DRIVER
      what kubelet's log says about DRIVER from byte OFFSET on, as JSON: registrations begun
      ("Register new plugin with name: DRIVER at endpoint", logged as volume/csi/csi_plugin.go
      RegisterPlugin starts), deregistrations ("DeRegisterPlugin request for plugin DRIVER,",
      DeRegisterPlugin), failed registrations on DRIVER's registration socket (the operation's
      error, 'Operation for "SOCKET" failed', util/goroutinemap/goroutinemap.go
      operationComplete, or "OperationExecutor.RegisterPlugin failed",
      pluginmanager/reconciler/reconciler.go; v1.36.3 and v1.37.2), and of the registrations
      begun, how many no failure followed ("succeeded") and whether the last one did.
  day2_observe.py csinode WATCH DRIVER FROM TO
      what a watch of the node's CSINode (lines "EPOCH_SECONDS @RESOURCE_VERSION NAME NAME ...",
      one per event the watch delivered, and "EPOCH_SECONDS !connected" where a connection after
      the first began) says about DRIVER between the epoch seconds FROM and TO, as JSON: how
      often its entry went away and came back, the longest time it was away, whether it was
      there at the first and the last event of the window, and how often the watch connected
      again inside it ("reconnects": what happened between two connections is not seen).
  day2_observe.py caught-up WATCH RESOURCE_VERSION
      exits 0 if the watch has delivered the CSINode at RESOURCE_VERSION (a fresh GET's) or later.
  day2_observe.py watch-lines
      reads the API server's watch of CSINode objects (a JSON event a line, as
      /apis/storage.k8s.io/v1/csinodes?watch=1 streams them) from standard input and writes one
      line "EPOCH_SECONDS @RESOURCE_VERSION NAME NAME ..." per ADDED or MODIFIED event (a DELETED
      object has no drivers), flushed at once: the input of "csinode". With --reconnect (every
      connection but the first) it writes "EPOCH_SECONDS !connected" before the first event.
  day2_observe.py attempts LOG OFFSET DRIVER FAULT_START FAULT_END [KUBELET_START ...]
      kubelet's registration attempts of DRIVER (its "Register new plugin with name: DRIVER at
      endpoint" lines: each is one InstallCSIDriver, the requests to the API server an attempt
      costs) from byte OFFSET on, by minute of the fault (epoch seconds FAULT_START to FAULT_END)
      and in the minute after it, as JSON, with the yardstick: how many attempts kubelet v1.36+'s
      own back-off on one socket path allows (after the n-th failed attempt 500 ms * 2^(n-1), at
      most 2 min 2 s; pkg/util/goroutinemap/exponentialbackoff, v1.37.2), counted afresh after
      each KUBELET_START (a kubelet started again forgets its back-off): "within_backoff" is
      whether no attempt came sooner after the one before than that, "ahead" the first that did.
  day2_observe.py table ROWS
      the rows the scenarios wrote (JSON lines) as one Markdown table.
"""

import json
import math
import re
import sys
import time


def kubelet_counts(log_text, driver):
    # The driver's registration socket under any of its names: <driver>-reg.sock, and
    # <driver>-reg-<n>.sock, where our registrar offers it after an outage.
    socket = re.compile("/" + re.escape(driver) + r"-reg(-[0-9]+)?\.sock\"")
    # "... for plugin DRIVER, endpoint E" from v1.33 (DeRegisterPlugin took the endpoint), "... for
    # plugin DRIVER" at the line's end before (csi_plugin.go DeRegisterPlugin, v1.26.15, v1.33.0).
    deregistered = re.compile("DeRegisterPlugin request for plugin " + re.escape(driver) + "(,|$)")
    counts = {"registered": 0, "deregistered": 0, "failed": 0, "succeeded": 0, "last_ok": None}
    in_flight = False  # a registration begun, no failure seen for it yet
    for line in log_text.splitlines():
        if "Register new plugin with name: " + driver + " at endpoint" in line:
            if in_flight:
                counts["succeeded"] += 1
            counts["registered"] += 1
            in_flight = True
        elif deregistered.search(line.rstrip()):
            counts["deregistered"] += 1
            # Whatever was registered is not any more.
            if in_flight:
                counts["succeeded"] += 1
                in_flight = False
            counts["last_ok"] = False
        elif socket.search(line) and ('Operation for "' in line and '" failed' in line
                                      or "OperationExecutor.RegisterPlugin failed" in line):
            counts["failed"] += 1
            if in_flight:
                in_flight = False
                counts["last_ok"] = False
    if in_flight:
        counts["succeeded"] += 1
        counts["last_ok"] = True
    return counts


# kubelet's per-socket-path back-off (pkg/util/goroutinemap/exponentialbackoff/
# exponential_backoff.go, v1.37.2: initialDurationBeforeRetry 500 ms, maxDurationBeforeRetry
# 2 min 2 s), as registrar/registration_lifecycle.cc reckons it.
BACKOFF_INITIAL_S = 0.5
BACKOFF_CAP_S = 122.0
KLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) ")


def klog_epoch(line, year):
    """The epoch seconds of a klog line's header (local time, as klog writes it; klog leaves the
    year out), or None for a line without one."""
    m = KLOG_TIME.match(line)
    if not m:
        return None
    month, day, hour, minute = (int(g) for g in m.groups()[:4])
    seconds = float(m.group(5))
    whole = time.mktime((year, month, day, hour, minute, int(seconds), 0, 0, -1))
    return whole + seconds - int(seconds)


def registration_attempts(log_text, driver, fault_start, fault_end, kubelet_starts=()):
    year = time.localtime(fault_start).tm_year
    marker = "Register new plugin with name: " + driver + " at endpoint"
    times = sorted(t for t in (klog_epoch(line, year) for line in log_text.splitlines()
                               if marker in line)
                   if t is not None and fault_start <= t < fault_end + 60)
    minutes = max(1, math.ceil((fault_end - fault_start) / 60 - 1e-9))
    per_minute = [0] * minutes
    for t in times:
        if t < fault_end:
            per_minute[min(minutes - 1, int((t - fault_start) // 60))] += 1
    after = len([t for t in times if t >= fault_end])
    # The yardstick: kubelet's own back-off, one series per kubelet process (a kubelet started
    # again forgets it). After its n-th failed attempt kubelet waits 500 ms * 2^(n-1), at most
    # 2 min 2 s: an attempt sooner than that after the one before is ahead of it (with 50 ms for
    # the clock of the log's lines). Every gap at least kubelet's means every attempt at or after
    # the time of kubelet's own attempt of the same number.
    bounds = sorted(s for s in kubelet_starts if fault_start < s < fault_end + 60)
    ahead = None
    for lo, hi in zip([fault_start] + bounds, bounds + [math.inf]):
        series = [t for t in times if lo <= t < hi]
        for n in range(1, len(series)):
            gap = min(BACKOFF_INITIAL_S * 2 ** (n - 1), BACKOFF_CAP_S)
            if series[n] - series[n - 1] < gap - 0.05 and ahead is None:
                ahead = {"at_s": round(series[n] - fault_start, 1),
                         "after_s": round(series[n] - series[n - 1], 1), "backoff_s": gap}
    return {"per_minute": per_minute, "after": after, "total": len(times),
            "within_backoff": ahead is None, "ahead": ahead}


def watch_lines(events, out, now=time.time, reconnect=False):
    announced = not reconnect
    for line in events:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type")
        if kind in ("ADDED", "MODIFIED"):
            drivers = (event.get("object") or {}).get("spec", {}).get("drivers") or []
            names = [d.get("name", "") for d in drivers]
        elif kind == "DELETED":
            names = []
        else:  # BOOKMARK, ERROR: no state
            continue
        if not announced:
            # Only a connection that delivered something marks a gap: while the API server is
            # away every attempt fails before its first event.
            out.write("%.6f !connected\n" % now())
            announced = True
        rv = str((event.get("object") or {}).get("metadata", {}).get("resourceVersion", ""))
        out.write("%.6f @%s %s\n" % (now(), rv if rv and " " not in rv else "-",
                                      " ".join(n for n in names if n and " " not in n)))
        out.flush()


def parse_watch(text):
    """[(seconds, set of driver names)] from the watch's events, and [seconds] of its
    reconnections; malformed lines are skipped."""
    events, reconnects = [], []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        try:
            when = float(fields[0])
        except ValueError:
            continue
        if fields[1:2] == ["!connected"]:
            reconnects.append(when)
            continue
        events.append((when, set(f for f in fields[1:] if not f.startswith("@"))))
    events.sort(key=lambda e: e[0])
    return events, sorted(reconnects)


def watch_resource_versions(text):
    """The resourceVersions the watch delivered, in order."""
    versions = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1].startswith("@") and fields[1] != "@-":
            versions.append(fields[1][1:])
    return versions


def caught_up(versions, wanted):
    """Whether the watch delivered the object at resourceVersion `wanted` or later. The API
    server's resourceVersions are etcd revisions, numbers that only grow; anything else must match
    exactly."""
    if not versions:
        return False
    try:
        return int(versions[-1]) >= int(wanted)
    except ValueError:
        return wanted in versions


def csinode_changes(events, driver, start, end, reconnects=()):
    # The state at the window's start is the last event before it (the watch reports a state
    # once, when it changes, and in full when it connects).
    before = [e for e in events if e[0] <= start]
    inside = [e for e in events if start < e[0] <= end]
    present = driver in before[-1][1] if before else None
    at_start = present
    removed = added = 0
    away_since = start if present is False else None
    longest_away = 0.0
    for when, names in inside:
        now = driver in names
        if present is True and not now:
            removed += 1
            away_since = when
        elif present is False and now:
            added += 1
            if away_since is not None:
                longest_away = max(longest_away, when - away_since)
            away_since = None
        elif present is None and not now:
            away_since = when
        present = now
    if away_since is not None and present is False:
        longest_away = max(longest_away, end - away_since)
    return {
        "removed": removed,
        "added": added,
        "longest_away_s": round(longest_away, 1),
        "at_start": at_start,
        "at_end": present,
        "events": len(inside),
        "reconnects": len([r for r in reconnects if start < r <= end]),
    }


COLUMNS = [
    ("scenario", "scenario"),
    ("step", "step"),
    ("registrar", "registrar"),
    ("kubelet", "kubelet: registered / deregistered / failed registrations"),
    ("csinode", "CSINode: entry removed / added, longest away"),
    ("pods", "running pods kept their volume"),
    ("new_pod", "pod created during the change"),
    ("recovered", "registered again after"),
    ("restarts", "registrar restarts"),
    ("attempts", "registration attempts per minute: during the fault · the minute after"),
    ("verdict", "verdict"),
]


def cell(row, key):
    value = row.get(key)
    if key == "kubelet" and isinstance(value, dict):
        return "%d / %d / %d" % (value["succeeded"], value["deregistered"], value["failed"])
    if key == "csinode" and isinstance(value, dict):
        return "%d / %d, %.1f s" % (value["removed"], value["added"], value["longest_away_s"])
    if key == "attempts" and isinstance(value, dict):
        return "%s · %d%s" % (" ".join(str(n) for n in value["per_minute"]), value["after"],
                              "" if value["within_backoff"] else " (ahead of kubelet's back-off)")
    if value is None:
        return "–"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(rows):
    out = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
           "|" + "---|" * len(COLUMNS)]
    for row in rows:
        out.append("| " + " | ".join(cell(row, key) for key, _ in COLUMNS) + " |")
    notes = [(row["scenario"], row["step"], row["registrar"], row["note"])
             for row in rows if row.get("note")]
    if notes:
        out.append("")
        for scenario, step, registrar, note in notes:
            out.append("- %s, %s, %s: %s" % (scenario, step, registrar, note))
    return "\n".join(out)


def main(argv):
    if len(argv) == 5 and argv[1] == "kubelet":
        with open(argv[2], "rb") as f:
            f.seek(int(argv[3]))
            text = f.read().decode("utf-8", errors="replace")
        print(json.dumps(kubelet_counts(text, argv[4])))
        return 0
    if len(argv) == 6 and argv[1] == "csinode":
        with open(argv[2], encoding="utf-8", errors="replace") as f:
            events, reconnects = parse_watch(f.read())
        print(json.dumps(csinode_changes(events, argv[3], float(argv[4]), float(argv[5]),
                                         reconnects)))
        return 0
    if len(argv) == 4 and argv[1] == "caught-up":
        with open(argv[2], encoding="utf-8", errors="replace") as f:
            return 0 if caught_up(watch_resource_versions(f.read()), argv[3]) else 1
    if len(argv) in (2, 3) and argv[1] == "watch-lines" and argv[2:] in ([], ["--reconnect"]):
        watch_lines(sys.stdin, sys.stdout, reconnect=argv[2:] == ["--reconnect"])
        return 0
    if len(argv) >= 7 and argv[1] == "attempts":
        with open(argv[2], "rb") as f:
            f.seek(int(argv[3]))
            text = f.read().decode("utf-8", errors="replace")
        print(json.dumps(registration_attempts(text, argv[4], float(argv[5]), float(argv[6]),
                                               [float(a) for a in argv[7:]])))
        return 0
    if len(argv) == 3 and argv[1] == "table":
        with open(argv[2], encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        print(table(rows))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

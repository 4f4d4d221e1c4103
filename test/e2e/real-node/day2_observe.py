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
      what a watch of the node's CSINode (lines "EPOCH_SECONDS NAME NAME ...", one per event
      the watch delivered) says about DRIVER between the epoch seconds FROM and TO, as JSON: how
      often its entry went away and came back, the longest time it was away, whether it was
      there at the first and the last event of the window.
  day2_observe.py watch-lines
      reads the API server's watch of CSINode objects (a JSON event a line, as
      /apis/storage.k8s.io/v1/csinodes?watch=1 streams them) from standard input and writes one
      line "EPOCH_SECONDS NAME NAME ..." per ADDED or MODIFIED event (a DELETED object has no
      drivers), flushed at once: the input of "csinode".
  day2_observe.py table ROWS
      the rows the scenarios wrote (JSON lines) as one Markdown table.
"""

import json
import re
import sys
import time


def kubelet_counts(log_text, driver):
    # The driver's registration socket under any of its names: <driver>-reg.sock, and
    # <driver>-reg-<n>.sock, where our registrar offers it after an outage.
    socket = re.compile("/" + re.escape(driver) + r"-reg(-[0-9]+)?\.sock\"")
    counts = {"registered": 0, "deregistered": 0, "failed": 0, "succeeded": 0, "last_ok": None}
    in_flight = False  # a registration begun, no failure seen for it yet
    for line in log_text.splitlines():
        if "Register new plugin with name: " + driver + " at endpoint" in line:
            if in_flight:
                counts["succeeded"] += 1
            counts["registered"] += 1
            in_flight = True
        elif "DeRegisterPlugin request for plugin " + driver + "," in line:
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


def watch_lines(events, out, now=time.time):
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
        out.write("%.6f %s\n" % (now(), " ".join(n for n in names if n and " " not in n)))
        out.flush()


def parse_watch(text):
    """[(seconds, set of driver names)] from the watch's lines; malformed lines are skipped."""
    events = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        try:
            when = float(fields[0])
        except ValueError:
            continue
        events.append((when, set(fields[1:])))
    events.sort(key=lambda e: e[0])
    return events


def csinode_changes(events, driver, start, end):
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
    ("verdict", "verdict"),
]


def cell(row, key):
    value = row.get(key)
    if key == "kubelet" and isinstance(value, dict):
        return "%d / %d / %d" % (value["succeeded"], value["deregistered"], value["failed"])
    if key == "csinode" and isinstance(value, dict):
        return "%d / %d, %.1f s" % (value["removed"], value["added"], value["longest_away_s"])
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
            events = parse_watch(f.read())
        print(json.dumps(csinode_changes(events, argv[3], float(argv[4]), float(argv[5]))))
        return 0
    if len(argv) == 2 and argv[1] == "watch-lines":
        watch_lines(sys.stdin, sys.stdout)
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

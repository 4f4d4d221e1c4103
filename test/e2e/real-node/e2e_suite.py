#!/usr/bin/env python3
"""Bookkeeping for running a release's whole CSI mock e2e suite in chunks (real-node.sh --e2e=full).

The suite takes hours with each registrar, more than one sitting holds, so each test's outcome
with each registrar is kept in a store (a TSV file per registrar in the cache directory), and a
run does only what is missing or asked again. e2e.test writes Ginkgo v2 JSON reports
(--ginkgo.json-report): a list of suite reports, each with SpecReports whose
ContainerHierarchyTexts and LeafNodeText make a test's name, State its outcome and RunTime
(nanoseconds) its duration.

  e2e_suite.py list REPORT                    names a dry run (--ginkgo.dry-run) would run, sorted
  e2e_suite.py record REPORT STORE COMMIT [--planned=NAMES]
                                              adds a run's outcomes to STORE (one row per test);
                                              a test of NAMES that skipped itself is SKIP
  e2e_suite.py plan NAMES OURS GO [--rerun=REGEX] [--limit=N] [--for=ours|go]
                                              names still to run: missing in either store, or
                                              matching REGEX (a regex on the name, or 'failed':
                                              not PASS with both, or 'differ': not the same);
                                              --for: of those, the ones that registrar runs
  e2e_suite.py focus NAMES                    a --ginkgo.focus that runs exactly those tests
  e2e_suite.py table NAMES OURS GO            Markdown table per test, then one summary line:
                                              "SUMMARY total=N both=N same=N differ=N missing=N"

NAMES is a file with one test name per line. Nothing here runs e2e.test.
"""

import json
import os
import re
import sys
import time

# Ginkgo's states, as this project reports them.
OUTCOMES = {
    "passed": "PASS",
    "failed": "FAIL",
    "panicked": "FAIL",
    "timedout": "FAIL",
    "interrupted": "INTERRUPTED",
    "aborted": "INTERRUPTED",
    "skipped": "SKIP",
    "pending": "SKIP",
}

# Characters with a meaning in Go's RE2 syntax; every other character stands for itself.
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")


def spec_name(spec):
    texts = [t for t in spec.get("ContainerHierarchyTexts") or [] if t]
    if spec.get("LeafNodeText"):
        texts.append(spec["LeafNodeText"])
    return " ".join(texts)


def specs(report_path):
    """The It specs of a JSON report: (name, outcome, seconds, failure message)."""
    with open(report_path) as f:
        suites = json.load(f)
    if isinstance(suites, dict):
        suites = [suites]
    out = []
    for suite in suites:
        for spec in suite.get("SpecReports") or []:
            if spec.get("LeafNodeType") != "It":
                continue  # BeforeSuite and the like
            state = spec.get("State", "")
            outcome = OUTCOMES.get(state)
            if outcome is None:
                raise ValueError(f"{report_path}: unknown state {state!r} of {spec_name(spec)!r}")
            failure = (spec.get("Failure") or {}).get("Message", "")
            out.append((spec_name(spec), outcome, spec.get("RunTime", 0) / 1e9, failure))
    return out


def clean(text):
    """One line without tabs: store rows are tab-separated lines."""
    return " ".join(text.split())


def read_store(path):
    """name -> dict(outcome, seconds, date, commit, message); a missing store is empty."""
    rows = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 6:
                    raise ValueError(f"{path}:{number}: expected 6 tab-separated fields")
                name, outcome, seconds, date, commit, message = fields
                rows[name] = dict(outcome=outcome, seconds=float(seconds), date=date,
                                  commit=commit, message=message)
    except FileNotFoundError:
        pass
    return rows


def write_store(path, rows):
    with open(path + ".new", "w") as f:
        for name in sorted(rows):
            r = rows[name]
            f.write("\t".join([name, r["outcome"], "%.0f" % r["seconds"], r["date"], r["commit"],
                               clean(r["message"])[:300]]) + "\n")
    os.replace(path + ".new", path)


def record(report_path, store_path, commit, planned=(), now=None):
    """Adds a run's outcomes and returns how many. An interrupted spec has no outcome and changes
    nothing. A skipped one was not selected (the focus leaves out every other test of e2e.test),
    or not reached (after an interrupt Ginkgo runs no node and reports the spec skipped with an
    empty Failure: runNode in internal/suite.go, v2.32.0), or skipped itself at run time (e2e.test's Skip, for what this cluster lacks, with
    its reason): only the last, a name in PLANNED with a message, is an outcome, SKIP, else the
    test would stay to run for ever."""
    rows = read_store(store_path)
    date = now or time.strftime("%Y-%m-%d", time.gmtime())
    planned = set(planned)
    count = 0
    for name, outcome, seconds, message in specs(report_path):
        name = clean(name)
        if outcome == "INTERRUPTED" or (outcome == "SKIP" and (name not in planned or not message)):
            continue  # stopped before it had an outcome, not selected or not reached: still to run
        rows[name] = dict(outcome=outcome, seconds=seconds, date=date, commit=commit,
                                 message=message)
        count += 1
    write_store(store_path, rows)
    return count


def read_names(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def plan(names, ours, go, rerun=None, limit=0, only=None):
    """The names to run: missing in either store, or chosen by RERUN; at most LIMIT of them. With
    ONLY ("ours" or "go"), those of them that registrar runs: a test the other store alone lacks
    is not run again with this one, a test chosen by RERUN is run with both."""
    picked = []
    for name in names:
        a, b = ours.get(name), go.get(name)
        if a is None or b is None:
            picked.append(name)
        elif rerun == "failed":
            if a["outcome"] != "PASS" or b["outcome"] != "PASS":
                picked.append(name)
        elif rerun == "differ":
            if a["outcome"] != b["outcome"]:
                picked.append(name)
        elif rerun and re.search(rerun, name):
            picked.append(name)
    picked = picked[:limit] if limit > 0 else picked
    if only is not None:
        mine = ours if only == "ours" else go
        picked = [n for n in picked if n not in mine or (n in ours and n in go)]
    return picked


def focus(names):
    """Ginkgo v2 matches a focus against the suite's description, a space and the spec's text,
    its nodes' texts joined by spaces (ApplyFocusToSpecs in internal/focus.go and Spec.Text in
    internal/spec.go, v2.32.0, which e2e.test v1.37.2 links), so each name is anchored at its end
    and after a space."""
    if not names:
        raise ValueError("no test names to focus on")
    escaped = ["".join("\\" + c if c in _RE2_SPECIAL else c for c in n) for n in names]
    return "(?:^| )(?:" + "|".join(escaped) + ")$"


def table(names, ours, go):
    lines = ["| test | our registrar | Go registrar | same |", "|---|---|---|---|"]
    both = same = differ = missing = 0

    def cell(row):
        if row is None:
            return "not run yet"
        return f"{row['outcome']}, {row['seconds']:.0f} s"

    for name in names:
        a, b = ours.get(name), go.get(name)
        if a is None or b is None:
            missing += 1
            verdict = ""
        else:
            both += 1
            if a["outcome"] == b["outcome"]:
                same += 1
                verdict = "yes"
            else:
                differ += 1
                verdict = "**no**"
        lines.append(f"| {name} | {cell(a)} | {cell(b)} | {verdict} |")
    lines.append(f"SUMMARY total={len(names)} both={both} same={same} differ={differ} "
                 f"missing={missing}")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    command, args = argv[1], argv[2:]
    options = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    args = [a for a in args if not a.startswith("--")]
    try:
        if command == "list" and len(args) == 1:
            # A dry run reports the specs it would run as passed, the rest as skipped; Ginkgo
            # shuffles their order, the list is sorted.
            for name in sorted(clean(n) for n, outcome, _, _ in specs(args[0]) if outcome != "SKIP"):
                print(name)
        elif command == "record" and len(args) == 3:
            planned = read_names(options["planned"]) if "planned" in options else ()
            print(record(args[0], args[1], args[2], planned))
        elif command == "plan" and len(args) == 3:
            rerun = options.get("rerun")
            if rerun not in (None, "failed", "differ"):
                re.compile(rerun)
            only = options.get("for")
            if only not in (None, "ours", "go"):
                raise ValueError(f"--for={only}: ours or go")
            for name in plan(read_names(args[0]), read_store(args[1]), read_store(args[2]),
                             rerun, int(options.get("limit", "0")), only):
                print(name)
        elif command == "focus" and len(args) == 1:
            print(focus(read_names(args[0])))
        elif command == "table" and len(args) == 3:
            print(table(read_names(args[0]), read_store(args[1]), read_store(args[2])))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (OSError, ValueError, re.error, json.JSONDecodeError) as e:
        print(f"e2e_suite.py {command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Sums up the JUnit XML files that `bazel test` wrote, for test/run-tests.sh and test/stress.sh.

    python3 test/junit.py [--since=EPOCH_SECONDS] TESTLOGS_DIR TARGET...

TESTLOGS_DIR is `bazel info bazel-testlogs` of the configuration that ran, TARGET a test label
such as //registrar:registrar_process_test. Prints one line

    PASSED FAILED SKIPPED TARGETS

and then one line per failed test case, `FAILED //pkg:target Suite.Case`. A target whose XML is
missing, or older than --since (it did not run this time: a build error, say), is a failure of
its own, `FAILED //pkg:target (did not run)`. When Bazel kills a test (a timeout, a crash), it
writes the XML itself with one test case named after the target, so that shows up here too.
A sharded target (shard_count) has one XML per shard, in shard_N_of_M/; each is read.
"""

import glob
import os
import sys
import xml.etree.ElementTree as ElementTree


def summarize(testlogs, targets, since):
    passed = failed = skipped = ran = 0
    failures = []
    for target in targets:
        package, _, name = target.lstrip("/").partition(":")
        directory = os.path.join(testlogs, package, name)
        # A sharded target's XML files are one per shard; those from this run count.
        shards = [path for path in glob.glob(os.path.join(directory, "shard_*_of_*", "test.xml"))
                  if os.path.getmtime(path) >= since]
        paths = sorted(shards) or [os.path.join(directory, "test.xml")]
        if any(not os.path.exists(path) or os.path.getmtime(path) < since for path in paths):
            failed += 1
            failures.append(f"{target} (did not run)")
            continue
        ran += 1
        for path in paths:
            try:
                root = ElementTree.parse(path).getroot()
            except ElementTree.ParseError as error:
                failed += 1
                failures.append(f"{target} (unreadable {path}: {error})")
                continue
            case_failed, case_skipped, case_passed, case_failures = count(target, root)
            failed += case_failed
            skipped += case_skipped
            passed += case_passed
            failures.extend(case_failures)
    return passed, failed, skipped, ran, failures


def count(target, root):
    """The failed, skipped and passed test cases of one XML file, and the failures' names."""
    passed = failed = skipped = 0
    failures = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            suite = case.get("classname", "")
            failures.append(f"{target} {suite}.{case.get('name')}" if suite else
                            f"{target} {case.get('name')}")
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
        elif case.get("status", "run") == "run":
            passed += 1
    return failed, skipped, passed, failures


def main(argv):
    since = 0.0
    args = argv[1:]
    if args and args[0].startswith("--since="):
        since = float(args[0].split("=", 1)[1])
        args = args[1:]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    passed, failed, skipped, ran, failures = summarize(args[0], args[1:], since)
    print(passed, failed, skipped, ran)
    for failure in failures:
        print("FAILED", failure)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

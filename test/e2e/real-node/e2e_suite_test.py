#!/usr/bin/env python3
"""Tests of e2e_suite.py, the bookkeeping of real-node.sh --e2e=full: a run's outcomes land in the
store per test, a rerun plans only what is missing or asked for, the focus runs exactly the named
tests, and the table says where the two registrars differ. Runs the script as a process, as
real-node.sh does."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "e2e_suite.py")

A = "[sig-storage] CSI Mock workload info CSI workload information using mock driver should be passed when podInfoOnMount=true"
B = "[sig-storage] CSI Mock volume expansion Expansion with recovery should record target size (10Gi) in pvc.status"
C = "[sig-storage] CSI Mock volume attach CSI attach test using mock driver should not require VolumeAttach for drivers without attachment"


def spec(name_parts, state, seconds=1.0, message="", leaf_type="It"):
    return {"ContainerHierarchyTexts": name_parts[:-1], "LeafNodeText": name_parts[-1],
            "LeafNodeType": leaf_type, "State": state, "RunTime": int(seconds * 1e9),
            "Failure": {"Message": message} if message else None}


def parts(name):
    # As Ginkgo has them: the containers' texts, then the It's.
    head, leaf = name.rsplit(" should ", 1)
    return [head, "should " + leaf]


class E2eSuite(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def run_script(self, *args):
        p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def report(self, name, specs):
        path = self.path(name)
        with open(path, "w") as f:
            json.dump([{"SuiteDescription": "Kubernetes e2e suite", "SpecReports": specs}], f)
        return path

    def names(self, *names):
        path = self.path("names")
        with open(path, "w") as f:
            f.write("".join(n + "\n" for n in names))
        return path

    def test_list_takes_what_a_dry_run_would_run(self):
        report = self.report("dry.json", [
            spec(parts(A), "passed"), spec(parts(B), "skipped"),
            spec(["SynchronizedBeforeSuite"], "passed", leaf_type="SynchronizedBeforeSuite"),
            spec(parts(C), "passed")])
        code, out, err = self.run_script("list", report)
        self.assertEqual(code, 0, err)
        self.assertEqual(out.splitlines(), sorted([A, C]))

    def test_record_keeps_one_row_per_test_and_a_rerun_replaces_it(self):
        store = self.path("ours.tsv")
        first = self.report("1.json", [spec(parts(A), "failed", 42, "timed out\twaiting\nfor pod"),
                                       spec(parts(B), "passed", 30), spec(parts(C), "skipped")])
        code, out, err = self.run_script("record", first, store, "abc123")
        self.assertEqual((code, out.strip()), (0, "2"), err)
        second = self.report("2.json", [spec(parts(A), "passed", 40)])
        self.assertEqual(self.run_script("record", second, store, "def456")[0], 0)
        with open(store) as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(sorted(r[0] for r in rows), sorted([A, B]))
        by_name = {r[0]: r for r in rows}
        self.assertEqual(by_name[A][1:3], ["PASS", "40"])
        self.assertEqual(by_name[A][4], "def456")
        self.assertEqual(by_name[B][1], "PASS")
        self.assertEqual(by_name[B][4], "abc123")

    def test_a_planned_test_that_skipped_itself_has_an_outcome(self):
        # The focus selects A and B; every other spec of e2e.test is reported skipped (C). B
        # called Skip at run time: recorded as SKIP with its reason, and not planned again.
        store = self.path("ours.tsv")
        # D was planned too but never reached (an interrupt): skipped without a message, still
        # to run.
        D = A.replace("podInfoOnMount=true", "podInfoOnMount=false")
        report = self.report("r.json", [spec(parts(A), "passed"),
                                        spec(parts(B), "skipped", 2, "Driver lacks\tfeature"),
                                        spec(parts(C), "skipped"), spec(parts(D), "skipped")])
        code, out, err = self.run_script("record", report, store, "x",
                                         "--planned=" + self.names(A, B, D))
        self.assertEqual((code, out.strip()), (0, "2"), err)
        with open(store) as f:
            by_name = {r[0]: r for r in (line.rstrip("\n").split("\t") for line in f)}
        self.assertEqual(sorted(by_name), sorted([A, B]))
        self.assertEqual((by_name[B][1], by_name[B][5]), ("SKIP", "Driver lacks feature"))
        self.assertEqual(
            self.run_script("plan", self.names(A, B, C, D), store, store)[1].splitlines(), [C, D])

    def test_an_interrupted_test_stays_to_run(self):
        store = self.path("ours.tsv")
        self.run_script("record", self.report("1.json", [spec(parts(A), "passed")]), store, "x")
        report = self.report("2.json", [spec(parts(A), "interrupted"), spec(parts(B), "aborted")])
        self.assertEqual(self.run_script("record", report, store, "y")[1].strip(), "0")
        code, out, _ = self.run_script("plan", self.names(A, B), store, store)
        self.assertEqual(out.splitlines(), [B])
        with open(store) as f:
            self.assertIn("\tPASS\t", f.read())

    def test_a_failure_message_becomes_one_field(self):
        store = self.path("ours.tsv")
        report = self.report("r.json", [spec(parts(A), "timedout", 600, "a\tb\nc")])
        self.run_script("record", report, store, "abc")
        with open(store) as f:
            fields = f.read().rstrip("\n").split("\t")
        self.assertEqual(len(fields), 6)
        self.assertEqual((fields[1], fields[5]), ("FAIL", "a b c"))

    def test_plan_runs_what_is_missing_in_either_store(self):
        ours, go = self.path("ours.tsv"), self.path("go.tsv")
        self.run_script("record", self.report("o.json", [spec(parts(A), "passed"),
                                                         spec(parts(B), "passed")]), ours, "x")
        self.run_script("record", self.report("g.json", [spec(parts(A), "passed")]), go, "x")
        code, out, err = self.run_script("plan", self.names(A, B, C), ours, go)
        self.assertEqual(code, 0, err)
        self.assertEqual(out.splitlines(), [B, C])
        code, out, _ = self.run_script("plan", self.names(A, B, C), ours, go, "--limit=1")
        self.assertEqual(out.splitlines(), [B])

    def test_each_registrar_runs_only_what_its_store_lacks(self):
        # A run stopped after ours: ours has A and B, Go nothing; C is new. Ours runs C only,
        # Go all three; a rerun asked for runs with both.
        ours, go = self.path("ours.tsv"), self.path("go.tsv")
        self.run_script("record", self.report("o.json", [spec(parts(A), "passed"),
                                                         spec(parts(B), "failed")]), ours, "x")
        names = self.names(A, B, C)
        self.assertEqual(self.run_script("plan", names, ours, go, "--for=ours")[1].splitlines(), [C])
        self.assertEqual(self.run_script("plan", names, ours, go, "--for=go")[1].splitlines(),
                         [A, B, C])
        self.assertEqual(self.run_script("plan", names, ours, go, "--for=go", "--limit=1")[1]
                         .splitlines(), [A])
        self.run_script("record", self.report("g.json", [spec(parts(A), "passed"),
                                                         spec(parts(B), "passed")]), go, "x")
        self.assertEqual(self.run_script("plan", names, ours, go, "--for=ours",
                                         "--rerun=differ")[1].splitlines(), [B, C])
        self.assertEqual(self.run_script("plan", names, ours, go, "--for=go",
                                         "--rerun=differ")[1].splitlines(), [B, C])
        code, _, err = self.run_script("plan", names, ours, go, "--for=both")
        self.assertEqual(code, 1)
        self.assertIn("--for=both", err)

    def test_plan_reruns_what_is_asked(self):
        ours, go = self.path("ours.tsv"), self.path("go.tsv")
        self.run_script("record", self.report("o.json", [spec(parts(A), "passed"),
                                                         spec(parts(B), "failed"),
                                                         spec(parts(C), "passed")]), ours, "x")
        self.run_script("record", self.report("g.json", [spec(parts(A), "passed"),
                                                         spec(parts(B), "passed"),
                                                         spec(parts(C), "failed")]), go, "x")
        names = self.names(A, B, C)
        self.assertEqual(self.run_script("plan", names, ours, go)[1], "")
        self.assertEqual(self.run_script("plan", names, ours, go, "--rerun=failed")[1].splitlines(),
                         [B, C])
        self.assertEqual(self.run_script("plan", names, ours, go, "--rerun=differ")[1].splitlines(),
                         [B, C])
        self.assertEqual(self.run_script("plan", names, ours, go, "--rerun=expansion")[1].splitlines(),
                         [B])
        code, _, err = self.run_script("plan", names, ours, go, "--rerun=(")
        self.assertEqual(code, 1)
        self.assertIn("e2e_suite.py plan", err)

    def test_focus_matches_exactly_the_named_tests(self):
        code, out, err = self.run_script("focus", self.names(A, B))
        self.assertEqual(code, 0, err)
        focus = re.compile(out.strip())
        # Ginkgo matches the suite's description, a space and the spec's text.
        for name in (A, B):
            self.assertTrue(focus.search("Kubernetes e2e suite " + name), name)
        for name in (C, A + " when X", A.replace("=true", "=trueX"), A[:-1],
                     B.replace("(10Gi)", "10Gi"), B.replace(".status", "Xstatus")):
            self.assertIsNone(focus.search("Kubernetes e2e suite " + name), name)

    def test_focus_of_nothing_is_refused(self):
        code, _, err = self.run_script("focus", self.names())
        self.assertEqual(code, 1)
        self.assertIn("no test names", err)

    def test_table_says_where_the_registrars_differ_and_what_is_missing(self):
        ours, go = self.path("ours.tsv"), self.path("go.tsv")
        self.run_script("record", self.report("o.json", [spec(parts(A), "passed", 40),
                                                         spec(parts(B), "failed", 70)]), ours, "x")
        self.run_script("record", self.report("g.json", [spec(parts(A), "passed", 42),
                                                         spec(parts(B), "passed", 65)]), go, "x")
        code, out, err = self.run_script("table", self.names(A, B, C), ours, go)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn(f"| {A} | PASS, 40 s | PASS, 42 s | yes |", lines)
        self.assertIn(f"| {B} | FAIL, 70 s | PASS, 65 s | **no** |", lines)
        self.assertIn(f"| {C} | not run yet | not run yet |  |", lines)
        self.assertEqual(lines[-1], "SUMMARY total=3 both=2 same=1 differ=1 missing=1")

    def test_an_unknown_state_or_a_broken_store_is_an_error(self):
        report = self.report("r.json", [spec(parts(A), "exploded")])
        code, _, err = self.run_script("record", report, self.path("s.tsv"), "x")
        self.assertEqual(code, 1)
        self.assertIn("unknown state 'exploded'", err)
        broken = self.path("broken.tsv")
        with open(broken, "w") as f:
            f.write("just a name\n")
        code, _, err = self.run_script("table", self.names(A), broken, broken)
        self.assertEqual(code, 1)
        self.assertIn("expected 6 tab-separated fields", err)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "..", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("e2e_suite")

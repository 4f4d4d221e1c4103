#!/usr/bin/env python3
"""Tests of day2_observe.py, which reads kubelet's log and the CSINode watch for the day-two
scenarios of test/e2e/real-node.sh: a registration that failed must never count as one that
succeeded, another driver's lines must never count, and the CSINode entry's absences must be
measured from the watch's events. Runs the script as a process, as day2.sh does."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "day2_observe.py")
A = "a.day2.csi.example.com"
B = "b.day2.csi.example.com"


# Lines as kubelet v1.37.2 writes them (klog's header, then the message of
# volume/csi/csi_plugin.go, util/goroutinemap/goroutinemap.go, pluginmanager/reconciler).
def register(driver):
    return ('I1128 05:01:02.000001    4242 csi_plugin.go:119] kubernetes.io/csi: Register new plugin '
            'with name: %s at endpoint: /var/lib/kubelet/plugins/%s/csi.sock' % (driver, driver))


def register_at(driver, epoch):
    """register(driver) with klog's header for the local time at epoch seconds."""
    t = time.localtime(epoch)
    return register(driver).replace(
        "I1128 05:01:02.000001",
        "I%02d%02d %02d:%02d:%02d.%06d" % (t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                                           round((epoch % 1) * 1e6)), 1)


def deregister(driver):
    return ('I1128 05:01:03.000001    4242 csi_plugin.go:271] kubernetes.io/csi: registrationHandler.'
            'DeRegisterPlugin request for plugin %s, endpoint /var/lib/kubelet/plugins/%s/csi.sock'
            % (driver, driver))


def operation_failed(driver, socket_name=None):
    return ('E1128 05:01:04.000001    4242 goroutinemap.go:150] Operation for "/var/lib/kubelet/'
            'plugins_registry/%s" failed. No retries permitted until 2026-11-28 05:01:04.5 '
            '(durationBeforeRetry 500ms). Error: RegisterPlugin error -- plugin registration failed '
            'with err: error updating Node object with CSI driver node info: connection refused'
            % (socket_name or driver + "-reg.sock"))


def reconciler_failed(driver):
    return ('E1128 05:01:05.000001    4242 reconciler.go:158] "OperationExecutor.RegisterPlugin '
            'failed" err="operation already pending" plugin={"SocketPath":"/var/lib/kubelet/'
            'plugins_registry/%s-reg.sock"}' % driver)


class Observe(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, lines):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def run_script(self, *args):
        out = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def kubelet(self, lines, driver, offset=0):
        return json.loads(self.run_script("kubelet", self.write("kubelet.log", lines), str(offset),
                                          driver))

    def test_a_registration_with_no_failure_after_it_succeeded(self):
        got = self.kubelet([register(A)], A)
        self.assertEqual(got, {"registered": 1, "deregistered": 0, "failed": 0, "succeeded": 1,
                               "last_ok": True})

    def test_a_failure_after_the_registration_means_it_failed(self):
        got = self.kubelet([register(A), operation_failed(A)], A)
        self.assertEqual((got["registered"], got["failed"], got["succeeded"], got["last_ok"]),
                         (1, 1, 0, False))

    def test_a_registration_after_a_failure_is_the_last_word(self):
        got = self.kubelet([register(A), operation_failed(A), deregister(A), register(A)], A)
        self.assertEqual((got["registered"], got["deregistered"], got["failed"], got["succeeded"],
                          got["last_ok"]), (2, 1, 1, 1, True))

    def test_a_failure_under_any_of_the_drivers_socket_names_counts(self):
        # Our registrar offers its socket as <driver>-reg-<n>.sock after an outage.
        got = self.kubelet([register(A), operation_failed(A, A + "-reg-3.sock")], A)
        self.assertEqual((got["failed"], got["last_ok"]), (1, False))
        # Another driver's name that merely starts like it is not it.
        got = self.kubelet([register(A), operation_failed(A, A + "-reg-x.sock"),
                            operation_failed(A, A + "x-reg-1.sock")], A)
        self.assertEqual((got["failed"], got["last_ok"]), (0, True))

    def test_a_deregistration_in_the_words_of_kubelets_before_1_33_counts(self):
        old = ("I1129 03:41:25.742829    9365 csi_plugin.go:178] kubernetes.io/csi: "
               "registrationHandler.DeRegisterPlugin request for plugin %s" % A)
        got = self.kubelet([register(A), old], A)
        self.assertEqual((got["deregistered"], got["last_ok"]), (1, False))
        got = self.kubelet([old.replace(A, A + "x")], A)
        self.assertEqual(got["deregistered"], 0)

    def test_a_deregistration_after_the_registration_leaves_it_unregistered(self):
        got = self.kubelet([register(A), deregister(A)], A)
        self.assertEqual((got["registered"], got["deregistered"], got["last_ok"]), (1, 1, False))

    def test_the_reconcilers_failure_counts_too(self):
        got = self.kubelet([reconciler_failed(A)], A)
        self.assertEqual((got["failed"], got["last_ok"]), (1, None))

    def test_another_drivers_lines_never_count(self):
        got = self.kubelet([register(B), operation_failed(B), deregister(B), register(A)], A)
        self.assertEqual(got, {"registered": 1, "deregistered": 0, "failed": 0, "succeeded": 1,
                               "last_ok": True})
        # A name that is a prefix of another's is not that one.
        got = self.kubelet([register("x" + A), deregister("x" + A)], A)
        self.assertEqual((got["registered"], got["deregistered"]), (0, 0))

    def test_only_the_log_after_the_offset_counts(self):
        before = register(A) + "\n" + deregister(A) + "\n"
        got = self.kubelet([register(A), deregister(A), register(A)], A, offset=len(before))
        self.assertEqual((got["registered"], got["deregistered"]), (1, 0))

    def csinode(self, lines, driver, start, end):
        return json.loads(self.run_script("csinode", self.write("watch.txt", lines), driver,
                                          str(start), str(end)))

    def test_csinode_an_entry_removed_and_added_again(self):
        watch = ["100.0 %s %s" % (A, B), "105.0 %s" % B, "107.5 %s %s" % (B, A),
                 "200.0 %s" % B]
        got = self.csinode(watch, A, 101, 150)
        self.assertEqual(got, {"removed": 1, "added": 1, "longest_away_s": 2.5, "at_start": True,
                               "at_end": True, "events": 2, "reconnects": 0})
        # The other driver never went away.
        got = self.csinode(watch, B, 101, 150)
        self.assertEqual((got["removed"], got["added"], got["at_end"]), (0, 0, True))

    def test_csinode_an_entry_still_away_at_the_end_counts_to_the_end(self):
        got = self.csinode(["100.0 %s" % A, "110.0"], A, 101, 130)
        self.assertEqual((got["removed"], got["added"], got["longest_away_s"], got["at_end"]),
                         (1, 0, 20.0, False))

    def test_csinode_absent_from_the_start_counts_from_the_start(self):
        got = self.csinode(["100.0", "112.0 %s" % A], A, 102, 130)
        self.assertEqual((got["at_start"], got["added"], got["longest_away_s"]), (False, 1, 10.0))

    def test_csinode_events_outside_the_window_are_not_counted(self):
        got = self.csinode(["90.0 %s" % A, "95.0", "96.0 %s" % A, "140.0"], A, 100, 130)
        self.assertEqual((got["removed"], got["added"], got["events"], got["at_end"]),
                         (0, 0, 0, True))

    def test_csinode_a_reconnect_inside_the_window_is_counted(self):
        # The watch connected again at 120: what happened between its connections is not seen.
        watch = ["100.0 @5 %s" % A, "120.0 !connected", "120.1 @9 %s" % A, "150.0 !connected"]
        got = self.csinode(watch, A, 101, 130)
        self.assertEqual((got["reconnects"], got["removed"], got["at_end"]), (1, 0, True))
        got = self.csinode(watch, A, 121, 140)
        self.assertEqual(got["reconnects"], 0)

    def test_caught_up_needs_the_fresh_resource_version(self):
        path = self.write("watch.txt", ["100.0 @5 %s" % A, "120.0 !connected", "120.1 @9 %s" % A])
        def caught_up(rv):
            return subprocess.run([sys.executable, SCRIPT, "caught-up", path, rv],
                                  capture_output=True).returncode == 0
        self.assertTrue(caught_up("9"))
        self.assertTrue(caught_up("7"))
        # A stale last line, even one that lists the driver as the GET does, is not caught up.
        self.assertFalse(caught_up("10"))
        empty = self.write("empty.txt", [])
        self.assertNotEqual(subprocess.run([sys.executable, SCRIPT, "caught-up", empty, "1"],
                                           capture_output=True).returncode, 0)

    def test_watch_lines_one_line_per_state_event(self):
        def event(kind, names, rv):
            return json.dumps({"type": kind, "object": {
                "kind": "CSINode", "metadata": {"resourceVersion": rv}, "spec": {
                    "drivers": [{"name": n, "nodeID": "n1"} for n in names] or None}}})
        events = [event("ADDED", [A, B], "3"), event("MODIFIED", [B], "4"), "",
                  json.dumps({"type": "BOOKMARK", "object": {}}), event("MODIFIED", [B, A], "6"),
                  event("DELETED", [B, A], "7")]
        out = subprocess.run([sys.executable, SCRIPT, "watch-lines"], input="\n".join(events),
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        states = [line.split()[1:] for line in out.stdout.splitlines()]
        self.assertEqual(states, [["@3", A, B], ["@4", B], ["@6", B, A], ["@7"]])
        for line in out.stdout.splitlines():
            float(line.split()[0])
        # A connection after the first says so before its first event, and only if it has one.
        out = subprocess.run([sys.executable, SCRIPT, "watch-lines", "--reconnect"],
                             input=event("ADDED", [A], "9"), capture_output=True, text=True)
        self.assertEqual([line.split()[1:] for line in out.stdout.splitlines()],
                         [["!connected"], ["@9", A]])
        out = subprocess.run([sys.executable, SCRIPT, "watch-lines", "--reconnect"], input="",
                             capture_output=True, text=True)
        self.assertEqual(out.stdout, "")

    # A fault that began at a whole second, in this year (klog leaves the year out).
    T0 = float(int(time.mktime((time.localtime().tm_year, 6, 15, 10, 0, 0, 0, 0, -1))))

    def attempts(self, offsets, fault_s, starts=(), driver=A, extra=()):
        lines = [register_at(driver, self.T0 + o) for o in offsets] + list(extra)
        return json.loads(self.run_script(
            "attempts", self.write("kubelet.log", lines), "0", A, str(self.T0),
            str(self.T0 + fault_s), *[str(self.T0 + s) for s in starts]))

    def test_attempts_as_kubelets_own_back_off_makes_them_are_within_it(self):
        # 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5, 63.5, 127.5, 249.5, then every 122 s.
        at, gap, offsets = 0.0, 0.5, []
        while at < 400:
            offsets.append(at)
            at, gap = at + gap, min(gap * 2, 122)
        got = self.attempts(offsets, 312)
        self.assertTrue(got["within_backoff"], got)
        self.assertEqual(got["per_minute"], [7, 1, 1, 0, 1, 0])
        self.assertEqual(got["after"], 1)  # at 371.5 s: in the minute after the fault's end
        self.assertEqual(got["total"], 11)

    def test_an_attempt_sooner_than_the_back_off_allows_is_ahead(self):
        # After the seventh failure kubelet waits 32 s; the eighth came 8.5 s after it.
        got = self.attempts([0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5, 40], 120)
        self.assertFalse(got["within_backoff"])
        self.assertEqual(got["ahead"], {"at_s": 40.0, "after_s": 8.5, "backoff_s": 32.0})
        # Saved-up waiting is no credit: two attempts 10 s apart after a quiet 200 s are ahead
        # of the third gap (2 s is fine, the fourth's 4 s is not).
        got = self.attempts([0, 200, 202, 204.5, 206], 300)
        self.assertEqual(got["ahead"], {"at_s": 206.0, "after_s": 1.5, "backoff_s": 4.0})

    def test_a_kubelet_started_again_begins_its_own_back_off(self):
        # After the restart at 100 s the new kubelet's first attempt may follow the old one's
        # last at once, and its second 0.5 s later.
        got = self.attempts([0, 99.8, 100.2, 100.7], 180, starts=[100])
        self.assertTrue(got["within_backoff"], got)
        # Without the restart the same attempts are ahead of one back-off series.
        self.assertFalse(self.attempts([0, 99.8, 100.2, 100.7], 180)["within_backoff"])

    def test_attempts_outside_the_window_and_other_drivers_do_not_count(self):
        got = self.attempts([-5, 10, 200], 60, extra=[register_at(B, self.T0 + 11)])
        self.assertEqual(got["per_minute"], [1])
        self.assertEqual(got["after"], 0)
        self.assertEqual(got["total"], 1)

    def test_the_table_escapes_cells_and_lists_notes(self):
        row = {"scenario": "swap", "step": "Go → ours", "registrar": "ours",
               "kubelet": {"registered": 1, "deregistered": 1, "failed": 0, "succeeded": 1,
                           "last_ok": True},
               "csinode": {"removed": 1, "added": 1, "longest_away_s": 3.25},
               "pods": "2/2", "new_pod": "7 s", "recovered": "5 s", "restarts": 0,
               "attempts": {"per_minute": [3, 0, 1], "after": 1, "total": 5,
                            "within_backoff": False, "ahead": None},
               "verdict": "ok", "note": "a|b"}
        out = self.run_script("table", self.write("rows.jsonl", [json.dumps(row)]))
        lines = out.splitlines()
        self.assertEqual(len(lines[0].split(" | ")), len(lines[2].split(" | ")))
        self.assertIn("| 1 / 1 / 0 | 1 / 1, 3.2 s | 2/2 | 7 s | 5 s | 0 | 3 0 1 · 1 (ahead of "
                      "kubelet's back-off) | ok |", lines[2])
        self.assertIn("- swap, Go → ours, ours: a|b", out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "..", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("day2_observe")

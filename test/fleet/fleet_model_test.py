"""Tests of test/fleet/fleet_model.py: its constants agree with the registrar's, its policies
behave as their sources say, and its verdict on the yardstick can fail."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_model as fm  # noqa: E402


class BackoffTest(unittest.TestCase):
    # The same values as registrar/registration_lifecycle_test.cc.
    def test_gap_and_attempts_as_the_registrar_computes_them(self):
        self.assertEqual(fm.kubelet_gap_at(0), 0.5)
        self.assertEqual(fm.kubelet_gap_at(1.5), 2)
        self.assertEqual(fm.kubelet_gap_at(60), 32)
        self.assertEqual(fm.kubelet_gap_at(1800), 122)
        self.assertEqual(fm.kubelet_attempts_by(-1), 0)
        self.assertEqual(fm.kubelet_attempts_by(0), 1)
        self.assertEqual(fm.kubelet_attempts_by(60), 7)
        self.assertEqual(fm.kubelet_attempts_by(64), 8)
        self.assertEqual(fm.kubelet_attempts_by(3600), 37)

    def test_ours_wait_never_shorter_than_kubelets_gap(self):
        for elapsed in (0, 1, 10, 60, 300, 3600):
            for u in (0.0, 0.5, 0.999):
                wait = fm.ours_wait(elapsed, u)
                self.assertGreaterEqual(wait, fm.kubelet_gap_at(elapsed))
                self.assertLess(wait, fm.kubelet_gap_at(elapsed) + fm.BACKOFF_CAP)


class FleetTest(unittest.TestCase):
    def test_the_same_run_gives_the_same_figures(self):
        a = fm.run("ours", "outage", 3, 50, 3)
        b = fm.run("ours", "outage", 3, 50, 3)
        self.assertEqual(a.attempts, b.attempts)
        self.assertEqual(a.requests, b.requests)

    def test_ours_never_outpaces_kubelets_backoff(self):
        for kind, minutes in fm.SCENARIOS:
            for policy in ("ours", "ours-v1.26", "kubelet"):
                f = fm.run(policy, kind, minutes, 100, 3)
                self.assertEqual(f.outpaced, 0, (policy, kind, minutes))
                self.assertEqual(f.registered, 300, (policy, kind, minutes))

    def test_the_yardstick_catches_a_policy_that_outpaces_it(self):
        # Release 1.2.0's new socket name every 8 s escapes kubelet's back-off.
        f = fm.run("1.2.0", "outage", 6, 100, 3)
        self.assertEqual(f.outpaced, 300)
        self.assertGreater(max(f.per_minute), 7)

    def test_ours_spreads_the_fleet_over_kubelets_cap_at_the_return(self):
        for minutes in (1, 3, 6, 30):
            ours = fm.run("ours", "outage", minutes, 300, 3)
            kubelet = fm.run("kubelet", "outage", minutes, 300, 3)
            self.assertGreater(ours.spread, 100, minutes)  # the middle 90% of 122 s: 110 s
            self.assertLess(kubelet.spread, 15, minutes)   # kubelet's fleet comes back in step
            self.assertLess(ours.peak_attempts_after, kubelet.peak_attempts_after / 3, minutes)
            # Registered again no later than kubelet's gap plus the cap allows.
            self.assertLessEqual(ours.all_registered_after, 2 * fm.BACKOFF_CAP + 2, minutes)

    def test_the_go_registrar_as_on_the_real_node(self):
        # docs/real-node-day2.md: kubelet v1.37.2 logged 7, 8 and 9 failed registrations of the
        # Go registrar's driver for outages of 1, 3 and 6 minutes.
        for minutes, failures in ((1, 7), (3, 8), (6, 9)):
            f = fm.run("go", "outage", minutes, 20, 1)
            during = sum(f.attempts[: int(f.fault.end)]) / 20
            self.assertLessEqual(abs(during - failures), 2, (minutes, during))

    def test_a_brownout_costs_requests_an_outage_does_not(self):
        outage = fm.run("ours", "outage", 3, 50, 3)
        brownout = fm.run("ours", "brownout", 3, 50, 3)
        self.assertEqual(sum(outage.requests[: int(outage.fault.end)]), 0)
        self.assertGreater(sum(brownout.requests[: int(brownout.fault.end)]), 0)

    def test_an_unknown_policy_is_refused(self):
        with self.assertRaises(SystemExit):
            fm.main(["--policies", "nope", "--nodes", "1"])


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
    import unittest_junit
    unittest_junit.main("fleet_model_test")

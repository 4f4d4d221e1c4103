#!/usr/bin/env python3
"""Tests of compare_calls.py, the judge of test/e2e/real-node.sh's kubeletclient-prediction check:
it must say SAME only when the requests, files and node objects are the same, and name every
difference otherwise. Runs the script as a process, as real-node.sh does."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "compare_calls.py")
SCRATCH = "/tmp/ndr-rn/p/case/root"
CAPS = {"method": "NodeGetCapabilities", "request": {}}


def publish(root, mode="SINGLE_NODE_WRITER", context=None):
    return {"method": "NodePublishVolume", "request": {
        "volume_id": "vol-1",
        "target_path": root + "/pods/u1/volumes/kubernetes.io~csi/pv-1/mount",
        "volume_capability": {"mount": {}, "access_mode": {"mode": mode}},
        "volume_context": context or {"tier": "gold"}}}


class CompareCalls(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write(self, name, text):
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def calls(self, recorded, predicted, first=0, last=None, extra=()):
        record = self.write("calls.jsonl", "".join(json.dumps(c) + "\n" for c in recorded))
        report = self.write("report.json", json.dumps({"volumes": [{"volume": "data", "calls": predicted}]}))
        last = len(recorded) if last is None else last
        run = subprocess.run([sys.executable, SCRIPT, "calls", "case", "publish", record, str(first),
                              str(last), report, SCRATCH, *extra], capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def test_same_requests_after_the_scratch_root_is_read_as_kubelets(self):
        code, out = self.calls([CAPS, CAPS, publish("/var/lib/kubelet")], [CAPS, CAPS, publish(SCRATCH)])
        self.assertEqual(code, 0, out)
        self.assertIn("case publish: SAME: 3 requests, in order: NodeGetCapabilities, "
                      "NodeGetCapabilities, NodePublishVolume", out)

    def test_a_changed_field_is_a_difference(self):
        code, out = self.calls([CAPS, publish("/var/lib/kubelet")],
                               [CAPS, publish(SCRATCH, mode="MULTI_NODE_MULTI_WRITER")])
        self.assertEqual(code, 1, out)
        self.assertIn("DIFFERENT", out)
        self.assertIn("MULTI_NODE_MULTI_WRITER", out)

    def test_a_missing_or_reordered_call_is_a_difference(self):
        code, out = self.calls([CAPS, CAPS, publish("/var/lib/kubelet")], [CAPS, publish(SCRATCH)])
        self.assertEqual(code, 1, out)
        self.assertIn("the real kubelet sent 3 requests, kubeletclient 2", out)
        code, out = self.calls([CAPS, publish("/var/lib/kubelet")], [publish(SCRATCH), CAPS])
        self.assertEqual(code, 1, out)

    def test_a_path_outside_the_scratch_root_is_not_rewritten(self):
        code, out = self.calls([publish("/var/lib/kubelet")], [publish("/elsewhere")])
        self.assertEqual(code, 1, out)

    def test_only_the_window_of_the_record_counts(self):
        other = publish("/var/lib/kubelet", context={"tier": "other pod"})
        code, out = self.calls([other, CAPS, publish("/var/lib/kubelet"), other],
                               [CAPS, publish(SCRATCH)], first=1, last=3)
        self.assertEqual(code, 0, out)

    def test_volume_stats_registration_and_identity_calls_are_left_out_and_said(self):
        stats = {"method": "NodeGetVolumeStats", "request": {"volume_id": "v", "volume_path": "/p"}}
        recorded = [CAPS, CAPS, {"method": "NodeGetInfo", "request": {}}, stats,
                    {"method": "Probe", "request": {}}, CAPS, publish("/var/lib/kubelet")]
        code, out = self.calls(recorded, [CAPS, CAPS, publish(SCRATCH)])
        self.assertEqual(code, 0, out)
        self.assertIn("left out of the record: NodeGetVolumeStats", out)
        self.assertIn("left out of the record: NodeGetCapabilities: the volume stats' capability check", out)
        self.assertIn("left out of the record: NodeGetInfo", out)
        self.assertIn("left out of the record: Probe", out)

    def test_an_explained_difference_is_said_and_only_it_is_forgiven(self):
        info = {"tier": "gold", "csi.storage.k8s.io/pod.name": "web"}
        explained = ["--explained", "NodePublishVolume.volume_context-=csi.storage.k8s.io/pod.name:why"]
        code, out = self.calls([publish("/var/lib/kubelet")], [publish(SCRATCH, context=info)],
                               extra=explained)
        self.assertEqual(code, 0, out)
        self.assertIn("explained difference: NodePublishVolume volume_context keys "
                      "csi.storage.k8s.io/pod.name only in kubeletclient's: why", out)
        info["tier"] = "silver"
        code, out = self.calls([publish("/var/lib/kubelet")], [publish(SCRATCH, context=info)],
                               extra=explained)
        self.assertEqual(code, 1, out)

    def report_calls(self, recorded, report, extra=()):
        record = self.write("calls.jsonl", "".join(json.dumps(c) + "\n" for c in recorded))
        path = self.write("report.json", json.dumps(report))
        run = subprocess.run([sys.executable, SCRIPT, "calls", "case", "phase", record, "0",
                              str(len(recorded)), path, SCRATCH, *extra],
                             capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def test_kept_periodic_calls_are_compared_and_storage_health_may_come_first(self):
        stats = {"method": "NodeGetVolumeStats", "request": {"volume_id": "v", "volume_path": "/p"}}
        health = {"method": "NodeGetVolumeHealth", "request": {"volume_id": "v"}}
        storage = {"method": "NodeGetStorageHealth", "request": {}}
        report = {"volumes": [{"volume": "data", "calls": [CAPS, stats],
                               "healthCalls": [CAPS, health]}],
                  "storageHealthProbes": [{"driver": "d", "calls": [CAPS, storage]}]}
        # kubelet's two health probes run concurrently: the storage one may come first.
        code, out = self.report_calls([CAPS, stats, CAPS, storage, CAPS, health], report,
                                      ["--keep-periodic"])
        self.assertEqual(code, 0, out)
        self.assertIn("SAME: 6 requests", out)
        # ... but a missing health call is a difference, and without --keep-periodic the record's
        # periodic calls are left out, so the report's are extra.
        code, out = self.report_calls([CAPS, stats, CAPS, storage], report, ["--keep-periodic"])
        self.assertEqual(code, 1, out)
        code, out = self.report_calls([CAPS, stats, CAPS, storage, CAPS, health], report)
        self.assertEqual(code, 1, out)
        self.assertIn("left out of the record: NodeGetVolumeHealth", out)

    def test_device_calls_come_after_every_volumes_calls(self):
        unpublish = lambda v: {"method": "NodeUnpublishVolume", "request": {"volume_id": v}}
        unstage = lambda v: {"method": "NodeUnstageVolume", "request": {"volume_id": v}}
        report = {"volumes": [{"volumeDir": "a", "calls": [unpublish("a")],
                               "deviceCalls": [CAPS, unstage("a")]},
                              {"volumeDir": "b", "calls": [unpublish("b")],
                               "deviceCalls": [CAPS, unstage("b")]}]}
        code, out = self.report_calls([unpublish("a"), unpublish("b"), CAPS, unstage("a"), CAPS,
                                       unstage("b")], report)
        self.assertEqual(code, 0, out)
        code, out = self.report_calls([unpublish("a"), CAPS, unstage("a"), unpublish("b"), CAPS,
                                       unstage("b")], report)
        self.assertEqual(code, 1, out)

    def test_a_republish_reports_rounds(self):
        report = {"rounds": [{"round": 1, "volumes": [{"volume": "data",
                                                       "calls": [CAPS, publish(SCRATCH)]}]},
                             {"round": 2, "volumes": [{"volume": "data",
                                                       "calls": [CAPS, publish(SCRATCH)]}]}]}
        real = [CAPS, publish("/var/lib/kubelet")]
        code, out = self.report_calls(real + real, report)
        self.assertEqual(code, 0, out)
        code, out = self.report_calls(real, report)
        self.assertEqual(code, 1, out)

    def test_nothing_on_either_side_is_not_a_pass(self):
        code, out = self.calls([CAPS], [], first=1)
        self.assertEqual(code, 1, out)
        self.assertIn("case publish: not compared: no requests on either side", out)

    def test_a_volume_kubeletclient_did_not_publish_is_not_a_pass(self):
        record = self.write("calls.jsonl", "")
        report = self.write("report.json", json.dumps({"volumes": [
            {"volume": "scratch", "skipped": "emptyDir: not a CSI volume"},
            {"volume": "data", "result": "not published: PVC is not bound"}]}))
        run = subprocess.run([sys.executable, SCRIPT, "calls", "case", "publish", record, "0", "0",
                              report, SCRATCH], capture_output=True, text=True)
        out = run.stdout + run.stderr
        self.assertEqual(run.returncode, 1, out)
        self.assertIn("volume scratch skipped by kubeletclient: emptyDir: not a CSI volume", out)
        self.assertIn("not compared: kubeletclient did not handle volume data: not published: "
                      "PVC is not bound", out)

    def test_a_damaged_record_is_said_to_be(self):
        record = self.write("calls.jsonl", json.dumps(CAPS) + "\n{\"method\": \"NodePubl\n")
        report = self.write("report.json", json.dumps({"volumes": []}))
        run = subprocess.run([sys.executable, SCRIPT, "calls", "case", "publish", record, "0", "2",
                              report, SCRATCH], capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)
        self.assertIn("line 2 is not a JSON request", run.stderr)
        self.assertNotIn("Traceback", run.stderr)

    def files(self, real, predicted):
        for name, text in real.items():
            self.write("real/" + name, text)
        for name, text in predicted.items():
            self.write("predicted/" + name, text)
        os.makedirs(self.path("real"), exist_ok=True)
        os.makedirs(self.path("predicted"), exist_ok=True)
        run = subprocess.run([sys.executable, SCRIPT, "files", "case", self.path("real"),
                              self.path("predicted"), SCRATCH], capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def test_files(self):
        name = "pods/u1/volumes/kubernetes.io~csi/pv-1/vol_data.json"
        code, out = self.files({name: '{"specVolID": "pv-1", "driverName": "d"}'},
                               {name: '{"driverName": "d", "specVolID": "pv-1"}'})
        self.assertEqual(code, 0, out)
        self.assertIn("case files: SAME: " + name, out)
        code, out = self.files({}, {"plugins/kubernetes.io/csi/d/h/vol_data.json": "{}"})
        self.assertEqual(code, 1, out)
        self.assertIn("written by kubeletclient only", out)

    def test_no_files_on_either_side_is_not_a_pass(self):
        code, out = self.files({}, {})
        self.assertEqual(code, 1, out)

    def test_node(self):
        entry = {"name": "d", "nodeID": "n1", "topologyKeys": ["zone"], "allocatable": {"count": 7}}
        real_csinode = self.write("csinode.json", json.dumps({"spec": {"drivers": [entry]}}))
        real_node = self.write("node.json", json.dumps({"metadata": {
            "annotations": {"csi.volume.kubernetes.io/nodeid": json.dumps({"d": "n1"})},
            "labels": {"zone": "z1", "kubernetes.io/hostname": "n1"}}}))

        def predicted(count):
            changed = dict(entry, allocatable={"count": count})
            return self.write("status.json", json.dumps({
                "csiNode": {"spec": {"drivers": [changed]}},
                "annotations": {"csi.volume.kubernetes.io/nodeid": json.dumps({"d": "n1"})},
                "labels": {"zone": "z1"}}))

        def run(status):
            r = subprocess.run([sys.executable, SCRIPT, "node", real_csinode, real_node, status, "d"],
                               capture_output=True, text=True)
            return r.returncode, r.stdout + r.stderr

        code, out = run(predicted(7))
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("node: SAME"), 3, out)
        code, out = run(predicted(8))
        self.assertEqual(code, 1, out)
        self.assertIn("node: DIFFERENT: CSINode driver entry", out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "..", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("compare_calls")

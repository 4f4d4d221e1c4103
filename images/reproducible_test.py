#!/usr/bin/env python3
"""The images and release files are the same bytes whoever builds them, wherever, whenever: two
assemblies of the same binaries (images/assemble.py, which images/release.sh and
images/build-images.sh run), from copies of the binaries in different directories with different
file times, modes and owners, under different umasks, time zones and locales, at different
moments, write byte-identical files (the same image digests). And the comparison can fail: a
binary one section larger gives another index. What assembly refuses (binaries of two builds, a
VEX statement a binary contradicts, an unreviewed package version in a release) it refuses before
writing anything.

    reproducible_test.py REGISTRAR DRIVER ARM64_REGISTRAR ARM64_DRIVER
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ASSEMBLE = os.path.join(HERE, "assemble.py")
# Where the assembled images say their source is: a checkout's path, as a local build names it.
SOURCE = "file:///src/csi-node-driver-registrar"
# The amd64 registrar and driver, then the arm64 ones unless arm64 is not built here (the reason in
# NDR_CROSS_ARM64_MISSING).
ARM64_MISSING = os.environ.get("NDR_CROSS_ARM64_MISSING", "")
COUNT = 2 if ARM64_MISSING else 4
BINARIES = sys.argv[1:1 + COUNT]
del sys.argv[1:1 + COUNT]


def tree(directory):
    """{file name: sha256} of a directory's files."""
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))}


class Reproducible(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="ndr-repro-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work)

    def assemble(self, name, umask, tz, lang, mtime, mode, owner, binaries=BINARIES):
        """Copies the binaries into a directory of their own, as the given user with the given
        times and modes, and assembles them from there; returns the output directory."""
        inputs = os.path.join(self.work, name, "in")
        os.makedirs(inputs)
        copies = []
        for i, binary in enumerate(binaries):
            copy = os.path.join(inputs, f"{i}-{os.path.basename(binary)}")
            shutil.copyfile(binary, copy)
            os.chmod(copy, mode)
            os.utime(copy, (mtime, mtime))
            if owner is not None:
                try:
                    os.chown(copy, owner, owner)
                except OSError:
                    pass  # a user namespace without that user (Bazel's sandbox): owner unchanged
            copies.append(copy)
        out = os.path.join(self.work, name, "out")
        env = dict(os.environ, TZ=tz, LANG=lang, LC_ALL=lang)
        platforms = [f"amd64={copies[0]},{copies[1]}"]
        if len(copies) == 4:
            platforms.append(f"arm64={copies[2]},{copies[3]}")
        run = subprocess.run(
            ["/usr/bin/python3", ASSEMBLE, out, "--source-url", SOURCE, "--tarballs"] + platforms,
            cwd=inputs, env=env, capture_output=True, text=True,
            preexec_fn=lambda: os.umask(umask))
        self.assertEqual(run.returncode, 0, run.stderr)
        return out

    def test_two_assemblies_are_the_same_bytes(self):
        root = os.geteuid() == 0
        first = self.assemble("a", 0o022, "UTC", "C.UTF-8", 946684800, 0o755, None)
        # Another moment: wait for the clock's second to change, so that anything read from the
        # clock would differ (an input of this test, not a wait for something to finish).
        started = int(time.time())
        deadline = time.monotonic() + 5
        while int(time.time()) == started and time.monotonic() < deadline:
            time.sleep(0.05)
        second = self.assemble("b", 0o077, "Asia/Tokyo", "C", int(time.time()), 0o700,
                               65534 if root else None)
        a, b = tree(first), tree(second)
        self.assertEqual(sorted(a), sorted(b))
        # Per program: the index, the VEX, and per platform a tarball, an SBOM and a provenance.
        platforms = len(BINARIES) // 2
        self.assertEqual(len(a), 2 * (2 + 3 * platforms), sorted(a))
        for name in a:
            self.assertEqual(a[name], b[name], f"{name} differs between the two assemblies")

        # What decides it, read back from an archive: every layer entry owned by 0:0 with no
        # names, dated by the build's epoch (the image's created), and sorted.
        with tarfile.open(os.path.join(first, "csi-node-driver-registrar.oci.tar")) as archive:
            blob = lambda d: archive.extractfile("blobs/sha256/" + d["digest"].split(":")[1]).read()
            index = json.loads(blob(json.load(archive.extractfile("index.json"))["manifests"][0]))
            images = [m for m in index["manifests"] if m["platform"]["os"] == "linux"]
            self.assertEqual(len(images), len(BINARIES) // 2)
            for image in images:
                manifest = json.loads(blob(image))
                config = json.loads(blob(manifest["config"]))
                epoch = int(time.mktime(time.strptime(config["created"], "%Y-%m-%dT%H:%M:%SZ"))
                            - time.timezone)
                with tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]))) as layer:
                    entries = layer.getmembers()
                names = [e.name for e in entries]
                self.assertEqual(names, sorted(names))
                for entry in entries:
                    self.assertEqual((entry.uid, entry.gid, entry.uname, entry.gname,
                                      entry.mtime), (0, 0, "", "", epoch), entry.name)
                    self.assertIn(entry.mode, (0o755, 0o644), entry.name)

    def test_an_index_of_two_platforms(self):
        # Each platform's image in the index holds that platform's binary (ELF e_machine).
        if ARM64_MISSING:
            self.skipTest(f"arm64 is not built here: {ARM64_MISSING}")
        out = self.assemble("p", 0o022, "UTC", "C.UTF-8", 946684800, 0o755, None)
        machines = {}
        with tarfile.open(os.path.join(out, "csi-node-driver-registrar.oci.tar")) as archive:
            blob = lambda d: archive.extractfile("blobs/sha256/" + d["digest"].split(":")[1]).read()
            index = json.loads(blob(json.load(archive.extractfile("index.json"))["manifests"][0]))
            for image in index["manifests"]:
                if image["platform"]["os"] != "linux":
                    continue
                manifest = json.loads(blob(image))
                with tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]))) as layer:
                    elf = layer.extractfile("csi-node-driver-registrar").read(20)
                machines[image["platform"]["architecture"]] = int.from_bytes(elf[18:20], "little")
        self.assertEqual(machines, {"amd64": 62, "arm64": 183})  # EM_X86_64, EM_AARCH64

    def test_a_different_binary_gives_a_different_index(self):
        # The driver with one section more, which strip keeps: it still runs and says the same
        # --version, but it is not the same binary.
        changed = os.path.join(self.work, "changed-driver")
        extra = os.path.join(self.work, "extra")
        with open(extra, "wb") as f:
            f.write(b"one more byte than before")
        subprocess.run(["objcopy", "--add-section", f".ndr.test={extra}", "--set-section-flags",
                        ".ndr.test=readonly", BINARIES[1], changed], check=True)
        one = self.assemble("c", 0o022, "UTC", "C", 0, 0o755, None, BINARIES[:2])
        other = self.assemble("d", 0o022, "UTC", "C", 0, 0o755, None, [BINARIES[0], changed])
        a, b = tree(one), tree(other)
        self.assertEqual(a["csi-node-driver-registrar.oci.tar"],
                         b["csi-node-driver-registrar.oci.tar"])
        self.assertNotEqual(a["sample-csi-driver.oci.tar"], b["sample-csi-driver.oci.tar"])


class Refusals(unittest.TestCase):
    """What assemble.py refuses, it refuses before writing anything."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="ndr-refuse-")
        self.addCleanup(shutil.rmtree, self.work)

    def run_assemble(self, *args, binaries=BINARIES[:2], source=("--source-url", SOURCE)):
        out = os.path.join(self.work, "out")
        run = subprocess.run(["/usr/bin/python3", ASSEMBLE, out] + list(source) + list(args)
                             + [f"amd64={binaries[0]},{binaries[1]}"],
                             capture_output=True, text=True)
        return run, out

    def statements(self, text):
        path = os.path.join(self.work, "statements.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_binaries_of_two_builds(self):
        # The driver's stamped commit changed: it says another build than the registrar.
        data = open(BINARIES[1], "rb").read()
        version = subprocess.run([BINARIES[1], "--version"], capture_output=True, text=True).stdout
        commit = version.split("commit: ")[1].split("\n")[0].encode()
        self.assertEqual(len(commit), 40, version)
        other = commit[:-1] + (b"0" if commit[-1:] != b"0" else b"1")
        changed = os.path.join(self.work, "driver")
        with open(changed, "wb") as f:
            f.write(data.replace(commit, other))
        os.chmod(changed, 0o755)
        run, out = self.run_assemble(binaries=[BINARIES[0], changed])
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("the binaries are not of one build", run.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_statement_a_binary_contradicts(self):
        # "main is not linked": every binary has a main.
        path = self.statements("""statements:
- vulnerability: CVE-0000-0001
  source: glibc
  versions: [%s]
  status: not_affected
  justification: vulnerable_code_not_present
  impact: pretend
  absent_symbols: [main]
""" % ", ".join(f'"{v}"' for v in self.glibc_versions()))
        run, out = self.run_assemble("--vex", path)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("says main is not in", run.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_function_said_uncalled_that_is_called(self):
        # "nothing calls main": _start does, and the binary's code says so.
        path = self.statements("""statements:
- vulnerability: CVE-0000-0002
  source: glibc
  versions: [%s]
  status: not_affected
  justification: vulnerable_code_not_in_execute_path
  impact: pretend
  uncalled_symbols: [main]
""" % ", ".join(f'"{v}"' for v in self.glibc_versions()))
        run, out = self.run_assemble("--vex", path)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("says nothing calls or refers to main in", run.stderr)
        self.assertIn("_start's code at 0x", run.stderr)
        self.assertFalse(os.path.exists(out))

    def test_unreviewed_versions_warn_and_refuse_a_release(self):
        path = self.statements("statements: []\n")
        run, out = self.run_assemble("--vex", path, "--release")
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("a release needs the CVEs known against every linked", run.stderr)
        self.assertFalse(os.path.exists(out))
        run, out = self.run_assemble("--vex", path)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("has not been reviewed", run.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "csi-node-driver-registrar.oci.tar")))

    def test_the_judge_for_some_platforms_only(self):
        if ARM64_MISSING:
            self.skipTest(f"needs a second platform, and arm64 is not built here: {ARM64_MISSING}")
        # An index holds the same image for every platform: kubeletclient for all or for none.
        out = os.path.join(self.work, "out")
        run = subprocess.run(["/usr/bin/python3", ASSEMBLE, out, "--source-url", SOURCE,
                              f"amd64={BINARIES[0]},{BINARIES[1]},{BINARIES[0]}",
                              f"arm64={BINARIES[2]},{BINARIES[3]}"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("give KUBELETCLIENT for every platform or for none", run.stderr)
        self.assertFalse(os.path.exists(out))

    def test_no_source_or_a_placeholder(self):
        # Every image names where its source is; nobody's example address will do.
        run, out = self.run_assemble(source=())
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("--source-url", run.stderr)
        self.assertFalse(os.path.exists(out))
        run, out = self.run_assemble(source=("--source-url", "https://git.example.org/ndr"))
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("is an example address", run.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_release_reissues_its_vex(self):
        # A release's documents get a statement corrected and one added, for the same index,
        # without a rebuild; the release's own files are left as they were.
        glibc = ", ".join(f'"{v}"' for v in self.glibc_versions())
        run, release = self.run_assemble("--vex", self.statements("""statements:
- vulnerability: CVE-0000-0010
  source: glibc
  versions: [%s]
  status: under_investigation
  impact: looking
""" % glibc))
        self.assertEqual(run.returncode, 0, run.stderr)
        before = tree(release)
        additions = os.path.join(self.work, "additions.yaml")
        with open(additions, "w") as f:
            f.write("""statements:
- vulnerability: CVE-0000-0010
  source: glibc
  versions: [%s]
  status: not_affected
  justification: vulnerable_code_not_in_execute_path
  impact: never called
- vulnerability: CVE-0000-0011
  source: glibc
  versions: [%s]
  status: not_affected
  justification: vulnerable_code_not_present
  impact: not linked
  absent_symbols: [wordexp]
- vulnerability: CVE-0000-0012
  source: no-such-source
  versions: ["1.0"]
  status: affected
  impact: elsewhere
  action: upgrade
""" % (glibc, glibc))
        out = os.path.join(self.work, "reissued")
        reissue = [os.path.join(HERE, "vex_reissue.py"), release, additions, out,
                   "--timestamp=2030-01-02T03:04:05Z"]
        run = subprocess.run(["/usr/bin/python3"] + reissue, capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("CVE-0000-0010: corrected; CVE-0000-0011: added", run.stdout)
        self.assertIn("CVE-0000-0011 (glibc): its absent_symbols not checked", run.stderr)
        self.assertEqual(tree(release), before)
        for program in ("csi-node-driver-registrar", "sample-csi-driver"):
            old = json.load(open(os.path.join(release, f"{program}.openvex.json")))
            new = json.load(open(os.path.join(out, f"{program}.openvex.json")))
            self.assertEqual((new["@id"], new["timestamp"], new["version"], new["last_updated"]),
                             (old["@id"], old["timestamp"], 2, "2030-01-02T03:04:05Z"))
            by_name = {s["vulnerability"]["name"]: s for s in new["statements"]}
            self.assertEqual(sorted(by_name), ["CVE-0000-0010", "CVE-0000-0011"])
            self.assertEqual(len(new["statements"]), 2)
            self.assertEqual(by_name["CVE-0000-0010"]["status"], "not_affected")
            self.assertEqual(by_name["CVE-0000-0011"]["products"][0]["@id"],
                             old["statements"][0]["products"][0]["@id"])
        # A second run into the same directory is refused, and writes nothing.
        run = subprocess.run(["/usr/bin/python3"] + reissue, capture_output=True, text=True)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("is not empty", run.stderr)

    def glibc_versions(self):
        out = subprocess.run(["dpkg-query", "-W", "-f", "${source:Version}", "libc6-dev"],
                             capture_output=True, text=True, check=True).stdout
        return [out]


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "test", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("reproducible")

"""Runs the README's quick starts, so that a command a newcomer copies cannot break unnoticed.

Each block the README marks with a `<!-- quickstart: ... -->` line right above its ```sh fence is
run with bash (-e, -o pipefail) and the freshly built programs first on PATH under the names a
release installs: csi-node-driver-registrar, sample-csi-driver, kubeletclient. A block must exit
0 within two minutes (only a hang reaches that); it runs in a session of its own, which is killed
afterwards, so that nothing it started outlives it. Blocks that need root or a network are not
marked.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""))
PROGRAMS = {
    "csi-node-driver-registrar": "registrar/csi-node-driver-registrar",
    "sample-csi-driver": "test/csidriver/sample-csi-driver",
    "kubeletclient": "kubeletclient/kubeletclient",
}
MARK = re.compile(r"^<!-- quickstart\b.*-->\s*$")
HANG = 120


def quickstart_blocks(readme):
    """(line number, script) of every marked ```sh block."""
    lines = readme.split("\n")
    blocks = []
    for i, line in enumerate(lines):
        if not MARK.match(line):
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            raise ValueError(f"README.md:{i + 1}: a quickstart mark must be followed by a ```sh "
                             "fence")
        end = i + 2
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"README.md:{i + 2}: the quickstart block is not closed")
        blocks.append((i + 3, "\n".join(lines[i + 2:end]) + "\n"))
    return blocks


def run_block(script, bin_dir):
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    process = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever the block left running
        except ProcessLookupError:
            pass
    return process.returncode, output


class QuickstartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(RUNFILES, "README.md"), encoding="utf-8") as handle:
            cls.readme = handle.read()
        cls.scratch = tempfile.TemporaryDirectory(prefix="ndr-quickstart-bin-")
        cls.bin_dir = cls.scratch.name
        for name, path in PROGRAMS.items():
            os.symlink(os.path.join(RUNFILES, path), os.path.join(cls.bin_dir, name))

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def test_the_readme_has_its_quick_starts(self):
        # Two of them: trying the registrar, and the judge on the sample driver. A mark removed
        # by mistake would otherwise leave a quick start untested without a word.
        self.assertGreaterEqual(len(quickstart_blocks(self.readme)), 2)

    def test_each_quick_start_runs(self):
        failures = []
        for line, script in quickstart_blocks(self.readme):
            code, output = run_block(script, self.bin_dir)
            print(f"README.md:{line}: exit {code}")
            if code != 0:
                what = f"still running after {HANG} s" if code is None else f"exit {code}"
                failures.append(f"README.md:{line}: {what}:\n{script}--- output:\n{output}")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_a_broken_block_fails(self):
        # The runner itself: a block with a failing command, or a missing program, is not passed.
        for script in ("true\nfalse\ntrue\n", "no-such-program --version\n",
                       "kubeletclient probe --registration-socket=/nonexistent/x.sock\n"):
            code, output = run_block(script, self.bin_dir)
            self.assertNotEqual(code, 0, f"{script!r} passed:\n{output}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(RUNFILES, "test", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("quickstart")

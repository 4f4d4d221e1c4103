#!/usr/bin/env python3
"""Unit tests of the release's parts that decide its bytes and its claims: images/oci.py (layer
order, ownership, times, gzip headers, the archive), images/vex.py (statements checked, a
statement a binary contradicts refused, products and subcomponents as scanners match them),
images/notices.py (where copyright files are found), images/scanner_files.py,
images/provenance.py and images/source_uri.py (what may be named as a release's source).

vex.py's uncalled_symbols evidence is tested on small C programs compiled here with cc: a function
present and uncalled, called, called only by another listed one, with its address in a data table
or loaded in code, and absent; each as a PIE and as a static non-PIE binary."""
import contextlib
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import notices  # noqa: E402
import oci  # noqa: E402
import provenance  # noqa: E402
import sbom  # noqa: E402
import scanner_files  # noqa: E402
import source_uri  # noqa: E402
import vex  # noqa: E402

EPOCH = 1795661513


def members(data):
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [(m.name, m.type, m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime)
                for m in tar.getmembers()]


def package(name="libfoo-dev", arch="amd64", version="1.0-1", source="foo", source_version=None,
            root="/", installed=None):
    return sbom.Package(name, arch, version, source, source_version or version, None,
                        installed or name, root)


class Oci(unittest.TestCase):
    def test_layer_is_sorted_owned_by_root_and_dated_by_the_epoch(self):
        files = {"z": (0o644, b"z"), "a/b/c": (0o755, b"abc"), "etc/os-release": (0o644, b"x")}
        data = oci.tar_bytes(files, EPOCH)
        self.assertEqual(members(data), [
            ("a", tarfile.DIRTYPE, 0o755, 0, 0, "", "", EPOCH),
            ("a/b", tarfile.DIRTYPE, 0o755, 0, 0, "", "", EPOCH),
            ("a/b/c", tarfile.REGTYPE, 0o755, 0, 0, "", "", EPOCH),
            ("etc", tarfile.DIRTYPE, 0o755, 0, 0, "", "", EPOCH),
            ("etc/os-release", tarfile.REGTYPE, 0o644, 0, 0, "", "", EPOCH),
            ("z", tarfile.REGTYPE, 0o644, 0, 0, "", "", EPOCH),
        ])

    def test_the_same_files_in_any_order_give_the_same_bytes(self):
        files = [("b", (0o644, b"1")), ("a/x", (0o755, b"2")), ("c", (0o644, b""))]
        self.assertEqual(oci.tar_bytes(dict(files), EPOCH),
                         oci.tar_bytes(dict(reversed(files)), EPOCH))
        self.assertNotEqual(oci.tar_bytes(dict(files), EPOCH),
                            oci.tar_bytes(dict(files), EPOCH + 1))

    def test_paths_that_leave_the_root_are_refused(self):
        for path in ("../x", "/etc/passwd", "a/../../b", "a//b", "./a", ""):
            with self.assertRaises(ValueError, msg=path):
                oci.tar_bytes({path: (0o644, b"")}, EPOCH)

    def test_gzip_has_no_name_and_no_time(self):
        data = oci.gzip_bytes(b"hello" * 100)
        self.assertEqual(data[:4], b"\x1f\x8b\x08\x00")  # deflate, no FNAME or other flags
        self.assertEqual(data[4:8], b"\x00\x00\x00\x00")  # MTIME 0
        self.assertEqual(gzip.decompress(data), b"hello" * 100)
        self.assertEqual(data, oci.gzip_bytes(b"hello" * 100))

    def test_index_archive_names_the_image_and_holds_what_it_reaches(self):
        layout = oci.Layout()
        platform = {"architecture": "arm", "os": "linux", "variant": "v7"}
        manifest = layout.image({"bin": (0o755, b"\x7fELF")}, platform, EPOCH, ["/bin"],
                                {"org.opencontainers.image.version": "1.0.0"})
        self.assertEqual(manifest["platform"], platform)
        attestation = layout.attestation(manifest, [{"predicateType": "https://x/y", "a": 1}])
        layout.add(b"unreached", "application/octet-stream")
        index = layout.index([manifest, attestation], {"org.opencontainers.image.version": "1"})
        data = layout.archive_bytes(index, "1.0.0", "localhost/ndr/x:1.0.0", EPOCH)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            names = tar.getnames()
            top = json.load(tar.extractfile("index.json"))
        self.assertIn("oci-layout", names)
        self.assertEqual(top["manifests"][0]["digest"], index["digest"])
        self.assertEqual(top["manifests"][0]["annotations"], {
            "org.opencontainers.image.ref.name": "1.0.0",
            "io.containerd.image.name": "localhost/ndr/x:1.0.0"})
        blobs = {n for n in names if n.startswith("blobs/sha256/") and not n.endswith("/")}
        self.assertEqual(blobs, {"blobs/sha256/" + d.split(":")[1]
                                 for d in layout.reachable(index)})
        # The index, the image's manifest, config and layer, the attestation's manifest, config
        # and statement: everything but the unreached blob.
        self.assertEqual(len(blobs), 7)
        config = layout.json_blob(layout.json_blob(manifest)["config"])
        self.assertEqual((config["architecture"], config["variant"], config["created"]),
                         ("arm", "v7", "2026-11-26T02:51:53Z"))
        entry = layout.json_blob(index)["manifests"][1]
        self.assertEqual(entry["annotations"]["vnd.docker.reference.digest"], manifest["digest"])
        self.assertEqual(entry["platform"], {"architecture": "unknown", "os": "unknown"})


STATEMENTS = """
reviewed_without_findings:
  - {source: quiet, versions: ["2-1"], note: none known}
statements:
  - vulnerability: CVE-1
    source: foo
    versions: ["1.0-1"]
    status: not_affected
    justification: vulnerable_code_not_present
    impact: bar() is not linked.
    absent_symbols: [bar]
  - vulnerability: CVE-2
    source: foo
    versions: ["1.0-1"]
    platforms: [arm64]
    status: affected
    impact: It is there.
    action: Upgrade.
"""


# A program whose functions are every case of uncalled_symbols: uncalled, called from main, called
# only from outer (itself uncalled), reached only through a data table, and with its address loaded
# in main's code (a RIP-relative lea in a PIE, a $0x... immediate in a non-PIE binary).
PROGRAM = r"""
int uncalled(int x) { return x * 3; }
int called(int x) { return x + 1; }
int inner(int x) { return x - 1; }
int outer(int x) { return inner(x) * 2; }
int tabled(int x) { return x << 2; }
int hooked(int x) { return x >> 1; }
int (*table[])(int) = {tabled, 0};
int (*volatile hook)(int);
int main(int argc, char **argv) {
  (void)argv;
  hook = hooked;
  return called(argc) + (table[argc > 5] ? table[argc > 5](argc) : 0) + hook(argc);
}
"""
UNCALLED = """statements:
  - vulnerability: CVE-3
    source: foo
    versions: ["1.0-1"]
    status: not_affected
    justification: vulnerable_code_not_in_execute_path
    impact: pretend.
    uncalled_symbols: %s
"""


class Vex(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ndr-vex-")
        self.addCleanup(shutil.rmtree, self.dir)

    def load(self, text):
        path = os.path.join(self.dir, "statements.yaml")
        with open(path, "w") as f:
            f.write(text)
        return vex.load_statements(path)

    def test_statements_need_what_openvex_needs(self):
        cases = {
            "status": ("status: not_affected", "status: fine"),
            "justification": ("justification: vulnerable_code_not_present",
                              "justification: trust me"),
            "action": ("    action: Upgrade.\n", ""),
            "unknown field": ("impact: It is there.", "impact: It is there.\n    cvss: 9"),
            "versions": ('versions: ["1.0-1"]\n    platforms', "versions: []\n    platforms"),
        }
        for name, (old, new) in cases.items():
            self.assertIn(old, STATEMENTS, name)
            with self.assertRaises(vex.VexError, msg=name):
                self.load(STATEMENTS.replace(old, new, 1))
        statements = self.load(STATEMENTS)
        self.assertEqual([s["vulnerability"] for s in statements], ["CVE-1", "CVE-2"])

    def test_a_statement_the_binary_contradicts_is_found(self):
        statements = self.load(STATEMENTS)
        linked = {"/bin/x": [package(source="foo")]}
        self.assertEqual(vex.check_evidence(statements, linked, lambda _: {"baz"}, "amd64"), [])
        problems = vex.check_evidence(statements, linked, lambda _: {"bar", "baz"}, "amd64")
        self.assertEqual(len(problems), 1)
        self.assertIn("says bar is not in /bin/x, but it is", problems[0])
        problems = vex.check_evidence(statements, linked, lambda _: None, "amd64")
        self.assertIn("no symbol table", problems[0])
        # Another version of the package: the statement does not apply, nothing is checked.
        other = {"/bin/x": [package(source="foo", version="1.0-2")]}
        self.assertEqual(vex.check_evidence(statements, other, lambda _: {"bar"}, "amd64"), [])

    def test_unreviewed_source_versions(self):
        statements = self.load(STATEMENTS)
        self.assertEqual(vex.unreviewed(statements, [
            package(source="foo"), package("libq", source="quiet", version="2-1"),
            package("libn", source="new", version="3-1")]), [("new", "3-1")])

    def test_products_and_subcomponents_as_scanners_match_them(self):
        statements = self.load(STATEMENTS)
        contents = [("amd64", package(source="foo")),
                    ("arm64", package(arch="arm64", source="foo")),
                    ("arm64", package("libother", arch="arm64", source="other"))]
        document = vex.document("https://x/vex", "us", "2026-11-26T00:00:00Z", statements,
                                [("pkg:oci/x@sha256%3Aabc", contents)])
        self.assertEqual(document["@context"], "https://openvex.dev/ns/v0.2.0")
        first, second = document["statements"]
        self.assertEqual(first["products"], [{"@id": "pkg:oci/x@sha256%3Aabc", "subcomponents": [
            {"@id": "pkg:deb/debian/libfoo-dev?arch=amd64"},
            {"@id": "pkg:deb/debian/libfoo-dev?arch=arm64"}]}])
        self.assertEqual((first["status"], first["justification"], first["impact_statement"]),
                         ("not_affected", "vulnerable_code_not_present", "bar() is not linked."))
        # The arm64-only statement names the arm64 package alone.
        self.assertEqual(second["products"][0]["subcomponents"],
                         [{"@id": "pkg:deb/debian/libfoo-dev?arch=arm64"}])
        self.assertEqual(second["action_statement"], "Upgrade.")
        # A product with none of the packages gets no statement at all.
        empty = vex.document("i", "us", "t", statements, [("p", contents[2:])])
        self.assertEqual(empty["statements"], [])

    def test_the_projects_statements_load(self):
        statements = vex.load_statements(os.path.join(HERE, "vex", "statements.yaml"))
        # The whole file: the gRPC CVEs Debian never fixed, and glibc's and OpenSSL's open ones.
        self.assertGreater(len(statements), 15)
        self.assertLessEqual({"grpc", "glibc", "openssl"}, {s["source"] for s in statements})
        for statement in statements:
            self.assertIn(statement.get("severity", "UNKNOWN"), vex.SEVERITIES)

    def test_symbols_of_an_elf_file(self):
        source = os.path.join(self.dir, "p.c")
        with open(source, "w") as f:
            f.write("int visible_function(void) { return 1; }\nint main(void) { return 0; }\n")
        binary = os.path.join(self.dir, "p")
        subprocess.run(["cc", "-o", binary, source], check=True)
        symbols = vex.defined_symbols(binary)
        self.assertIn("visible_function", symbols)
        self.assertIn("main", symbols)
        self.assertNotIn("printf", symbols)
        subprocess.run(["strip", binary], check=True)
        self.assertIsNone(vex.defined_symbols(binary))

    def test_evidence_goes_with_its_justification(self):
        uncalled = STATEMENTS.replace(
            "justification: vulnerable_code_not_present\n    impact: bar() is not linked.\n"
            "    absent_symbols: [bar]",
            "justification: vulnerable_code_not_in_execute_path\n    impact: bar() never runs.\n"
            "    uncalled_symbols: [bar, baz]")
        self.assertNotEqual(uncalled, STATEMENTS)
        statements = self.load(uncalled)
        self.assertEqual(statements[0]["uncalled_symbols"], ["bar", "baz"])
        cases = {
            # absent_symbols say code is not there, uncalled_symbols that it never runs.
            "uncalled_symbols, code not present": (
                "uncalled_symbols are evidence that code present is never run",
                uncalled.replace("justification: vulnerable_code_not_in_execute_path",
                                 "justification: vulnerable_code_not_present")),
            "absent_symbols, not in execute path": (
                "absent_symbols are evidence that code is not present",
                uncalled.replace("uncalled_symbols: [bar, baz]", "absent_symbols: [bar]")),
            "uncalled_symbols, cannot be controlled": (
                "uncalled_symbols are evidence",
                uncalled.replace("vulnerable_code_not_in_execute_path",
                                 "vulnerable_code_cannot_be_controlled_by_adversary")),
            "uncalled_symbols on an affected statement": (
                "uncalled_symbols are evidence",
                uncalled.replace("impact: It is there.",
                                 "impact: It is there.\n    uncalled_symbols: [bar]")),
            "uncalled_symbols empty": ("'uncalled_symbols' must be a list of symbol names",
                                       uncalled.replace("[bar, baz]", "[]")),
            "uncalled_symbols not a list": ("'uncalled_symbols' must be a list of symbol names",
                                            uncalled.replace("[bar, baz]", "bar")),
            "uncalled_symbols not names": ("'uncalled_symbols' must be a list of symbol names",
                                           uncalled.replace("[bar, baz]", "[bar, 3]")),
        }
        for name, (said, text) in cases.items():
            with self.assertRaises(vex.VexError, msg=name) as raised:
                self.load(text)
            self.assertIn(said, str(raised.exception), name)

    def test_a_functions_parts_are_it(self):
        # A compiler's part or clone of bar (bar.cold, bar.part.0) is bar's code: bar is there.
        statements = self.load(STATEMENTS)
        linked = {"/bin/x": [package(source="foo")]}
        for symbols in ({"bar.cold"}, {"bar.part.0.isra.0"}):
            problems = vex.check_evidence(statements, linked, lambda _, s=symbols: s, "amd64")
            self.assertEqual(len(problems), 1, symbols)
            self.assertIn("says bar is not in /bin/x, but it is", problems[0])
        for symbols in ({"barn"}, {"foo.bar"}, {"bar_cold"}):
            self.assertEqual(
                vex.check_evidence(statements, linked, lambda _, s=symbols: s, "amd64"), [])
        self.assertEqual(vex.named_after("f.part.0"), ["f.part.0", "f.part", "f"])
        self.assertEqual(vex.named_after(".L.str"), [".L.str", ".L"])

    # uncalled_symbols against real binaries: PROGRAM compiled once for the class.

    @classmethod
    def setUpClass(cls):
        cls.programs = tempfile.mkdtemp(prefix="ndr-vex-programs-")
        source = os.path.join(cls.programs, "p.c")
        with open(source, "w") as f:
            f.write(PROGRAM)
        cls.binaries = {}
        for name, flags in (("pie", ["-fpie", "-pie"]),
                            ("static", ["-fno-pie", "-no-pie", "-static"])):
            binary = os.path.join(cls.programs, name)
            subprocess.run(["cc", "-O0", *flags, "-o", binary, source], check=True)
            cls.binaries[name] = binary

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.programs)

    def code_is_read(self):
        if vex.Elf(self.binaries["pie"]).machine not in vex.CODE_READ:
            self.skipTest("this machine's code is not read for references (vex.CODE_READ)")

    def check(self, names, binary, notes=None):
        path = os.path.join(self.dir, "uncalled.yaml")
        with open(path, "w") as f:
            f.write(UNCALLED % json.dumps(names))
        statements = vex.load_statements(path)
        return vex.check_evidence(statements, {binary: [package(source="foo")]},
                                  vex.defined_symbols, "amd64", notes=notes)

    def test_uncalled_present_and_uncalled_holds(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            self.assertIn("uncalled", vex.defined_symbols(binary))
            self.assertEqual(self.check(["uncalled"], binary), [], name)

    def test_uncalled_absent_holds(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            self.assertEqual(self.check(["not_linked_at_all"], binary), [], name)
            self.assertEqual(self.check(["uncalled", "not_linked_at_all"], binary), [], name)

    def test_uncalled_but_called_is_a_contradiction(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            problems = self.check(["called"], binary)
            self.assertEqual(len(problems), 1, name)
            self.assertIn("CVE-3 (foo): the statement says nothing calls or refers to called in "
                          f"{binary}, but main's code at 0x", problems[0])
            self.assertIn("(call) refers to called", problems[0])

    def test_uncalled_called_only_by_another_listed_function_holds(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            self.assertEqual(self.check(["outer", "inner"], binary), [], name)
            problems = self.check(["inner"], binary)
            self.assertEqual(len(problems), 1, name)
            self.assertIn("outer's code at 0x", problems[0])

    def test_uncalled_with_an_address_in_a_data_table_is_a_contradiction(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            problems = self.check(["tabled"], binary)
            self.assertEqual(len(problems), 1, name)
            self.assertIn("(in table)", problems[0])
            self.assertNotIn("'s code", problems[0])
            # The table is only main's: listing it makes it part of the set, and main's use of it
            # is the reference found.
            problems = self.check(["tabled", "table"], binary)
            self.assertEqual(len(problems), 1, name)
            self.assertIn("main's code at 0x", problems[0])
            self.assertIn("refers to table", problems[0])

    def test_uncalled_with_an_address_loaded_in_code_is_a_contradiction(self):
        self.code_is_read()
        for name, binary in self.binaries.items():
            problems = self.check(["hooked"], binary)
            self.assertEqual(len(problems), 1, name)
            self.assertIn("main's code at 0x", problems[0])
            self.assertIn("refers to hooked", problems[0])

    def test_uncalled_each_binary_is_disassembled_once(self):
        self.code_is_read()
        binary = os.path.join(self.dir, "once")
        shutil.copy(self.binaries["pie"], binary)
        with mock.patch.object(vex, "_disassemble", wraps=vex._disassemble) as disassemble:
            path = os.path.join(self.dir, "two.yaml")
            with open(path, "w") as f:
                f.write(UNCALLED % '["uncalled"]' + (UNCALLED % '["called"]').split(
                    "statements:\n")[1].replace("CVE-3", "CVE-4"))
            statements = vex.load_statements(path)
            linked = {binary: [package(source="foo")]}
            for _ in range(2):
                problems = vex.check_evidence(statements, linked, vex.defined_symbols, "amd64")
                self.assertEqual(len(problems), 1)
                self.assertIn("CVE-4", problems[0])
            self.assertEqual(disassemble.call_count, 1)
            # A binary no statement with uncalled_symbols applies to is not read at all.
            other = {binary: [package(source="bar")]}
            self.assertEqual(vex.check_evidence(statements, other, vex.defined_symbols, "amd64"),
                             [])
            self.assertEqual(disassemble.call_count, 1)

    def test_uncalled_where_code_is_not_read_it_says_so(self):
        # As on aarch64: no objdump reading for this machine. Presence is all that is checked, and
        # the result says so; only a pointer in data is still found.
        binary = self.binaries["static"]
        machine = vex.Elf(binary).machine
        with mock.patch.object(vex, "CODE_READ", {}), mock.patch.object(vex, "_READ", {}):
            notes = []
            self.assertEqual(self.check(["called"], binary, notes=notes), [])
            self.assertEqual(len(notes), 1)
            self.assertIn(f"CVE-3 (foo): references not read on {machine}: called is in "
                          f"{binary}", notes[0])
            notes = []
            self.assertEqual(self.check(["not_linked_at_all"], binary, notes=notes), [])
            self.assertEqual(notes, [])  # absent: nothing left unread
            notes = []
            problems = self.check(["tabled"], binary, notes=notes)
            self.assertEqual(len(problems), 1)
            self.assertIn("(in table)", problems[0])
            self.assertEqual(len(notes), 1)
            # Without a list for them, the notes are warnings on stderr.
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                self.assertEqual(self.check(["uncalled"], binary), [])
            self.assertIn(f"warning: CVE-3 (foo): references not read on {machine}: uncalled",
                          stderr.getvalue())

    def test_uncalled_in_an_arm64_binary_is_checked_for_presence_only(self):
        if not shutil.which("aarch64-linux-gnu-gcc"):
            self.skipTest("no aarch64-linux-gnu-gcc")
        binary = os.path.join(self.dir, "arm64")
        subprocess.run(["aarch64-linux-gnu-gcc", "-O0", "-o", binary,
                        os.path.join(self.programs, "p.c")], check=True)
        notes = []
        self.assertEqual(self.check(["called", "not_linked_at_all"], binary, notes=notes), [])
        self.assertEqual(len(notes), 1)
        self.assertIn("references not read on aarch64: called is in", notes[0])

    def test_uncalled_in_a_stripped_binary_is_a_problem(self):
        binary = os.path.join(self.dir, "stripped")
        shutil.copy(self.binaries["pie"], binary)
        subprocess.run(["strip", binary], check=True)
        problems = self.check(["uncalled"], binary)
        self.assertEqual(len(problems), 1)
        self.assertIn("has no symbol table to check uncalled_symbols against", problems[0])


class Notices(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ndr-notices-")
        self.addCleanup(shutil.rmtree, self.root)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def test_the_packages_own_file_first(self):
        self.write("usr/share/doc/libfoo-dev/copyright", "Format: x\nLicense: MIT\n")
        path, note = notices.find_copyright(package(root=self.root), {})
        self.assertEqual(path, os.path.join(self.root, "usr/share/doc/libfoo-dev/copyright"))
        self.assertEqual(note, "")

    def test_a_symlink_out_of_the_root_is_not_followed(self):
        os.makedirs(os.path.join(self.root, "usr/share/doc"))
        os.symlink("/usr/share/doc/libc6-dev", os.path.join(self.root, "usr/share/doc/libfoo-dev"))
        with self.assertRaises(notices.NoticeError) as raised:
            notices.find_copyright(package(root=self.root), {})
        self.assertIn("libfoo-dev", str(raised.exception))

    def test_then_an_installed_package_of_the_same_source(self):
        # libc6-dev is installed here (the build needs it); ask as if our package were glibc's.
        version = subprocess.run(["dpkg-query", "-W", "-f", "${source:Version}", "libc6-dev"],
                                 capture_output=True, text=True, check=True).stdout
        by_source = notices.installed_by_source()
        missing = package("libc6-dev", root=self.root, source="glibc", version=version)
        path, note = notices.find_copyright(missing, by_source)
        self.assertTrue(path.startswith("/usr/share/doc/"), path)
        self.assertIn(f"same source package glibc {version}", note)
        older = package("libc6-dev", root=self.root, source="glibc", version="2.0-1")
        path, note = notices.find_copyright(older, by_source)
        self.assertIn("(no package of glibc 2.0-1 with one is installed here)", note)

    def test_dep5_licences_and_the_common_licences_referred_to(self):
        text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                "Files: *\nLicense: Apache-2.0\n\nFiles: x\nLicense: BSD-3-clause\n\n"
                "License: Apache-2.0\n see /usr/share/common-licenses/Apache-2.0.\n")
        self.assertEqual(notices.dep5_licenses(text), ["Apache-2.0", "BSD-3-clause"])
        self.assertEqual(notices.dep5_licenses("This is not DEP-5.\nLicense: x\n"), [])
        self.assertEqual(notices.referenced_common_licenses(text), {"Apache-2.0"})


class ScannerFiles(unittest.TestCase):
    def test_a_status_entry_per_package_and_the_release(self):
        files = scanner_files.files(
            [package("libgrpc-dev", version="1.51.1-3+b1", source="grpc",
                     source_version="1.51.1-3"),
             package("zlib1g-dev", version="1:1.2.13.dfsg-1", source="zlib")], "prog", "1.0.0")
        entry = files["var/lib/dpkg/status.d/libgrpc-dev"][1].decode()
        self.assertIn("Package: libgrpc-dev\n", entry)
        self.assertIn("Version: 1.51.1-3+b1\n", entry)
        self.assertIn("Source: grpc (1.51.1-3)\n", entry)
        self.assertIn("Architecture: amd64\n", entry)
        self.assertIn("Source: zlib\n", files["var/lib/dpkg/status.d/zlib1g-dev"][1].decode())
        release = files["etc/os-release"][1].decode()
        self.assertIn("ID=debian\n", release)
        self.assertIn('PRETTY_NAME="prog 1.0.0: static binaries built from', release)
        self.assertRegex(files["etc/debian_version"][1].decode(), r"^[0-9]+\n$")


class Provenance(unittest.TestCase):
    def test_the_builder_is_debian_packages_found_by_dpkg(self):
        tools = provenance.toolchain([])
        names = {tool for tool, *_ in tools}
        self.assertTrue({"gcc", "ld", "python3", "protoc", "bazel"} <= names, names)
        for tool, package_name, version, arch in tools:
            self.assertTrue(package_name and version and arch, (tool, package_name))

    def test_the_build_root_is_every_installed_package(self):
        root = provenance.build_root()
        names = {name for name, _, _ in root}
        self.assertTrue({"libc6", "dpkg", "python3"} <= names, len(names))
        self.assertEqual(root, sorted(set(root)))

    def test_the_statement(self):
        statement = provenance.statement(
            [("image", "ab" * 32)], "https://example.org/src", "v1.0.0", "c" * 40, "1.0.0",
            "linux/amd64", "bash images/release.sh 1.0.0 OUT_DIR", EPOCH,
            [package(source="foo")], [("gcc", "gcc", "4:12.2.0-3", "amd64")],
            [("libc6", "2.41-12", "amd64")], ["linux/amd64", "linux/arm/v7"])
        self.assertEqual(statement["predicateType"], "https://slsa.dev/provenance/v1")
        self.assertEqual(statement["subject"], [{"name": "image", "digest": {"sha256": "ab" * 32}}])
        definition = statement["predicate"]["buildDefinition"]
        self.assertEqual(definition["externalParameters"]["source"], {
            "uri": "git+https://example.org/src@refs/tags/v1.0.0",
            "digest": {"gitCommit": "c" * 40}})
        # The build's every platform, and this statement's.
        self.assertEqual(definition["externalParameters"]["platforms"],
                         ["linux/amd64", "linux/arm/v7"])
        self.assertEqual(definition["externalParameters"]["platform"], "linux/amd64")
        self.assertEqual(definition["internalParameters"]["SOURCE_DATE_EPOCH"], str(EPOCH))
        dependencies = statement["predicate"]["runDetails"]["builder"]["builderDependencies"]
        distro = "debian-" + sbom.debian_version()
        self.assertEqual(dependencies[0]["uri"],
                         "pkg:deb/debian/gcc@4%3A12.2.0-3?arch=amd64&distro=" + distro)
        # The build root's every package, with its exact version.
        self.assertEqual(dependencies[1], {
            "uri": "pkg:deb/debian/libc6@2.41-12?arch=amd64&distro=" + distro, "name": "libc6",
            "annotations": {"role": "build root"}})
        linked = definition["resolvedDependencies"][1]["uri"]
        self.assertTrue(linked.endswith("&distro=" + distro), linked)
        # Nothing of the moment or the machine: no time, no host.
        text = json.dumps(statement)
        for word in ("startedOn", "finishedOn", os.uname().nodename):
            self.assertNotIn(word, text)


class SourceUri(unittest.TestCase):
    def test_a_repository_or_a_checkout(self):
        for uri in ("https://github.com/kubernetes-csi/node-driver-registrar",
                    "ssh://git.corp.internal/storage/ndr.git", "git://host.lan/ndr",
                    "file:///work/csi-node-driver-registrar"):
            self.assertEqual(source_uri.check(uri), uri)
        self.assertEqual(source_uri.check("https://host.io/ndr/"), "https://host.io/ndr")

    def test_placeholders_and_what_no_one_can_fetch(self):
        for uri, said in [
            ("", "no source URI given"),
            ("https://git.example.org/ndr/csi-node-driver-registrar", "an example address"),
            ("https://example.com/x", "an example address"),
            ("https://git.corp.example/x", "an example address"),
            ("https://ndr.test/x", "an example address"),
            ("git.corp.lan/ndr", "does not start with one of"),
            ("ftp://host.lan/ndr", "does not start with one of"),
            ("https:///ndr", "names no host"),
            ("file://host/ndr", "not a file:///absolute/path"),
            ("https://user:token@host.lan/ndr", "credentials"),
            ("https://host.lan/ndr?ref=main", "a query"),
            ("https://host.lan/my repo", "a space"),
        ]:
            with self.assertRaises(ValueError, msg=uri) as caught:
                source_uri.check(uri)
            self.assertIn(said, str(caught.exception), uri)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "test", "util"))
    import unittest_junit  # noqa: E402
    unittest_junit.main("images")

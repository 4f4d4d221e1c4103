"""OpenVEX documents: what the CVEs known against the Debian packages linked into our binaries
mean for those binaries.

The analysis is written by people, once per CVE and Debian source version, in
images/vex/statements.yaml; this turns it into OpenVEX (https://openvex.dev, v0.2.0) for the
images and binaries of one build, and checks it against them first:

  - a statement applies to a binary that was linked from a package of its Debian source package at
    one of its versions (images/sbom.py's linked_packages: what the linker recorded), and to no
    other, so a Debian update that changes a version makes its statements stop applying until
    someone reviews them (unreviewed() lists the source versions no statement names);
  - "not_affected" because the vulnerable code is not there (vulnerable_code_not_present,
    component_not_present) names the functions that hold it (absent_symbols); each must be missing
    from the symbol table of every binary the statement applies to, and so must the parts a
    compiler names after it (below);
  - "not_affected" because the vulnerable code is linked but never runs
    (vulnerable_code_not_in_execute_path) may name the functions that hold it (uncalled_symbols);
    each must be missing from every binary the statement applies to, or present and referred to
    from nowhere but the functions listed (they may call one another: the set as a whole is
    unreachable). A reference is a direct call, jump or address load in the code of any other
    function, or the function's address stored as a pointer-sized word (in the binary's byte order)
    in a data section or as a relocation's addend (.data, .data.rel.ro, .rodata, .got,
    .init_array, .rela.plt's IRELATIVE slots, ...: everything allocated and not executable).

A statement a binary contradicts (a listed name present, a reference found) is never published:
the build refuses the document.

How far the uncalled_symbols evidence goes. References in code are read only where objdump states
every address an instruction uses: on x86-64 (CODE_READ), where it annotates each direct call's
and jump's target and each RIP-relative address with <symbol>, and where a binary linked at fixed
addresses (not a PIE) holds an address as an immediate ($0x401100) or an absolute displacement
(0x4c2010(,%rax,8)), which counts when it is a listed function's start or inside a listed
object. On other machines an address is built from several instructions (aarch64's adrp and
add, arm's literal pools, ppc64's TOC, s390x's larl and GOT) that objdump does not put together,
so their code is not read: there the check is presence or absence, plus pointers in data, and
every result for a present name says "references not read on <machine>" (check_evidence's notes,
which go to the caller's list or else to stderr as warnings), never that it was checked. What no
reading sees anywhere: an address computed by arithmetic, kept in a field narrower than a
pointer, or looked up by name at run time (dlsym).

What a name stands for: the functions of that name in the symbol table, with the parts and
clones a compiler names after them (NAME.cold, NAME.part.0, NAME.isra.0, NAME.constprop.0); all
of them, where static functions in several files share it; an object of that name only where no
function has it. A pointer table that only listed functions use is a reference from data: list
the table too, and it becomes part of the set, its own references checked like a function's.
Only binaries a statement with uncalled_symbols applies to are read, each once per run for all
the names asked of it (references() keeps what it read).

A statement file entry:

  - vulnerability: CVE-2026-6791
    source: glibc                      # Debian source package
    versions: ["2.36-9+deb12u14"]      # its versions this holds for
    status: not_affected               # not_affected | affected | fixed | under_investigation
    justification: vulnerable_code_not_present   # OpenVEX's, for not_affected
    impact: wordexp() is not linked.         # why, in a sentence or two
    absent_symbols: [wordexp]          # evidence: functions not in the binary
    action: ...                        # for affected: what an operator should do

  - vulnerability: CVE-2026-42768
    ...
    justification: vulnerable_code_not_in_execute_path
    uncalled_symbols: [PKCS7_dataDecode, pkcs7_decrypt_rinfo]  # evidence: never referred to
"""

import bisect
import collections
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elf import (SHF_ALLOC, SHF_EXECINSTR, SHT_NOBITS, SHT_RELA, Elf,  # noqa: E402
                 ElfError)

CONTEXT = "https://openvex.dev/ns/v0.2.0"
PREDICATE = CONTEXT  # the predicate type of an OpenVEX attestation
STATUSES = {"not_affected", "affected", "fixed", "under_investigation"}
JUSTIFICATIONS = {
    "component_not_present", "vulnerable_code_not_present", "vulnerable_code_not_in_execute_path",
    "vulnerable_code_cannot_be_controlled_by_adversary", "inline_mitigations_already_exist",
}
# Which evidence goes with which justification: absent_symbols says code is not there,
# uncalled_symbols that it is there and never runs.
NOT_PRESENT = ("vulnerable_code_not_present", "component_not_present")
NOT_IN_EXECUTE_PATH = "vulnerable_code_not_in_execute_path"
FIELDS = {"vulnerability", "source", "versions", "status", "justification", "impact",
          "absent_symbols", "uncalled_symbols", "action", "platforms", "debian_fixed", "severity"}
SEVERITIES = {"LOW", "MEDIUM", "HIGH", "CRITICAL", "UNKNOWN"}

# The machines whose code references() reads, each with the objdumps that can disassemble it,
# first found first used (see the module's docstring for why only these).
CODE_READ = {"x86-64": ("x86_64-linux-gnu-objdump", "objdump")}


class VexError(Exception):
    pass


class Statements(list):
    """The statements of a file, and the source versions reviewed without any (`reviewed`:
    {(source, version)})."""

    def __init__(self, statements, reviewed):
        super().__init__(statements)
        self.reviewed = reviewed


def load_statements(path):
    """The statements of `path`, checked: every entry says what OpenVEX needs for its status."""
    with open(path) as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or not isinstance(data.get("statements"), list):
        raise VexError(f"{path}: expected a mapping with a 'statements' list")
    problems, seen, reviewed = [], set(), set()
    for i, entry in enumerate(data.get("reviewed_without_findings") or []):
        if (not isinstance(entry, dict) or not isinstance(entry.get("source"), str)
                or not isinstance(entry.get("versions"), list) or not entry.get("note")):
            problems.append(f"{path}: reviewed_without_findings entry {i + 1} needs source, "
                            "versions and a note")
            continue
        reviewed |= {(entry["source"], v) for v in entry["versions"]}
    for i, entry in enumerate(data["statements"]):
        where = f"{path}: statement {i + 1} ({entry.get('vulnerability', '?')})" \
            if isinstance(entry, dict) else f"{path}: statement {i + 1}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not a mapping")
            continue
        unknown = set(entry) - FIELDS
        if unknown:
            problems.append(f"{where}: unknown fields {sorted(unknown)}")
        for field in ("vulnerability", "source", "status", "impact"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                problems.append(f"{where}: '{field}' must be a non-empty string")
        versions = entry.get("versions")
        if not isinstance(versions, list) or not versions or \
                not all(isinstance(v, str) and v for v in versions):
            problems.append(f"{where}: 'versions' must list the Debian source versions it holds for")
        status = entry.get("status")
        if status not in STATUSES:
            problems.append(f"{where}: status {status!r} is not one of {sorted(STATUSES)}")
        if status == "not_affected" and entry.get("justification") not in JUSTIFICATIONS:
            problems.append(f"{where}: not_affected needs a justification, one of "
                            f"{sorted(JUSTIFICATIONS)}")
        if status != "not_affected" and "justification" in entry:
            problems.append(f"{where}: a justification is for not_affected only")
        if status == "affected" and not entry.get("action"):
            problems.append(f"{where}: affected needs an 'action' for operators")
        for field, justifications, says in (
                ("absent_symbols", NOT_PRESENT, "that code is not present"),
                ("uncalled_symbols", (NOT_IN_EXECUTE_PATH,), "that code present is never run")):
            if field not in entry:
                continue
            symbols = entry[field]
            if not isinstance(symbols, list) or not symbols \
                    or not all(isinstance(s, str) and s.strip() == s and s for s in symbols):
                problems.append(f"{where}: '{field}' must be a list of symbol names")
            if entry.get("justification") not in justifications:
                problems.append(f"{where}: {field} are evidence {says}: they go with a "
                                f"not_affected statement justified {' or '.join(justifications)}, "
                                f"not {entry.get('justification', status)!r}")
        if entry.get("severity", "UNKNOWN") not in SEVERITIES:
            problems.append(f"{where}: severity {entry.get('severity')!r} is not one of "
                            f"{sorted(SEVERITIES)}")
        platforms = entry.get("platforms")
        if platforms is not None and (not isinstance(platforms, list) or not platforms):
            problems.append(f"{where}: 'platforms', if given, lists the platforms it is for")
        for version in versions if isinstance(versions, list) else []:
            for platform in platforms or ["*"]:
                key = (entry.get("vulnerability"), entry.get("source"), version, platform)
                if key in seen:
                    problems.append(f"{where}: {key[0]} for {key[1]} {version} is stated twice")
                seen.add(key)
        for version in versions if isinstance(versions, list) else []:
            if (entry.get("source"), version) in reviewed:
                problems.append(f"{where}: {entry.get('source')} {version} is also listed as "
                                "reviewed without findings")
    if problems:
        raise VexError("\n".join(problems))
    return Statements(data["statements"], reviewed)


def _elf(path):
    try:
        return Elf(path)
    except ElfError as e:
        raise VexError(str(e)) from e


def defined_symbols(path):
    """The names of the functions (IFUNCs included) and objects an ELF file defines (its
    .symtab), or None when it has no symbol table (a stripped binary)."""
    symbols = _elf(path).symbols()
    return None if symbols is None else {s.name for s in symbols}


def named_after(symbol):
    """The names whose code the symbol named `symbol` is: its own, and for the parts and clones a
    compiler names after a function (f.cold, f.part.0, f.isra.0, f.constprop.0.isra.0), the
    function's: "f.part.0" -> ["f.part.0", "f.part", "f"]."""
    names = [symbol]
    at = symbol.rfind(".")
    while at > 0:
        names.append(symbol[:at])
        at = symbol.rfind(".", 0, at)
    return names


class _Present:
    """Which names a symbol table (a set of names) has, counting a function's parts as it."""

    def __init__(self, symbols):
        self.names = {name for symbol in symbols for name in named_after(symbol)}

    def __contains__(self, name):
        return name in self.names


Reference = collections.namedtuple("Reference", "where to target by")


class Evidence:
    """What references() read in one binary about some names: its machine, whether its code was
    read (code_read), the symbols of each name (symbols: {name: [Symbol]}), and every reference
    to them found (references: [Reference], where: the address of the instruction or word that
    refers; to: the address referred to; target: the symbol there; by: who refers, in words)."""

    def __init__(self, path, machine, code_read, symbols, references):
        self.path, self.machine, self.code_read = path, machine, code_read
        self.symbols, self.references = symbols, references

    def from_outside(self, names):
        """The references to the symbols of `names` from anywhere but their own code and data."""
        ranges = [(s.start, s.end) for name in names for s in self.symbols.get(name, [])]

        def inside(address):
            return any(start <= address < end for start, end in ranges)

        return [r for r in self.references if inside(r.to) and not inside(r.where)]


_READ = {}  # (path, device, inode, size, mtime): (the names asked, Evidence)


def references(path, names):
    """Evidence of what refers to the symbols of `names` (each name's own and its parts':
    named_after) in the ELF file at `path`. A file is read once for all the names asked of it: a
    later call for names it was not read for reads it again, for all of them."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    names = frozenset(names)
    if key in _READ:
        read, evidence = _READ[key]
        if names <= read:
            return evidence
        names |= read
    evidence = _read_references(path, names)
    _READ[key] = (names, evidence)
    return evidence


def _read_references(path, names):
    elf = _elf(path)
    all_symbols = elf.symbols()
    if all_symbols is None:
        raise VexError(f"{path} has no symbol table to find {', '.join(sorted(names))} in")
    by_name = {name: [] for name in names}
    for symbol in all_symbols:
        for name in named_after(symbol.name):
            if name in by_name:
                by_name[name].append(symbol)
    # A name is a function's where one has it: a local object of the same name elsewhere (glibc
    # has a static variable `loaded`) is not what the statement means. Functions of the same name
    # (static ones in different files) all count, so all must be uncalled.
    for name, symbols in by_name.items():
        if any(s.function for s in symbols):
            by_name[name] = [s for s in symbols if s.function]
    targets = sorted({s for listed in by_name.values() for s in listed})
    code_read = elf.machine in CODE_READ
    found = []
    if targets:
        found = _data_references(elf, targets, all_symbols)
        if code_read:
            found += _code_references(elf, targets)
    return Evidence(path, elf.machine, code_read, by_name, found)


def _data_references(elf, targets, all_symbols):
    """Pointers to the targets' starts in the file's allocated, non-executable sections, as words
    of its size and byte order at any offset, and as relocations' addends."""
    pointers = {}
    for symbol in targets:
        pointers.setdefault(symbol.value, symbol)
    objects = sorted((s.start, s.end, s.name) for s in all_symbols)
    starts = [o[0] for o in objects]

    def holder(address):
        i = bisect.bisect_right(starts, address) - 1
        for j in range(i, max(i - 8, -1), -1):
            if objects[j][0] <= address < objects[j][1]:
                return f" (in {objects[j][2]})"
        return ""

    found = []
    data = elf.data
    rela = struct.Struct(elf.order + ("QQq" if elf.is64 else "IIi"))
    for section in elf.sections:
        if not section.flags & SHF_ALLOC or section.flags & SHF_EXECINSTR \
                or section.type == SHT_NOBITS or section.size == 0:
            continue
        if section.type == SHT_RELA:
            end = section.offset + section.size - section.size % rela.size
            for offset, _, addend in rela.iter_unpack(memoryview(data)[section.offset:end]):
                symbol = pointers.get(addend & ((1 << (8 * elf.word.size)) - 1))
                if symbol is not None:
                    found.append(Reference(offset, symbol.start, symbol.name,
                                           f"a relocation in {section.name} (for the word at "
                                           f"{offset:#x}{holder(offset)})"))
            continue
        for value, symbol in pointers.items():
            if value >= 1 << (8 * elf.word.size):
                continue
            needle = elf.word.pack(value)
            at = data.find(needle, section.offset, section.offset + section.size)
            while at >= 0:
                address = section.addr + at - section.offset
                found.append(Reference(address, symbol.start, symbol.name,
                                       f"a pointer in {section.name} at {address:#x}"
                                       f"{holder(address)}"))
                at = data.find(needle, at + 1, section.offset + section.size)
    return found


# objdump -d's lines: a function's first ("0000000000401000 <main>:"), an instruction's
# ("  401004:\tcall   401100 <f>"); in an instruction, an address objdump resolved ("401100 <f>",
# "# 4c2010 <table+0x10>" after a RIP-relative operand) or a number that may be one in a binary
# linked at fixed addresses: an immediate ($0x401100) or an absolute displacement (0x4c2010,
# 0x4c2010(,%rax,8)), not the offset of a RIP-relative operand (0x1234(%rip), resolved after it).
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
_ADDRESS = re.compile(r"([0-9a-f]+) <[^>]*>|\$?0x([0-9a-f]+)\b(?!\(%rip\))")


def _objdump(machine):
    for tool in CODE_READ[machine]:
        found = shutil.which(tool)
        if found:
            return found
    raise VexError(f"no objdump for {machine} code ({' or '.join(CODE_READ[machine])}) is "
                   "installed: the uncalled_symbols evidence cannot be read")


def _disassemble(path, machine):
    """objdump -d's output for the ELF file at `path`, line by line."""
    with tempfile.TemporaryFile() as messages:
        process = subprocess.Popen(
            [_objdump(machine), "-d", "-w", "--no-show-raw-insn", path], stdout=subprocess.PIPE,
            stderr=messages, encoding="utf-8", errors="replace", bufsize=1 << 20,
            env=dict(os.environ, LC_ALL="C"))
        complete = False
        try:
            yield from process.stdout
            complete = True
        finally:
            if not complete:
                process.kill()
            process.stdout.close()
            code = process.wait()
        if code != 0:
            messages.seek(0)
            raise VexError(f"objdump -d {path} failed (exit {code}): "
                           f"{messages.read().decode(errors='replace').strip()}")


def _code_references(elf, targets):
    """The instructions that call, jump to or load the address of a target, in the file's code."""
    ranges = sorted((s.start, s.end, s) for s in targets)
    low, high = ranges[0][0], max(r[1] for r in ranges)
    found = []
    function = "?"
    for line in _disassemble(elf.path, elf.machine):
        if line[:1] != " ":
            match = _FUNCTION.match(line)
            if match:
                function = match.group(1)
            continue
        if "<" not in line and "0x" not in line:
            continue
        for match in _ADDRESS.finditer(line):
            resolved, number = match.groups()
            if not resolved and not elf.position_dependent:
                continue  # a PIE's code makes no address from a number it holds
            address = int(resolved or number, 16)
            if not low <= address < high:
                continue
            symbol = next((s for start, end, s in ranges if start <= address < end), None)
            if symbol is None or not resolved and symbol.function and address != symbol.start:
                continue  # a number inside a function: a constant, not its address
            colon = line.index(":")
            where = int(line[:colon], 16)
            instruction = line[colon + 1:].split()[0]
            found.append(Reference(where, address, symbol.name,
                                   f"{function}'s code at {where:#x} ({instruction})"))
    return found


def applies(statement, package, platform):
    return (package.source == statement["source"]
            and package.source_version in statement["versions"]
            and (not statement.get("platforms") or platform in statement["platforms"]))


def _listing(names):
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def check_evidence(statements, linked, symbols_of, platform, notes=None):
    """Problems with the statements for one platform's binaries: `linked` is
    {binary: [Package]}, symbols_of(binary) gives defined_symbols() of its unstripped form, which
    is what `binary` names (its code is read from there for uncalled_symbols).

    What the evidence could not show is not a problem but a note: a statement's uncalled_symbols
    present in a binary whose code references() does not read ("references not read on
    aarch64"). Notes go to the list `notes` if one is given, else to stderr as warnings."""
    problems, said = [], []
    present_in, wanted = {}, {}

    def present(binary):
        if binary not in present_in:
            symbols = symbols_of(binary)
            present_in[binary] = None if symbols is None else _Present(symbols)
        return present_in[binary]

    applying = [(statement, binary) for statement in statements
                for binary, packages in sorted(linked.items())
                if (statement.get("absent_symbols") or statement.get("uncalled_symbols"))
                and any(applies(statement, p, platform) for p in packages)]
    for statement, binary in applying:
        # Everything a binary is asked about at once: its code is read once.
        wanted.setdefault(binary, set()).update(statement.get("uncalled_symbols", []))
    for statement, binary in applying:
        name = f"{statement['vulnerability']} ({statement['source']})"
        for field in ("absent_symbols", "uncalled_symbols"):
            listed = statement.get(field, [])
            if not listed:
                continue
            symbols = present(binary)
            if symbols is None:
                problems.append(f"{statement['vulnerability']}: {binary} has no symbol table to "
                                f"check {field} against (give the unstripped binary)")
                continue
            found = [symbol for symbol in listed if symbol in symbols]
            if field == "absent_symbols":
                if found:
                    problems.append(
                        f"{name}: the statement says {', '.join(sorted(found))} is not in "
                        f"{binary}, but it is; review the statement")
                continue
            if not found:
                continue
            evidence = references(binary, wanted[binary])
            outside = evidence.from_outside(listed)
            if outside:
                shown = "; ".join(f"{r.by} refers to {r.target}" for r in outside[:5])
                more = f"; and {len(outside) - 5} more" if len(outside) > 5 else ""
                scope = "" if len(listed) == 1 else f" but {_listing(listed)} themselves"
                problems.append(
                    f"{name}: the statement says nothing{scope} calls or refers to "
                    f"{_listing(listed) if len(listed) == 1 else 'them'} in {binary}, but "
                    f"{shown}{more}; review the statement")
            if not evidence.code_read:
                said.append(
                    f"{name}: references not read on {evidence.machine}: {_listing(found)} "
                    f"{'is' if len(found) == 1 else 'are'} in {binary}, and its code was not read "
                    "for calls or address loads (only its data for pointers): there the statement "
                    "rests on the source")
    if notes is not None:
        notes.extend(said)
    else:
        for note in said:
            print(f"warning: {note}", file=sys.stderr)
    return problems


def unreviewed(statements, packages):
    """The Debian source versions linked that no statement names and that were not reviewed
    without findings: [(source, version)]."""
    named = {(s["source"], v) for s in statements for v in s["versions"]}
    named |= getattr(statements, "reviewed", set())
    return sorted({(p.source, p.source_version) for p in packages} - named)


def package_purl(package):
    """How a statement names a package: pkg:deb/debian/NAME?arch=ARCH, with no version.

    Scanners match a VEX purl's qualifiers as a subset of the package's and a missing version as
    any version (Trivy: go-vex PurlMatches), and their purls for Debian packages differ from the
    SBOM's in how they spell versions and epochs; the product, an image by digest, pins the
    versions anyway.
    """
    return (f"pkg:deb/debian/{urllib.parse.quote(package.name, safe='.-_~')}?"
            f"arch={urllib.parse.quote(package.arch, safe='.-_~')}")


def document(doc_id, author, timestamp, statements, products):
    """The OpenVEX document. products: [(product purl, [(platform, Package)])], each an image
    (or a platform's image) by digest and what is linked into it; a statement lists each product
    with the packages it applies to as subcomponents. Statements that apply to none are left out.
    """
    out = []
    for statement in statements:
        entries = []
        for product, contents in products:
            subcomponents = sorted({package_purl(package) for platform, package in contents
                                    if applies(statement, package, platform)})
            if subcomponents:
                entries.append({"@id": product,
                                "subcomponents": [{"@id": purl} for purl in subcomponents]})
        if not entries:
            continue
        item = {"vulnerability": {"name": statement["vulnerability"]}, "products": entries,
                "status": statement["status"]}
        if statement["status"] == "not_affected":
            item["justification"] = statement["justification"]
            item["impact_statement"] = " ".join(statement["impact"].split())
        elif statement["status"] == "affected":
            item["action_statement"] = " ".join(statement["action"].split())
            item["status_notes"] = " ".join(statement["impact"].split())
        else:
            item["status_notes"] = " ".join(statement["impact"].split())
        out.append(item)
    return {"@context": CONTEXT, "@id": doc_id, "author": author, "timestamp": timestamp,
            "version": 1, "statements": out}

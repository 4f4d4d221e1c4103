"""OpenVEX documents: what the CVEs known against the Debian packages linked into our binaries
mean for those binaries.

The analysis is written by people, once per CVE and Debian source version, in
images/vex/statements.yaml; this turns it into OpenVEX (https://openvex.dev, v0.2.0) for the
images and binaries of one build, and checks it against them first:

  - a statement applies to a binary that was linked from a package of its Debian source package at
    one of its versions (images/sbom.py's linked_packages: what the linker recorded), and to no
    other, so a Debian update that changes a version makes its statements stop applying until
    someone reviews them (unreviewed() lists the source versions no statement names);
  - "not_affected" because the vulnerable code is not there names the functions that hold it
    (absent_symbols); each must be missing from the symbol table of every binary the statement
    applies to, or the build refuses the document: a statement the binary contradicts is never
    published.

A statement file entry:

  - vulnerability: CVE-2026-6791
    source: glibc                      # Debian source package
    versions: ["2.36-9+deb12u14"]      # its versions this holds for
    status: not_affected               # not_affected | affected | fixed | under_investigation
    justification: vulnerable_code_not_present   # OpenVEX's, for not_affected
    impact: wordexp() is not linked in.         # why, in a sentence or two
    absent_symbols: [wordexp]          # evidence: functions not in the binary
    action: ...                        # for affected: what an operator should do
"""

import struct
import urllib.parse

import yaml

CONTEXT = "https://openvex.dev/ns/v0.2.0"
PREDICATE = CONTEXT  # the predicate type of an OpenVEX attestation
STATUSES = {"not_affected", "affected", "fixed", "under_investigation"}
JUSTIFICATIONS = {
    "component_not_present", "vulnerable_code_not_present", "vulnerable_code_not_in_execute_path",
    "vulnerable_code_cannot_be_controlled_by_adversary", "inline_mitigations_already_exist",
}
FIELDS = {"vulnerability", "source", "versions", "status", "justification", "impact",
          "absent_symbols", "action", "platforms", "debian_fixed", "severity"}
SEVERITIES = {"LOW", "MEDIUM", "HIGH", "CRITICAL", "UNKNOWN"}


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
        symbols = entry.get("absent_symbols", [])
        if not isinstance(symbols, list) or not all(isinstance(s, str) and s for s in symbols):
            problems.append(f"{where}: 'absent_symbols' must be a list of symbol names")
        if symbols and entry.get("justification") not in ("vulnerable_code_not_present",
                                                           "component_not_present"):
            problems.append(f"{where}: absent_symbols are evidence that code is not present")
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


def defined_symbols(path):
    """The names of the functions and objects an ELF file defines (its .symtab), or None when it
    has no symbol table (a stripped binary)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise VexError(f"{path} is not an ELF file")
    is64 = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        header, symbol, symbol_size = order + "IIQQQQIIQQ", order + "IBBHQQ", 24
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        header, symbol, symbol_size = order + "IIIIIIIIII", order + "IIIBBH", 16
    sections = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    found = False
    for section in sections:
        if section[1] != 2:  # SHT_SYMTAB
            continue
        found = True
        strings = sections[section[6]]  # sh_link: its string table
        offset, size = section[4], section[5]
        for start in range(offset, offset + size, symbol_size):
            fields = struct.unpack_from(symbol, data, start)
            if is64:
                name, info, _, shndx = fields[0], fields[1], fields[2], fields[3]
            else:
                name, info, shndx = fields[0], fields[3], fields[5]
            if shndx == 0 or (info & 0xF) not in (1, 2):  # undefined; not an object or function
                continue
            at = strings[4] + name
            names.add(data[at:data.index(b"\0", at)].decode(errors="replace"))
    return names if found else None


def applies(statement, package, platform):
    return (package.source == statement["source"]
            and package.source_version in statement["versions"]
            and (not statement.get("platforms") or platform in statement["platforms"]))


def check_evidence(statements, linked, symbols_of, platform):
    """Problems with the statements for one platform's binaries: `linked` is
    {binary: [Package]}, symbols_of(binary) gives defined_symbols() of its unstripped form."""
    problems = []
    for statement in statements:
        wanted = statement.get("absent_symbols", [])
        if not wanted:
            continue
        for binary, packages in sorted(linked.items()):
            if not any(applies(statement, p, platform) for p in packages):
                continue
            symbols = symbols_of(binary)
            if symbols is None:
                problems.append(f"{statement['vulnerability']}: {binary} has no symbol table to "
                                "check absent_symbols against (give the unstripped binary)")
                continue
            present = sorted(set(wanted) & symbols)
            if present:
                problems.append(
                    f"{statement['vulnerability']} ({statement['source']}): the statement says "
                    f"{', '.join(present)} is not in {binary}, but it is; review the statement")
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

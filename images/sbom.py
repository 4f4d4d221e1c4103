#!/usr/bin/env python3
"""An SPDX 2.3 JSON document of the Debian packages whose code is linked into static binaries.

    images/sbom.py --name NAME --version VERSION --platform PLATFORM BINARY...

Each BINARY was linked through toolchain/link_record/record.sh, which recorded in it (section
.ndr.linked_files) every file from outside the build that the linker used: the archives of which it
linked a member, and object files such as crt1.o. Each file is mapped to the Debian package that
installed it with `dpkg -S`, or, for another architecture's libraries unpacked into a cross sysroot,
with the list toolchain/cross/make-sysroot.sh wrote there (.ndr-files). Nothing here is a list kept
by hand: a library added to a link shows up in the document by itself.

The document describes the image (NAME:VERSION for PLATFORM), which contains the binaries (files
with their checksums), each statically linked (STATIC_LINK) with the binary packages it was built
from; every binary package is GENERATED_FROM its source package. Packages carry the purls that
scanners match advisories by (pkg:deb/debian/NAME@VERSION?arch=ARCH&upstream=SOURCE&distro=...).

A file that maps to no package, or a binary without a record, is an error that names it: an SBOM
that silently left something out would be worse than none.
"""

import argparse
import collections
import datetime
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elf  # noqa: E402

SECTION = ".ndr.linked_files"
PREDICATE = "https://spdx.dev/Document"  # of an in-toto statement holding an SPDX document


class SbomError(Exception):
    pass


def read_section(path, name):
    """The contents of section `name` of the ELF file at `path` (any class and byte order)."""
    try:
        return elf.Elf(path).section(name)
    except elf.ElfError as e:
        raise SbomError(str(e)) from e


def linked_files(binary):
    try:
        record = read_section(binary, SECTION)
    except (struct.error, ValueError, IndexError) as e:
        raise SbomError(f"{binary} is not a well-formed ELF file ({e})") from e
    if record is None:
        raise SbomError(f"{binary} has no {SECTION} section: it was not linked through "
                        "toolchain/link_record/record.sh (a static_cc_binary of this project's "
                        "release build), so what it was linked from is unknown")
    files = [line for line in record.decode(errors="replace").splitlines() if line]
    for path in files:
        # record.sh writes absolute paths only; anything else (an option to dpkg, say) is not ours.
        if not path.startswith("/"):
            raise SbomError(f"{binary}: {SECTION} holds {path!r}, not an absolute path")
    return files


def sysroot_owners(path, cache):
    """(package fields, sysroot) for `path` from a cross sysroot's .ndr-files, or None."""
    directory = os.path.dirname(path)
    while directory not in ("", "/"):
        manifest = os.path.join(directory, ".ndr-files")
        if manifest not in cache:
            entries = None
            if os.path.isfile(manifest):
                entries = {}
                with open(manifest) as f:
                    for line in f:
                        fields = line.rstrip("\n").split("\t")
                        if len(fields) == 6:
                            entries[fields[0]] = tuple(fields[1:])
            cache[manifest] = entries
        if cache[manifest] is not None:
            relative = "/" + os.path.relpath(path, directory)
            return cache[manifest].get(relative, ()), directory
        directory = os.path.dirname(directory)
    return None


def dpkg_owners(paths):
    """{path: "package:arch"} for the paths dpkg knows."""
    if not paths:
        return {}
    result = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True)
    owners = {}
    for line in result.stdout.splitlines():
        if line.startswith("diversion by"):
            continue
        packages, _, path = line.partition(": ")
        # "a, b: path" when several packages ship the path; the first is as good as any.
        owners[path] = packages.split(", ")[0]
    return owners


CROSS = re.compile(r"^(?P<name>.+)-(?P<arch>[a-z0-9]+)-cross$")
CROSS_VERSION = re.compile(r"^(?P<version>.+)cross[0-9]+$")


def as_built_for(fields, built_using):
    """What a cross toolchain package holds, as the package scanners know.

    A cross compiler's libraries come in architecture-independent packages named
    NAME-ARCH-cross at version VERSIONcrossN (libc6-dev-arm64-cross 2.36-8cross1, from
    cross-toolchain-base), built from the Debian source package that Built-Using names at
    VERSION (glibc 2.36-8): what they hold is NAME for ARCH at VERSION, from that source, and
    that is what advisories are matched by. Other packages are returned as they are.
    """
    name, arch, version, source, source_version = fields
    cross, cross_version = CROSS.match(name), CROSS_VERSION.match(version)
    if not cross or not cross_version:
        return fields, None
    for entry in built_using.split(","):
        match = re.match(r"^\s*(\S+) \(= (\S+)\)\s*$", entry)
        if match and match.group(2) == cross_version.group("version"):
            installed = (f"installed as {name} {version} (source {source} {source_version}), "
                         f"built from {match.group(1)} {match.group(2)} for "
                         f"{cross.group('arch')}")
            return ((cross.group("name"), cross.group("arch"), cross_version.group("version"),
                     match.group(1), match.group(2)), installed)
    return fields, None


def dpkg_fields(packages):
    """{"package:arch": ((name, arch, version, source, source_version), note)}."""
    if not packages:
        return {}
    out = subprocess.run(
        ["dpkg-query", "-W", "-f",
         "${binary:Package}\t${Package}\t${Architecture}\t${Version}\t${source:Package}\t"
         "${source:Version}\t${Built-Using}\n", *sorted(packages)],
        capture_output=True, text=True, check=True).stdout
    fields = {}
    for line in out.splitlines():
        binary, *rest = line.split("\t")
        entry = as_built_for(tuple(rest[:5]), rest[5] if len(rest) > 5 else "")
        fields[binary] = entry
        # dpkg -S names an architecture-independent package without ":arch".
        fields[rest[0]] = entry
    return fields


def debian_version():
    info = {}
    try:
        with open("/etc/os-release") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                info[key] = value.strip('"')
    except OSError:
        pass
    return info.get("VERSION_ID", "")


def quote(text):
    return urllib.parse.quote(text, safe=".-_~")


def purl(name, version, arch, source=None, source_version=None, distro=""):
    qualifiers = [("arch", arch)]
    if source and (source != name or source_version != version):
        qualifiers.append(("upstream", source if source_version == version
                           else f"{source}@{source_version}"))
    if distro:
        qualifiers.append(("distro", f"debian-{distro}"))
    return (f"pkg:deb/debian/{quote(name)}@{quote(version)}?"
            + "&".join(f"{key}={quote(value)}" for key, value in qualifiers))


def spdx_id(*parts):
    text = "-".join(parts)
    return "SPDXRef-" + "".join(c if c.isalnum() or c in ".-" else "-" for c in text)


class Package(collections.namedtuple(
        "Package", "name arch version source source_version note installed root")):
    """A Debian binary package whose code a binary was linked from.

    name, arch, version: the package as advisories know it (a cross compiler's libc is arm64
    libc6-dev, say); source, source_version: its source package; note: how it was installed when
    that differs; installed: the name of the package actually on this machine (or in the sysroot)
    that holds its files; root: "/" or the cross sysroot it was unpacked into.
    """

    @property
    def key(self):
        return (self.name, self.arch, self.version)


def linked_packages(binaries):
    """({key: Package}, {binary: set of keys}) for what the binaries' links recorded."""
    cache = {}
    by_binary = {}
    unknown_to_dpkg = set()
    for binary in binaries:
        files = linked_files(binary)
        by_binary[binary] = files
        for path in files:
            if sysroot_owners(path, cache) is None:
                unknown_to_dpkg.add(path)
    owners = dpkg_owners(sorted(unknown_to_dpkg))
    fields = dpkg_fields({owners[p] for p in owners})

    packages = {}
    links = {}
    missing = []
    for binary, files in by_binary.items():
        links[binary] = set()
        for path in files:
            found, note = sysroot_owners(path, cache), None
            if found is not None:
                entry, root = found
                installed = entry[0] if entry else ""
            else:
                owner = owners.get(path, "")
                entry, note = fields.get(owner, ((), None))
                root, installed = "/", owner.split(":")[0]
            if not entry:
                missing.append(f"{path} (linked into {binary})")
                continue
            name, arch, package_version, source, source_version = entry
            package = Package(name, arch, package_version, source or name,
                              source_version or package_version, note, installed, root)
            packages[package.key] = package
            links[binary].add(package.key)
    if missing:
        raise SbomError("no Debian package owns these files, so the SBOM would leave them out "
                        "(is the file from a package dpkg knows, or a sysroot made by "
                        "toolchain/cross/make-sysroot.sh?):\n  " + "\n  ".join(sorted(missing)))
    return packages, links


def build(name, version, platform, binaries, created, linked=None):
    """The SPDX document; `linked` is linked_packages(binaries), when the caller has it."""
    distro = debian_version()
    packages, links = linked or linked_packages(binaries)

    image_id = spdx_id("Image", name, platform)
    os_id = spdx_id("OperatingSystem-debian", distro)
    document = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{name}:{version} ({platform})",
        "creationInfo": {
            "created": created,
            "creators": ["Tool: ndr images/sbom.py"],
            "comment": "Debian packages whose code the linker put into the image's static "
                       "binaries, as recorded by the linker itself (toolchain/link_record).",
        },
        "packages": [
            {
                "SPDXID": image_id,
                "name": name,
                "versionInfo": version,
                "downloadLocation": "NOASSERTION",
                "filesAnalyzed": False,
                "primaryPackagePurpose": "CONTAINER",
                "comment": f"platform {platform}",
            },
            {
                "SPDXID": os_id,
                "name": "debian",
                "versionInfo": distro,
                "downloadLocation": "NOASSERTION",
                "filesAnalyzed": False,
                "primaryPackagePurpose": "OPERATING-SYSTEM",
                "comment": "The Debian release the binaries were built with; the image itself "
                           "is FROM scratch and installs no package.",
            },
        ],
        "files": [],
        "relationships": [
            {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
             "relatedSpdxElement": image_id},
            {"spdxElementId": image_id, "relationshipType": "CONTAINS",
             "relatedSpdxElement": os_id},
        ],
    }
    sources = {}
    for (package, arch, package_version), entry in sorted(packages.items()):
        source, source_version, note = entry.source, entry.source_version, entry.note
        package_id = spdx_id("Package", package, arch, package_version)
        source_id = spdx_id("Source", source, source_version)
        if note:
            document["packages"].append({"comment": note})
        else:
            document["packages"].append({})
        document["packages"][-1].update({
            "SPDXID": package_id,
            "name": package,
            "versionInfo": package_version,
            "supplier": "Organization: Debian",
            "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False,
            # The wording Syft and Trivy write and read: Trivy matches Debian's advisories by the
            # source package it names here.
            "sourceInfo": f"built package from: {source} {source_version}",
            "primaryPackagePurpose": "LIBRARY",
            "externalRefs": [{
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": purl(package, package_version, arch, source, source_version,
                                         distro),
            }],
        })
        document["relationships"].append(
            {"spdxElementId": os_id, "relationshipType": "CONTAINS",
             "relatedSpdxElement": package_id})
        document["relationships"].append(
            {"spdxElementId": package_id, "relationshipType": "GENERATED_FROM",
             "relatedSpdxElement": source_id})
        sources[source_id] = (source, source_version)
    # Source packages carry no purl: a scanner (Trivy) takes every package with a purl for an
    # installed one and would report each CVE twice, for the binary package and for its source.
    # The binary packages' purls name their source (upstream=), and GENERATED_FROM links them.
    for source_id, (source, source_version) in sorted(sources.items()):
        document["packages"].append({
            "SPDXID": source_id,
            "name": source,
            "versionInfo": source_version,
            "supplier": "Organization: Debian",
            "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False,
            "primaryPackagePurpose": "SOURCE",
        })
    for binary in binaries:
        with open(binary, "rb") as f:
            content = f.read()
        file_id = spdx_id("File", os.path.basename(binary))
        document["files"].append({
            "SPDXID": file_id,
            "fileName": "/" + os.path.basename(binary),
            "fileTypes": ["BINARY"],
            "checksums": [
                {"algorithm": "SHA1", "checksumValue": hashlib.sha1(content).hexdigest()},
                {"algorithm": "SHA256", "checksumValue": hashlib.sha256(content).hexdigest()},
            ],
        })
        document["relationships"].append(
            {"spdxElementId": image_id, "relationshipType": "CONTAINS",
             "relatedSpdxElement": file_id})
        for package, arch, package_version in sorted(links[binary]):
            document["relationships"].append(
                {"spdxElementId": file_id, "relationshipType": "STATIC_LINK",
                 "relatedSpdxElement": spdx_id("Package", package, arch, package_version)})
    # The namespace is unique to this content: the same binaries give the same document.
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]
    document["documentNamespace"] = (
        f"https://spdx.org/spdxdocs/{quote(name)}-{quote(version)}-{quote(platform)}-{digest}")
    return document


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the image's name")
    parser.add_argument("--version", required=True, help="the image's version (tag)")
    parser.add_argument("--platform", required=True, help="e.g. amd64, arm/v7")
    parser.add_argument("--output", help="write here instead of standard output")
    parser.add_argument("binaries", nargs="+", metavar="BINARY")
    args = parser.parse_args()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    try:
        document = build(args.name, args.version, args.platform, args.binaries,
                         when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    except (SbomError, OSError) as e:
        print(f"sbom.py: {e}", file=sys.stderr)
        return 1
    text = json.dumps(document, indent=2) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The third-party notices of static binaries: the Debian copyright file of every package whose
code they were linked from, as the link recorded it (images/sbom.py's linked_packages, the same
record the SBOM is made from), and the full text of every licence those files refer to.

    images/notices.py --title TITLE --output FILE BINARY...

Nothing here is a list of libraries or licences kept by hand: link one more library and its
package, its copyright file and its licences are in the notices. A package whose copyright file
cannot be found is an error naming it, never a silent omission.

Where a copyright file is looked for, in order: the package's own (/usr/share/doc/PACKAGE/copyright
on this machine, or in the cross sysroot it was unpacked into, following the doc directory's
symlink to a sibling package's as Debian allows); then that of an installed package built from
the same source package at the same version (Debian's copyright file belongs to the source
package); then from the same source package at another version, which the notice then says.
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbom  # noqa: E402

COMMON_LICENSES = "/usr/share/common-licenses"
RULE = "=" * 100


class NoticeError(Exception):
    pass


def _inside(root, path):
    real_root = os.path.realpath(root)
    return os.path.commonpath([real_root, os.path.realpath(path)]) == real_root


def own_copyright(package):
    """The package's own copyright file under its root, if there is one (and it stays there)."""
    path = os.path.join(package.root, "usr/share/doc", package.installed, "copyright")
    if os.path.isfile(path) and _inside(package.root, path):
        return path
    return None


def installed_by_source():
    """{source package: [(source version, binary package)]} of what dpkg has installed."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${source:Package}\t${source:Version}\t${Status}\n"],
        capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        name, source, version, status = line.split("\t")
        if status.endswith(" installed"):
            found.setdefault(source, []).append((version, name))
    return found


def find_copyright(package, by_source):
    """(path, note) of the copyright file for `package`; note says how it was found, if not its own."""
    path = own_copyright(package)
    if path:
        return path, ""
    candidates = sorted(by_source.get(package.source, []),
                        key=lambda entry: (entry[0] != package.source_version, entry))
    for version, name in candidates:
        path = os.path.join("/usr/share/doc", name, "copyright")
        if os.path.isfile(path):
            if version == package.source_version:
                return path, (f"the copyright file of {name}, built from the same source package "
                              f"{package.source} {version}")
            return path, (f"the copyright file of {name}, built from the same source package "
                          f"{package.source} at {version} (no package of {package.source} "
                          f"{package.source_version} with one is installed here)")
    raise NoticeError(f"no copyright file for {package.name} {package.version} ({package.arch}, "
                      f"source {package.source} {package.source_version}): neither "
                      f"{package.root.rstrip('/')}/usr/share/doc/{package.installed}/copyright nor "
                      f"an installed package of the source package {package.source} has one")


def dep5_licenses(text):
    """The licence short names a machine-readable (DEP-5) copyright file declares, else []."""
    if not text.startswith("Format:"):
        return []
    names = set()
    for line in text.splitlines():
        if line.startswith("License:"):
            value = line[len("License:"):].strip()
            if value:
                names.add(value)
    return sorted(names)


def referenced_common_licenses(text):
    """The files of /usr/share/common-licenses a copyright file refers to."""
    return set(re.findall(re.escape(COMMON_LICENSES) + r"/([A-Za-z0-9.+-]*[A-Za-z0-9+])", text))


def notices(title, binaries, linked=None):
    packages, _ = linked or sbom.linked_packages(binaries)
    by_source = installed_by_source()
    sections, summary, licences = [], [], set()
    for key in sorted(packages):
        package = packages[key]
        path, note = find_copyright(package, by_source)
        with open(path, errors="replace") as f:
            text = f.read()
        names = dep5_licenses(text)
        licences |= referenced_common_licenses(text)
        summary.append(f"  {package.name} {package.version} ({package.arch}), source "
                       f"{package.source} {package.source_version}: "
                       + (", ".join(names) if names else "see its copyright file below"))
        header = [RULE, f"{package.name} {package.version} ({package.arch}), from the Debian "
                  f"source package {package.source} {package.source_version}"]
        if package.note:
            header.append(package.note)
        header.append(f"Its copyright file: {path}" + (f" ({note})" if note else ""))
        sections.append("\n".join(header) + "\n" + "-" * 100 + "\n" + text.rstrip("\n") + "\n")
    for name in sorted(licences):
        path = os.path.join(COMMON_LICENSES, name)
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                sections.append(f"{RULE}\n{path}, which the copyright files above refer to\n"
                                + "-" * 100 + "\n" + f.read().rstrip("\n") + "\n")
    intro = (
        f"Third-party notices: {title}\n\n"
        "This program is statically linked with code from the Debian packages below, as its "
        "linker recorded\nit. Each package's Debian copyright file follows in full, then the full "
        "text of every licence\nthose files refer to. Where a package is under the GNU LGPL (the "
        "GNU C Library), you may relink\nthis program with a modified version of it: this "
        "program's complete source is published with each\nrelease (Apache-2.0), and the "
        "library's is Debian's source package of the version named.\n\n"
        "Packages:\n" + "\n".join(summary) + "\n")
    return intro + "\n" + "\n".join(sections)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--title", required=True, help="what the notices are for")
    parser.add_argument("--output", help="write here instead of standard output")
    parser.add_argument("binaries", nargs="+", metavar="BINARY")
    args = parser.parse_args()
    try:
        text = notices(args.title, args.binaries)
    except (NoticeError, sbom.SbomError, OSError) as e:
        print(f"notices.py: {e}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

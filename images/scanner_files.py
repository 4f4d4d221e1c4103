"""What lets container scanners in their default mode see the Debian packages in an image of
static binaries.

A FROM-scratch image has no package database, so Trivy, Grype/Syft and Docker Scout find nothing
to check in it, though its binaries embed the code of Debian packages. Distroless images, which
are Debian packages' files without Debian, solved this in a way every one of those scanners reads:
an /etc/os-release and /etc/debian_version naming the Debian release, and a dpkg status entry per
package in /var/lib/dpkg/status.d/ (one file each). These are those files for the packages a binary was linked
from (images/sbom.py's linked_packages, the linker's own record), so that scanners match
advisories against exactly those packages at exactly those versions. They claim nothing else: the
os-release's PRETTY_NAME says the image holds static binaries built from Debian packages, and each
status entry's description says which binary holds the package's code.
"""


def _host_os_release():
    info = {}
    with open("/etc/os-release") as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key:
                info[key] = value.strip('"')
    return info


def os_release(program, version):
    host = _host_os_release()
    if host.get("ID") != "debian" or not host.get("VERSION_ID"):
        raise RuntimeError("the images' os-release names the Debian release their packages come "
                           "from, but this machine's /etc/os-release is not Debian's")
    lines = [
        f'PRETTY_NAME="{program} {version}: static binaries built from {host.get("NAME", "Debian")}'
        f' {host["VERSION_ID"]} packages"',
        f'NAME="{host.get("NAME", "Debian GNU/Linux")}"',
        f'VERSION_ID="{host["VERSION_ID"]}"',
    ]
    if host.get("VERSION"):
        lines.append(f'VERSION="{host["VERSION"]}"')
    if host.get("VERSION_CODENAME"):
        lines.append(f'VERSION_CODENAME={host["VERSION_CODENAME"]}')
    lines.append("ID=debian")
    return ("\n".join(lines) + "\n").encode()


def status_entry(package, program):
    source = package.source
    if package.source_version != package.version:
        source += f" ({package.source_version})"
    lines = [
        f"Package: {package.name}",
        "Status: install ok installed",
        "Priority: optional",
        "Section: libdevel",
        "Maintainer: Debian",
        f"Architecture: {package.arch}",
        f"Source: {source}",
        f"Version: {package.version}",
        f"Description: linked statically into /{program}",
        f" Code of this Debian package is part of the static binary /{program}, as its linker",
        " recorded it; the package itself is not installed. See /sbom/ for the SPDX document.",
    ]
    return ("\n".join(lines) + "\n").encode()


def debian_version():
    """/etc/debian_version: the release's major number, which Trivy needs to know the image's
    packages are Debian's (its os-release reader has no case for Debian), and which makes Syft's
    and Trivy's purls say distro=debian-13 (the build's Debian release), as the SBOM's do."""
    return (_host_os_release()["VERSION_ID"] + "\n").encode()


def files(packages, program, version):
    """{path in the image: (mode, bytes)} for these Packages."""
    out = {"etc/os-release": (0o644, os_release(program, version)),
           "etc/debian_version": (0o644, debian_version())}
    for package in packages:
        out[f"var/lib/dpkg/status.d/{package.name}"] = (0o644, status_entry(package, program))
    return out

"""SLSA v1 provenance (an in-toto statement) of what images/assemble.py builds.

It says what was built (the subjects: image manifests and archives, by digest), from what (the
source: repository, tag and commit; the Debian packages linked, as the SBOM lists them) and by
what (the builder: this project's release scripts, and the Debian packages of every tool the build
ran, found by asking dpkg which package owns each tool as the build resolved it, so that no list
of package versions is kept by hand). It carries no time and no host name: two builds of one
commit with the same Debian packages write the same statement (the builds are reproducible, so
the subjects are the same too). Every package of the build root the build ran in (the Debian 13
root of toolchain/buildroot/, or the Debian 13 host) is listed with its exact version, so that
the whole build environment is on record, not only the tools named below.
"""

import os
import shutil
import subprocess
import sys

from sbom import debian_version, quote  # the purls spelt as the SBOM spells them

STATEMENT = "https://in-toto.io/Statement/v1"
PREDICATE = "https://slsa.dev/provenance/v1"

# The programs a release build runs, by name (resolved through PATH, then to the file dpkg knows):
# Bazel, the compilers and binutils for every platform, protoc and gRPC's plugin, and Python,
# which runs the scripts that make the SBOM, the notices and the images.
TOOLS = ["bazel", "gcc", "g++", "ld", "ar", "strip", "objcopy", "protoc", "grpc_cpp_plugin",
         "python3", "dpkg", "git", "tar", "gzip"]
CROSS_TOOLS = ["gcc", "g++", "ld", "strip", "objcopy"]


def _owner(path):
    """(package, version, architecture) of the Debian package that installed `path`, or None."""
    candidates = [path, os.path.realpath(path)]
    for candidate in candidates:
        # dpkg knows /usr/bin/x; on a merged-/usr system the path may resolve through /bin.
        for form in (candidate, candidate.replace("/usr/bin/", "/bin/", 1)):
            found = subprocess.run(["dpkg", "-S", form], capture_output=True, text=True)
            if found.returncode == 0:
                package = found.stdout.splitlines()[0].split(": ")[0].split(", ")[0]
                fields = subprocess.run(
                    ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Architecture}", package],
                    capture_output=True, text=True, check=True).stdout.split("\t")
                return tuple(fields)
    return None


def toolchain(triples):
    """The Debian packages of the tools the build ran: [(tool, package, version, arch)], sorted.

    A tool that is not on PATH, or that no package owns, is an error: provenance that left out
    part of the builder would claim less than it knows.
    """
    found, missing = set(), []
    names = list(TOOLS) + [f"{triple}-{tool}" for triple in triples for tool in CROSS_TOOLS]
    for name in names:
        # As the build runs them: Bazel's actions see /usr/bin and /bin only, and this runs on
        # the python3 it was started with.
        path = sys.executable if name == "python3" else shutil.which(name, path="/usr/bin:/bin")
        owner = _owner(path) if path else None
        if owner is None:
            missing.append(name if path is None else f"{name} ({path})")
            continue
        found.add((name,) + owner)
    if missing:
        raise RuntimeError("provenance: no Debian package found for the build tools "
                           + ", ".join(missing))
    return sorted(found)


def build_root():
    """Every package installed where the build ran: [(package, version, arch)], sorted."""
    listed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\n"],
        capture_output=True, text=True, check=True).stdout
    packages = set()
    for line in listed.splitlines():
        status, package, version, arch = line.split("\t")
        if status.startswith("ii"):
            packages.add((package, version, arch))
    if not packages:
        raise RuntimeError("provenance: dpkg lists no installed package")
    return sorted(packages)


def deb_purl(name, version, arch, distro=None):
    """The package's purl; with the Debian release it comes from (distro=debian-13) unless
    distro is empty. distro None: the release this runs on."""
    distro = f"debian-{debian_version()}" if distro is None else distro
    qualifiers = f"?arch={quote(arch)}" + (f"&distro={quote(distro)}" if distro else "")
    return f"pkg:deb/debian/{quote(name)}@{quote(version)}{qualifiers}"


def statement(subjects, source_url, tag, commit, version, platform, command, epoch, linked,
              tools, root=(), platforms=()):
    """The statement. subjects: [(name, sha256 hex)]; linked: the SBOM's Packages; tools: what
    toolchain() returned; root: what build_root() returned; platforms: every platform of the
    build (the image index's), of which `platform` is this statement's."""
    source = {"uri": f"git+{source_url}@refs/tags/{tag}" if tag else f"git+{source_url}",
              "digest": {"gitCommit": commit}}
    return {
        "_type": STATEMENT,
        "subject": [{"name": name, "digest": {"sha256": digest}} for name, digest in subjects],
        "predicateType": PREDICATE,
        "predicate": {
            "buildDefinition": {
                "buildType": f"{source_url}/images/release.sh@v1",
                "externalParameters": {
                    "source": source,
                    "version": version,
                    "platform": platform,
                    "platforms": list(platforms),
                    "command": command,
                },
                "internalParameters": {
                    "SOURCE_DATE_EPOCH": str(epoch),
                    "bazel": "build -c opt --stamp, clean output base, no cache",
                },
                "resolvedDependencies": [source] + [
                    {"uri": deb_purl(p.name, p.version, p.arch),
                     "name": p.name,
                     "annotations": {"role": "statically linked",
                                     "source": f"{p.source} {p.source_version}"}}
                    for p in sorted(linked, key=lambda p: p.key)
                ],
            },
            "runDetails": {
                "builder": {
                    "id": f"{source_url}/images/release.sh@{commit}",
                    "builderDependencies": [
                        {"uri": deb_purl(package, package_version, arch), "name": package,
                         "annotations": {"tool": tool}}
                        for tool, package, package_version, arch in tools
                    ] + [
                        {"uri": deb_purl(package, package_version, arch), "name": package,
                         "annotations": {"role": "build root"}}
                        for package, package_version, arch in root
                    ],
                },
                "metadata": {
                    "invocationId": f"{tag or commit}/{platform}",
                },
            },
        },
    }

#!/usr/bin/env python3
"""Assembles the images and the release files of one build from its static binaries.

    images/assemble.py OUT_DIR --source-url URI [--tag vV] [--image-prefix localhost/ndr/]
        [--tarballs] [--release] [--command TEXT] PLATFORM=REGISTRAR,DRIVER[,KUBELETCLIENT] ...

PLATFORM is an OCI platform's architecture[/variant]: amd64, arm64, arm/v7, ppc64le, s390x. The
binaries are static, with their symbol tables (the evidence images/vex.py checks); each is
stripped here of debug information only, with its architecture's strip, and shipped so: the
symbol table stays, for the crash report's function names (logging/crash_report.h). Which build they are (version, commit,
date: the images' labels and tags, the SBOMs', provenance's and VEX's) is what they say when run
with --version (natively, or under the platform's qemu); binaries that say different things are
refused, so every label names the build every binary is. URI is where the source is published
(images/source_uri.py says what it may be): the images' source label, the provenance's source and
builder, the VEX documents' ids; a release's is whoever builds it's to give (release.sh
--source-uri), never written into the code.

For each image (csi-node-driver-registrar, sample-csi-driver, and with a KUBELETCLIENT for every
platform kubeletclient: the judge, with the registrar beside it) it writes, into OUT_DIR:

  PROGRAM.oci.tar                   one OCI image index, every platform, in an OCI archive whose
                                    image is named IMAGE_PREFIX+PROGRAM:TAG (TAG: the version, "+"
                                    written "_", since a tag may not hold "+")
  PROGRAM-linux-ARCH.spdx.json      per platform: the SPDX SBOM of the Debian packages linked in
  PROGRAM-linux-ARCH.provenance.json   the SLSA v1 provenance statement
  PROGRAM.openvex.json              the OpenVEX document, every platform
  PROGRAM-V-linux-ARCH.tar.gz       with --tarballs: the binary, LICENSE, NOTICE,
                                    THIRD-PARTY-NOTICES and the SBOM

PROGRAM is the image's name, which is also its first binary's. Each platform's image holds its
binaries at /NAME (the first is the entrypoint), /licenses/LICENSE,
/licenses/NOTICE and /licenses/THIRD-PARTY-NOTICES (images/notices.py), the SBOM at
/sbom/PROGRAM.spdx.json, and for scanners in their default mode an /etc/os-release and
/etc/debian_version naming the Debian release the packages are from and a /var/lib/dpkg/status.d/
entry per package (images/scanner_files.py). The index carries,
per platform, a BuildKit attestation manifest with the SBOM, the provenance and the VEX, which
docker buildx imagetools and scanners read. Everything is byte for byte reproducible
(images/oci.py): the same binaries and arguments give the same files.

Before anything is written, the VEX statements are checked against the binaries: one that a
binary contradicts is an error; a linked Debian source version that no statement has been reviewed
for is a warning, and with --release an error.
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import notices  # noqa: E402
import oci  # noqa: E402
import provenance  # noqa: E402
import sbom  # noqa: E402
import scanner_files  # noqa: E402
import source_uri  # noqa: E402
import vex  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Each platform: its ELF machine (as `file` names it), the strip that handles its binaries, the
# GNU triple of its cross tools (None for the host's), and how to run its binaries here.
PLATFORMS = {
    "amd64": ("x86-64", "strip", None, []),
    "arm64": ("ARM aarch64", "aarch64-linux-gnu-strip", "aarch64-linux-gnu",
              ["qemu-aarch64-static"]),
    "arm/v7": ("ARM, EABI5", "arm-linux-gnueabihf-strip", "arm-linux-gnueabihf",
               ["qemu-arm-static"]),
    "ppc64le": ("64-bit PowerPC", "powerpc64le-linux-gnu-strip", "powerpc64le-linux-gnu",
                ["qemu-ppc64le-static"]),
    "s390x": ("IBM S/390", "s390x-linux-gnu-strip", "s390x-linux-gnu", ["qemu-s390x-static"]),
}
# Each image: its name, its description, and its binaries (the first is the entrypoint and names
# the image).
IMAGES = [
    ("csi-node-driver-registrar",
     "The CSI node-driver-registrar sidecar, a drop-in for the Go node-driver-registrar",
     ["csi-node-driver-registrar"]),
    ("sample-csi-driver", "A sample CSI node plugin, for demonstrations and tests",
     ["sample-csi-driver"]),
    ("kubeletclient",
     "The judge of CSI node plugins (kubeletclient sanity) and kubelet's side of them, with the "
     "registrar beside it", ["kubeletclient", "csi-node-driver-registrar"]),
]
VEX_AUTHOR = "ndr maintainers"
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")


class AssembleError(Exception):
    pass


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def check_binary(path, platform):
    description = subprocess.run(["file", "-L", path], capture_output=True, text=True,
                                 check=True).stdout
    if "statically linked" not in description:
        raise AssembleError(f"{path} is not statically linked; a FROM-scratch image needs a "
                            "static binary")
    if PLATFORMS[platform][0] not in description:
        raise AssembleError(f"{path} is not a {platform} binary: {description.strip()}")


def build_of(path, platform):
    """(version, commit, date) that the binary's --version says, checked."""
    run = subprocess.run(PLATFORMS[platform][3] + [path, "--version"], capture_output=True,
                         text=True)
    lines = run.stdout.splitlines()
    fields = [lines[0].split(" ")[-1] if lines else ""]
    for line, key in zip(lines[1:3], ("commit: ", "built: ")):
        fields.append(line[len(key):] if line.startswith(key) else "")
    version, commit, date = (fields + ["", ""])[:3]
    if (run.returncode != 0 or not SEMVER.match(version)
            or not re.fullmatch(r"[0-9a-f]{40}|unknown", commit)
            or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", date)):
        raise AssembleError(f"{path} --version (exit {run.returncode}) does not say which build it "
                            f"is (a version, commit: and built: lines): {run.stdout}{run.stderr}")
    return version, commit, date


def epoch_of(date):
    return int(datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp())


def oci_platform(platform):
    architecture, _, variant = platform.partition("/")
    value = {"architecture": architecture, "os": "linux"}
    if variant:
        value["variant"] = variant
    return value


def file_slug(platform):
    """How a release's file names spell PLATFORM: linux-amd64, linux-armv7, ..."""
    return "linux-" + platform.replace("/", "")


def tarball(name, files, epoch):
    """A .tar.gz of `files` ({path: (mode, bytes)}) under the directory `name`."""
    return oci.gzip_bytes(oci.tar_bytes({f"{name}/{p}": v for p, v in files.items()}, epoch))


def image_purl(name, digest):
    """The OCI purl of an image (an index or one platform's manifest) by digest, as the VEX names
    its products: pkg:oci/NAME@sha256%3A..., NAME the repository's last part, as scanners spell it
    (the registry it is pushed to is theirs to add, as the repository_url qualifier)."""
    return f"pkg:oci/{name.rsplit('/', 1)[-1]}@{urllib.parse.quote(digest, safe='')}"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--source-url", required=True,
                        help="where the source is published (images/source_uri.py): the images' "
                             "org.opencontainers.image.source label, the provenance's source and "
                             "builder, the VEX documents' ids")
    parser.add_argument("--tag", default="", help="the git tag built (releases)")
    parser.add_argument("--image-prefix", default="localhost/ndr/")
    parser.add_argument("--tarballs", action="store_true")
    parser.add_argument("--release", action="store_true")
    parser.add_argument("--command", default="images/assemble.py")
    parser.add_argument("--vex", default=os.path.join(HERE, "vex", "statements.yaml"))
    parser.add_argument("platforms", nargs="+", metavar="PLATFORM=REGISTRAR,DRIVER[,KUBELETCLIENT]")
    args = parser.parse_args(argv)
    try:
        args.source_url = source_uri.check(args.source_url)
    except ValueError as e:
        parser.error(str(e))
    binaries = {}
    programs = ["csi-node-driver-registrar", "sample-csi-driver", "kubeletclient"]
    for spec in args.platforms:
        platform, _, listed = spec.partition("=")
        paths = listed.split(",")
        if platform not in PLATFORMS or len(paths) not in (2, 3) or not all(paths):
            parser.error(f"{spec!r} is not PLATFORM=REGISTRAR,DRIVER[,KUBELETCLIENT] with PLATFORM "
                         f"one of {', '.join(PLATFORMS)}")
        if platform in binaries:
            parser.error(f"{platform} is given twice")
        binaries[platform] = dict(zip(programs, paths))
    if len({len(b) for b in binaries.values()}) != 1:
        parser.error("give KUBELETCLIENT for every platform or for none: an image index holds "
                     "the same image for each platform")
    args.binaries = binaries
    args.images = [image for image in IMAGES
                   if all(p in next(iter(binaries.values())) for p in image[2])]
    return args


def statement(predicate_type, subject, predicate):
    """An in-toto statement about one subject, (name, sha256 hex)."""
    return {"_type": provenance.STATEMENT, "predicateType": predicate_type,
            "subject": [{"name": subject[0], "digest": {"sha256": subject[1]}}],
            "predicate": predicate}


def write(directory, name, content):
    with open(os.path.join(directory, name), "wb") as f:
        f.write(content)


def assemble(args):
    builds = {}
    for platform, programs in sorted(args.binaries.items()):
        for program, path in sorted(programs.items()):
            check_binary(path, platform)
            builds.setdefault(build_of(path, platform), []).append(f"{program} ({platform})")
    if len(builds) != 1:
        raise AssembleError("the binaries are not of one build:\n  " + "\n  ".join(
            f"{', '.join(who)}: {version}, commit {commit}, built {date}"
            for (version, commit, date), who in sorted(builds.items())))
    (version, commit, date), = builds
    epoch = epoch_of(date)
    tag = version.replace("+", "_")
    created = oci.rfc3339(epoch)
    statements = vex.load_statements(args.vex)
    license_text = file_bytes(os.path.join(ROOT, "LICENSE"))
    notice_text = file_bytes(os.path.join(ROOT, "NOTICE"))
    triples = sorted({PLATFORMS[p][2] for p in args.binaries if PLATFORMS[p][2]})
    tools = provenance.toolchain(triples)
    root = provenance.build_root()

    with tempfile.TemporaryDirectory(prefix="ndr-assemble-") as work:
        # First what each binary links, and whether the VEX holds for it, before anything is
        # written: a refused build leaves nothing behind.
        stripped, linked_by, shipped, problems, unreviewed = {}, {}, {}, [], set()
        for platform in sorted(args.binaries):
            for program, binary in sorted(args.binaries[platform].items()):
                directory = os.path.join(work, program, platform.replace("/", ""))
                os.makedirs(directory)
                # The shipped binary has the name it has in the image, so that the SBOM and the
                # notices name that file.
                path = os.path.join(directory, program)
                subprocess.run([PLATFORMS[platform][1], "--strip-debug", "-o", path, binary],
                               check=True)
                stripped[program, platform] = path
                linked = linked_by[program, platform] = sbom.linked_packages([path])
                packages = [linked[0][k] for k in sorted(linked[0])]
                problems += vex.check_evidence(statements, {binary: packages},
                                               vex.defined_symbols, platform)
                unreviewed |= {f"{program} ({platform}) links {source} {source_version}"
                               for source, source_version in vex.unreviewed(statements, packages)}
            # Each image's binaries together: what they link, for its SBOM, notices and VEX.
            for image, _, programs in args.images:
                paths = [stripped[p, platform] for p in programs]
                linked = (linked_by[programs[0], platform] if len(programs) == 1
                          else sbom.linked_packages(paths))
                shipped[image, platform] = (paths, linked, [linked[0][k] for k in sorted(linked[0])])
        if problems:
            raise AssembleError("the VEX statements do not hold for these binaries:\n  "
                                + "\n  ".join(problems))
        if unreviewed and args.release:
            raise AssembleError(
                "a release needs the CVEs known against every linked Debian source version "
                "reviewed in images/vex/statements.yaml; none are for:\n  "
                + "\n  ".join(sorted(unreviewed)))
        for line in sorted(unreviewed):
            print(f"warning: {line}, which images/vex/statements.yaml has not been reviewed "
                  "for: its VEX leaves it out", file=sys.stderr)

        os.makedirs(args.out, exist_ok=True)
        for program, description, programs in args.images:
            name = args.image_prefix + program
            layout = oci.Layout()
            labels = {
                "org.opencontainers.image.title": program,
                "org.opencontainers.image.description": description,
                "org.opencontainers.image.version": version,
                "org.opencontainers.image.revision": commit,
                "org.opencontainers.image.source": args.source_url,
                "org.opencontainers.image.created": created,
                "org.opencontainers.image.licenses": "Apache-2.0",
            }
            manifests, attestations, vex_contents = [], [], []
            for platform in sorted(args.binaries):
                paths, linked, packages = shipped[program, platform]
                slug = file_slug(platform)
                document = sbom.build(name, version, platform, paths, created, linked)
                sbom_bytes = (json.dumps(document, indent=2) + "\n").encode()
                notice_bytes = notices.notices(f"{program} {version} (linux/{platform})",
                                               paths, linked).encode()
                binaries = {p: (0o755, file_bytes(path)) for p, path in zip(programs, paths)}
                files = dict(binaries)
                files.update({
                    "licenses/LICENSE": (0o644, license_text),
                    "licenses/NOTICE": (0o644, notice_text),
                    "licenses/THIRD-PARTY-NOTICES": (0o644, notice_bytes),
                    f"sbom/{program}.spdx.json": (0o644, sbom_bytes),
                })
                files.update(scanner_files.files(packages, program, version))
                manifest = layout.image(files, oci_platform(platform), epoch, ["/" + program],
                                        labels, f"{program} {version}")
                manifests.append((platform, manifest))

                image = (f"pkg:docker/{name}@{tag}?platform="
                         + urllib.parse.quote(f"linux/{platform}", safe=""),
                         manifest["digest"].split(":")[1])
                subjects = [image]
                if args.tarballs:
                    archive_name = f"{program}-{version}-{slug}.tar.gz"
                    data = tarball(f"{program}-{version}-{slug}", {
                        **binaries,
                        "LICENSE": (0o644, license_text),
                        "NOTICE": (0o644, notice_text),
                        "THIRD-PARTY-NOTICES": (0o644, notice_bytes),
                        f"{program}.spdx.json": (0o644, sbom_bytes),
                    }, epoch)
                    write(args.out, archive_name, data)
                    subjects.append((archive_name, sha256(data)))
                built = provenance.statement(
                    subjects, args.source_url, args.tag, commit, version, f"linux/{platform}",
                    args.command, epoch, packages, tools, root,
                    [f"linux/{p}" for p in PLATFORMS if p in args.binaries])
                contents = [(platform, p) for p in packages]
                vex_contents += contents
                platform_vex = vex.document(
                    f"{args.source_url}/vex/{program}/{version}/{slug}", VEX_AUTHOR, created,
                    statements, [(image_purl(name, manifest["digest"]), contents)])
                attestations.append(layout.attestation(manifest, [
                    statement(sbom.PREDICATE, image, document), built,
                    statement(vex.PREDICATE, image, platform_vex)]))
                write(args.out, f"{program}-{slug}.spdx.json", sbom_bytes)
                write(args.out, f"{program}-{slug}.provenance.json", canonical(built))

            index = layout.index([m for _, m in manifests] + attestations, labels)
            write(args.out, f"{program}.oci.tar",
                  layout.archive_bytes(index, tag, f"{name}:{tag}", epoch))
            write(args.out, f"{program}.openvex.json", canonical(vex.document(
                f"{args.source_url}/vex/{program}/{version}", VEX_AUTHOR, created, statements,
                [(image_purl(name, index["digest"]), vex_contents)])))
            print(f"{name}:{tag} index {index['digest']}")
            for platform, manifest in manifests:
                layer = layout.json_blob(manifest)["layers"][0]
                print(f"  linux/{platform:8} {manifest['digest']}  layer {layer['size']} bytes")


def canonical(value):
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        assemble(args)
    except (AssembleError, vex.VexError, notices.NoticeError, sbom.SbomError, RuntimeError,
            OSError, subprocess.CalledProcessError) as e:
        print(f"assemble.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

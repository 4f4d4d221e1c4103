#!/usr/bin/env python3
"""Reissues the OpenVEX documents of a release that is out, with statements added or corrected,
without rebuilding or changing its images:

    python3 images/vex_reissue.py RELEASE_DIR STATEMENTS OUT_DIR [--timestamp=YYYY-MM-DDTHH:MM:SSZ]

RELEASE_DIR holds the release's files as images/release.sh wrote them: each PROGRAM.openvex.json
(the image index's document) and each platform's PROGRAM-linux-SLUG.spdx.json (the Debian packages
that platform's binary links). STATEMENTS is a file in images/vex/statements.yaml's form with the
statements to publish. Each applies, as at build time (images/vex.py), to the packages the SBOMs
name of its source package at one of its versions, on its platforms; it replaces every statement
of the same vulnerability in the document (a correction), or is added. A statement that applies to
no package of a program leaves that program's document as it was, and is said so.

OUT_DIR gets each changed PROGRAM.openvex.json: the same @id, author and first timestamp, its
version one higher and last_updated set (OpenVEX's way to say a document changed), the product
(the image index, by digest) the same. Nothing else of the release changes, so its signatures and
digests hold; publish the new documents beside the release and attest each to its index again
(docs/release.md says how). What cannot be checked here: a statement's absent_symbols and
uncalled_symbols, which a build checks against the binaries' symbol tables: a release ships
stripped binaries. Each such statement is listed as not checked.

Exit status: 0 written, 1 a problem (each said; nothing written), 2 bad usage.
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assemble  # noqa: E402
import sbom  # noqa: E402
import vex  # noqa: E402

# The platform each release file name's slug stands for, as assemble.py names the files.
SLUG_PLATFORM = {assemble.file_slug(p): p for p in assemble.PLATFORMS}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class ReissueError(Exception):
    pass


def packages_of(spdx_path):
    """The Debian binary packages an SPDX SBOM of ours lists, as sbom.Package."""
    with open(spdx_path, encoding="utf-8") as f:
        document = json.load(f)
    packages = []
    for entry in document.get("packages", []):
        purls = [r["referenceLocator"] for r in entry.get("externalRefs", [])
                 if r.get("referenceType") == "purl"]
        if not purls or not purls[0].startswith("pkg:deb/"):
            continue
        query = dict(urllib.parse.parse_qsl(purls[0].partition("?")[2]))
        said = entry.get("sourceInfo", "")
        if not said.startswith("built package from: ") or "arch" not in query:
            raise ReissueError(f"{spdx_path}: package {entry.get('name')} says no source package "
                               "or architecture: not an SBOM of this project's")
        source, _, source_version = said[len("built package from: "):].partition(" ")
        packages.append(sbom.Package(entry["name"], query["arch"], entry.get("versionInfo", ""),
                                     source, source_version, None, entry["name"], "/"))
    return packages


def reissue(release, statements, timestamp):
    """{program: (new document, [what changed])} for each program whose document changes, and
    [notes]."""
    notes = [f"{s['vulnerability']} ({s['source']}): its "
             + " and ".join(f for f in ("absent_symbols", "uncalled_symbols") if s.get(f))
             + " not checked: the release's binaries are stripped"
             for s in statements if s.get("absent_symbols") or s.get("uncalled_symbols")]
    documents = sorted(glob.glob(os.path.join(release, "*.openvex.json")))
    if not documents:
        raise ReissueError(f"{release} holds no PROGRAM.openvex.json: not a release's directory")
    changed = {}
    for path in documents:
        program = os.path.basename(path)[:-len(".openvex.json")]
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        products = {p["@id"] for s in document.get("statements", []) for p in s.get("products", [])}
        if len(products) != 1:
            raise ReissueError(f"{path}: its statements name {len(products)} products, not the one "
                               "image index a release's document has")
        contents = []
        for spdx in sorted(glob.glob(os.path.join(release, f"{program}-linux-*.spdx.json"))):
            slug = os.path.basename(spdx)[len(program) + 1:-len(".spdx.json")]
            if slug not in SLUG_PLATFORM:
                raise ReissueError(f"{spdx}: '{slug}' is not a platform of ours")
            contents += [(SLUG_PLATFORM[slug], p) for p in packages_of(spdx)]
        if not contents:
            raise ReissueError(f"{release} has no SBOM of {program} (PROGRAM-linux-*.spdx.json)")
        added = vex.document(document["@id"], document["author"], timestamp, statements,
                             [(products.pop(), contents)])["statements"]
        if not added:
            notes.append(f"{program}: no statement applies to what it links; left as it was")
            continue
        names = {s["vulnerability"]["name"] for s in added}
        kept = [s for s in document["statements"] if s["vulnerability"]["name"] not in names]
        replaced = sorted(names & {s["vulnerability"]["name"] for s in document["statements"]})
        new = dict(document)
        new["statements"] = kept + added
        new["version"] = int(document.get("version", 1)) + 1
        new["last_updated"] = timestamp
        changed[program] = (new, [f"{n}: {'corrected' if n in replaced else 'added'}"
                                  for n in sorted(names)])
    return changed, notes


def main(argv):
    parser = argparse.ArgumentParser(prog="vex_reissue.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("release")
    parser.add_argument("statements")
    parser.add_argument("out")
    parser.add_argument("--timestamp", help="last_updated (default: now, UTC)")
    args = parser.parse_args(argv)
    timestamp = args.timestamp or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    if not TIMESTAMP.match(timestamp):
        print(f"vex_reissue.py: --timestamp={timestamp}: expected YYYY-MM-DDTHH:MM:SSZ",
              file=sys.stderr)
        return 2
    try:
        statements = vex.load_statements(args.statements)
        changed, notes = reissue(args.release, statements, timestamp)
        if os.path.exists(args.out) and os.listdir(args.out):
            raise ReissueError(f"{args.out} is not empty; name a new or empty directory")
        os.makedirs(args.out, exist_ok=True)
        for program, (document, what) in sorted(changed.items()):
            with open(os.path.join(args.out, f"{program}.openvex.json"), "w",
                      encoding="utf-8") as f:
                json.dump(document, f, indent=2, sort_keys=True)
                f.write("\n")
            print(f"{program}.openvex.json: version {document['version']}; " + "; ".join(what))
    except (ReissueError, vex.VexError, OSError, ValueError, KeyError) as e:
        print(f"vex_reissue.py: {e}", file=sys.stderr)
        return 1
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if not changed:
        print("vex_reissue.py: no document changes; nothing written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

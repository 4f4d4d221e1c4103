#!/usr/bin/env python3
"""Checks that what a reader is told to run names releases of this project that exist:

  - every version of ours named in README.md, SECURITY.md, CONTRIBUTING.md, docs/ and deploy/
    (an image tag, a release.sh argument, a release file's name, a kustomize ref, the README's
    status line, `--version` output) is a release: one RELEASES records, or the version that
    VERSION holds when CHANGELOG.md dates it (the release's own commit);
  - the images and the kustomize refs they point at, and the README's status line, name the
    newest release, so that nobody copies an older one;
  - the README's status paragraph names every platform of the newest release (RELEASES' record, or
    at the release's own commit its CHANGELOG.md entry's `Platforms:` line), and for each platform
    an older release has and the newest lacks, that platform and the newest release that has it,
    so that no reader takes a release for platforms it was not built for.

    python3 test/docs/check_versions.py [DIR]     checks DIR (default: this repository); prints
                                                   each problem and exits 1, or prints a PASS line
    python3 test/docs/check_versions.py --self-test
                                                   plants each kind of problem in a scratch tree
                                                   and requires that it is found

CHANGELOG.md is history and is not checked. A version followed by "-dev" is a development build's
(`1.2.0-dev+<commit>`), not a release, and is not checked either. Versions with a "v" in image tags
are other projects' (the Go registrar's `csi-node-driver-registrar:v2.17.0`).
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "version"))
import releases  # noqa: E402

V = r"(\d+\.\d+\.\d+(?:-rc\.\d+)?)"
OURS = r"(?:csi-node-driver-registrar|sample-csi-driver|kubeletclient)"
NOT_DEV = r"(?![-.\w]*-dev)(?![\w.])"

# (what, pattern whose group 1 is the version, must it be the newest release)
RULES = [
    ("image", re.compile(OURS + r":" + V + NOT_DEV), True),
    ("kustomize ref", re.compile(r"\?ref=v" + V + NOT_DEV), True),
    ("status line", re.compile(r"\*\*Status\*\*: release (\d+\.\d+(?:\.\d+)?)(?![\w.])"), True),
    ("release script", re.compile(r"release(?:-check)?\.sh\s+" + V + NOT_DEV), False),
    ("release file", re.compile(OURS + r"-" + V + r"(?:-linux|\.src)"), False),
    ("release directory", re.compile(r"releases?[-/]" + V + NOT_DEV), False),
    ("release", re.compile(r"\b[Rr]elease " + V + NOT_DEV), False),
    ("tag", re.compile(r"git tag -a v" + V + NOT_DEV), False),
    ("--version", re.compile(r"^" + OURS + r" " + V + r"$", re.M), False),
]
TOP_FILES = ["README.md", "SECURITY.md", "CONTRIBUTING.md"]
TREES = ["docs", "deploy"]
SKIP_DIRS = {"testdata"}
SEMVER_DATED = re.compile(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)$", re.M)


def key(version):
    core, _, pre = version.partition("-")
    return tuple(int(n) for n in core.split(".")) + ((1,) if not pre else (0, pre))


def released(root):
    """The released versions: RELEASES', and VERSION's when CHANGELOG.md dates it."""
    versions = []
    with open(os.path.join(root, "RELEASES"), encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if fields:
                versions.append(fields[0])
    try:
        with open(os.path.join(root, "VERSION"), encoding="utf-8") as f:
            current = f.read().strip()
        with open(os.path.join(root, "CHANGELOG.md"), encoding="utf-8") as f:
            dated = {m.group(1) for m in SEMVER_DATED.finditer(f.read())}
        if current in dated and current not in versions:
            versions.append(current)
    except OSError:
        pass
    return sorted(versions, key=key)


def platforms_of(root, versions):
    """{version: (platform, ...)} for each released version whose platforms are said: RELEASES'
    record, else its CHANGELOG.md entry's `Platforms:` line (the release's own commit)."""
    said = {}
    try:
        for record in releases.read_records(os.path.join(root, "RELEASES")):
            said[record.version] = record.platforms
    except releases.ReleaseError:
        pass  # version/releases.py check names what is wrong with the record
    try:
        with open(os.path.join(root, "CHANGELOG.md"), encoding="utf-8") as f:
            changelog = f.read()
    except OSError:
        changelog = ""
    for version in versions:
        if version not in said:
            listed = releases.platforms_in_changelog(changelog, version)
            if listed:
                said[version] = listed
    return said


def status_paragraph(root):
    """(line, text) of the README's paragraph that starts with **Status**, or None."""
    try:
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    start = text.find("**Status**")
    if start < 0:
        return None
    end = text.find("\n\n", start)
    return text.count("\n", 0, start) + 1, text[start:end if end >= 0 else len(text)]


def names_platform(text, platform):
    return re.search(r"(?<![\w/])" + re.escape(platform) + r"(?![\w/])", text) is not None


def check_status_platforms(root, versions):
    """Problems with the platforms the README's status paragraph names for the releases."""
    newest = versions[-1]
    said = platforms_of(root, versions)
    found = status_paragraph(root)
    if found is None:
        return []
    line, text = found
    where = f"README.md:{line}: the status"
    if newest not in said:
        return [f"{where}: release {newest}'s platforms are not said (RELEASES' fourth column, "
                f"or a line 'Platforms: ...' in its CHANGELOG.md entry)"]
    problems = [f"{where} does not name {p}, a platform of release {newest}"
                for p in said[newest] if not names_platform(text, p)]
    for platform in releases.PLATFORMS:
        if platform in said[newest]:
            continue
        having = [v for v in versions[:-1] if platform in said.get(v, ())]
        if having and not (names_platform(text, platform) and having[-1] in text):
            problems.append(f"{where} should say that release {newest} has no {platform} images "
                            f"and that {having[-1]} is the newest release with them")
    return problems


def files(root):
    for name in TOP_FILES:
        if os.path.isfile(os.path.join(root, name)):
            yield name
    for tree in TREES:
        for directory, dirs, names in os.walk(os.path.join(root, tree)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(names):
                yield os.path.relpath(os.path.join(directory, name), root)


def check(root):
    versions = released(root)
    if not versions:
        return ["RELEASES records no release"]
    newest = versions[-1]
    problems = []
    for path in files(root):
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        for what, pattern, must_be_newest in RULES:
            for match in pattern.finditer(text):
                named = match.group(1)
                line = text.count("\n", 0, match.start()) + 1
                where = f"{path}:{line}: {what} {match.group(0).strip()!r}"
                # "release 1.1" names the minor release 1.1.x.
                exists = any(v == named or v.startswith(named + ".") for v in versions)
                if not exists:
                    problems.append(f"{where} names {named}, which is not released (released: "
                                    f"{', '.join(versions)})")
                elif must_be_newest and not (newest == named or newest.startswith(named + ".")):
                    problems.append(f"{where} names {named}; the newest release is {newest}")
    return problems + check_status_platforms(root, versions)


def self_test():
    failures = []
    with tempfile.TemporaryDirectory(prefix="ndr-versions-") as root:
        def write(path, text):
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)

        write("RELEASES", "# version commit date platforms\n"
              "1.0.0 " + "a" * 40 + " 2000-01-01 amd64,arm64,s390x\n"
              "1.1.0 " + "b" * 40 + " 2000-02-01 amd64,arm64\n")
        write("VERSION", "1.2.0\n")
        write("CHANGELOG.md", "## 1.2.0 (unreleased)\n\n## 1.1.0 (2000-02-01)\n")
        clean = ("**Status**: release 1.1 (see the CHANGELOG), for amd64 and arm64; on s390x\n"
                 "run 1.0.0.\n\n"
                 "image: registry.example.com/storage/csi-node-driver-registrar:1.1.0\n"
                 "- registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0\n"
                 "bash images/release.sh 1.0.0 /tmp/release-1.0.0\n"
                 "a build of main is 1.2.0-dev+0123456789ab, tagged kubeletclient:1.2.0-dev_0123\n"
                 "kubeletclient-1.1.0-linux-amd64.tar.gz\n"
                 "csi-node-driver-registrar 1.0.0\n")
        write("README.md", clean)
        write("docs/deploying.md", "resources: [https://host/deploy?ref=v1.1.0]\n")
        write("deploy/testdata/old.yaml", "image: localhost/ndr/sample-csi-driver:0.9.0\n")
        if check(root):
            failures.append(f"a clean tree: {check(root)}")
        for path, text, want in [
            ("README.md", "**Status**: release 1.0\n", "the newest release is 1.1.0"),
            ("README.md", "**Status**: release 1.1, amd64; s390x: 1.0.0\n",
             "does not name arm64, a platform of release 1.1.0"),
            ("README.md", "**Status**: release 1.1, amd64 and arm64 (and s390x)\n",
             "release 1.1.0 has no s390x images and that 1.0.0"),
            ("README.md", "image: x/kubeletclient:1.2.0\n", "1.2.0, which is not released"),
            ("docs/a.md", "image: x/sample-csi-driver:1.0.0\n", "the newest release is 1.1.0"),
            ("docs/examples/ci.yml", "uses x/kubeletclient:2.0.0 # ok\n", "2.0.0, which is not"),
            ("docs/a.md", "bash images/release-check.sh 1.3.0\n", "1.3.0, which is not"),
            ("deploy/kustomization.yaml", "resources: [https://h/deploy?ref=v1.0.0]\n",
             "the newest release is 1.1.0"),
            ("SECURITY.md", "csi-node-driver-registrar-1.4.0.src.tar.gz\n", "1.4.0, which is not"),
            ("docs/a.md", "git tag -a v1.2.0 -m x\n", "1.2.0, which is not"),
            ("docs/a.md", "```\nkubeletclient 1.2.0\n```\n", "1.2.0, which is not"),
            ("docs/a.md", "Release 1.5.0 is out\n", "1.5.0, which is not"),
        ]:
            write(path, text)
            found = check(root)
            if not any(want in p for p in found):
                failures.append(f"{path} with {text.strip()!r}: expected a problem with "
                                f"{want!r}, found {found}")
            os.remove(os.path.join(root, path))
            if path == "README.md":
                write("README.md", clean)
        # The release's own commit: VERSION is dated in the CHANGELOG, and may be named.
        write("VERSION", "1.2.0\n")
        write("CHANGELOG.md", "## 1.2.0 (2000-03-01)\n\n## 1.1.0 (2000-02-01)\n")
        write("README.md", "**Status**: release 1.2, amd64; s390x: 1.0.0\n\n"
              "image: x/kubeletclient:1.2.0\n")
        write("docs/deploying.md", "resources: [https://host/deploy?ref=v1.2.0]\n")
        if not any("release 1.2.0's platforms are not said" in p for p in check(root)):
            failures.append(f"a release whose platforms are not said: {check(root)}")
        write("CHANGELOG.md", "## 1.2.0 (2000-03-01)\n\nPlatforms: amd64 (Linux).\n\n"
              "## 1.1.0 (2000-02-01)\n")
        if not any("no arm64 images and that 1.1.0" in p for p in check(root)):
            failures.append(f"a release that lacks the previous one's arm64: {check(root)}")
        write("README.md", "**Status**: release 1.2, amd64; arm64: 1.1.0; s390x: 1.0.0\n\n"
              "image: x/kubeletclient:1.2.0\n")
        if check(root):
            failures.append(f"a release's own commit naming it: {check(root)}")
    for failure in failures:
        print(f"check_versions self-test: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("check_versions self-test: PASS")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    problems = check(root)
    for problem in problems:
        print(f"check_versions: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_versions: PASS (every version of ours named is released; images, refs and the "
          f"status name the newest, {released(root)[-1]}, and the status its platforms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

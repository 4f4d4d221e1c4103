#!/usr/bin/env python3
"""The releases recorded in the repository's RELEASES file, and the git tags made from them.

    python3 version/releases.py [--repo DIR] list            VERSION COMMIT DATE PLATFORMS,
                                                             oldest first
    python3 version/releases.py [--repo DIR] newest          the newest release's version
    python3 version/releases.py [--repo DIR] commit VERSION  the commit release VERSION is built from
    python3 version/releases.py [--repo DIR] platforms VERSION
                                    the platforms release VERSION was made for, comma-separated
    python3 version/releases.py [--repo DIR] tag [--into DIR] [VERSION...]
                                    makes the annotated tag vVERSION of each release (all of them
                                    by default) that has none, in DIR (default: the repository);
                                    says which it made and which were there already
    python3 version/releases.py [--repo DIR] check           holds every record to the history

--repo is the checkout whose RELEASES is read (default: the one this script is in). A line of
RELEASES is `VERSION COMMIT DATE PLATFORMS`: a semver version without "v", the commit's 40 hex
digits, the release's date (YYYY-MM-DD), and the Linux platforms its images and binaries were
made for, comma-separated in the order amd64,arm64,arm/v7,ppc64le,s390x (a subset of them, as
images/release.sh --platforms made it); `#` starts a comment.

`commit` prefers the tag vVERSION when there is one and refuses when the tag and the record name
different commits, so that no one builds a release from the wrong commit without being told.
`tag` gives every tag it makes the commit's own committer and date, so that the same record makes
the same tag object in every copy of the repository; a tag already there on another commit is an
error, never moved. `check` requires of each record: a commit that is in this history and an
ancestor of HEAD (and of the next release's commit), whose VERSION file says that version and
whose CHANGELOG.md dates it; the checkout's CHANGELOG.md naming its platforms in its entry
(a line `Platforms: amd64, arm64, ...`); versions in increasing order; and a VERSION at HEAD
above the newest
release (the checkout's VERSION file), so that its builds are development builds of a release still
to come.

Exit status: 0 done, 1 a record or the history is wrong (each problem is said), 2 bad usage.
"""

import argparse
import collections
import os
import re
import subprocess
import sys

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
DATE = re.compile(r"^\d{4}-\d\d-\d\d$")
HERE = os.path.dirname(os.path.abspath(__file__))
# Every Linux platform a release can have, in the order the record lists them (OCI names).
PLATFORMS = ("amd64", "arm64", "arm/v7", "ppc64le", "s390x")

Record = collections.namedtuple("Record", "version commit date platforms")


class ReleaseError(Exception):
    pass


def semver_key(version):
    """A sort key in semver's order: a pre-release sorts below its release."""
    match = SEMVER.match(version)
    major, minor, patch, pre = match.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, parts)


def parse_platforms(text):
    """The platforms of a comma-separated list, in PLATFORMS' order; ValueError saying what is
    wrong."""
    names = [n.strip() for n in text.split(",")]
    unknown = [n for n in names if n not in PLATFORMS]
    if unknown or not names:
        raise ValueError(f"'{text}' names {', '.join(repr(n) for n in unknown) or 'no platform'}:"
                         f" a platform is one of {', '.join(PLATFORMS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"'{text}' names a platform twice")
    if names != [p for p in PLATFORMS if p in names]:
        raise ValueError(f"'{text}' is not in the order {','.join(PLATFORMS)}")
    return tuple(names)


def read_records(path):
    """[Record] from RELEASES, oldest first; ReleaseError naming each bad line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ReleaseError(f"cannot read {path}: {e.strerror}") from e
    records, problems = [], []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        where = f"{path}:{number}"
        if len(fields) != 4:
            problems.append(f"{where}: '{text}' is not 'VERSION COMMIT DATE PLATFORMS'")
            continue
        version, commit, date, platforms = fields
        if not SEMVER.match(version):
            problems.append(f"{where}: '{version}' is not a release version (MAJOR.MINOR.PATCH, "
                            "optionally -PRE-RELEASE, without 'v')")
        if not COMMIT.match(commit):
            problems.append(f"{where}: '{commit}' is not a commit's 40 lower-case hex digits")
        if not DATE.match(date):
            problems.append(f"{where}: '{date}' is not a date (YYYY-MM-DD)")
        try:
            platforms = parse_platforms(platforms)
        except ValueError as e:
            problems.append(f"{where}: {e}")
        records.append(Record(version, commit, date, platforms))
    if problems:
        raise ReleaseError("\n".join(problems))
    seen = set()
    for version, *_ in records:
        if version in seen:
            raise ReleaseError(f"{path}: release {version} is recorded twice")
        seen.add(version)
    for (older, *_), (newer, *_) in zip(records, records[1:]):
        if semver_key(newer) <= semver_key(older):
            raise ReleaseError(f"{path}: {newer} comes after {older}; releases go oldest first")
    return records


class Repo:
    def __init__(self, path):
        self.path = path

    def git(self, *args, check=True):
        run = subprocess.run(["git", "-C", self.path, *args], capture_output=True, text=True)
        if check and run.returncode != 0:
            raise ReleaseError(f"git {' '.join(args)}: {run.stderr.strip()}")
        return run

    def has_commit(self, commit):
        return self.git("cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0

    def tag_commit(self, version):
        """The commit tag vVERSION points at, or None without such a tag."""
        run = self.git("rev-parse", "-q", "--verify", f"refs/tags/v{version}^{{commit}}",
                       check=False)
        return run.stdout.strip() if run.returncode == 0 else None

    def show(self, commit, path):
        run = self.git("show", f"{commit}:{path}", check=False)
        return run.stdout if run.returncode == 0 else None


def releases_path(repo):
    return os.path.join(repo, "RELEASES")


def commit_of(repo, records, version):
    recorded = {r.version: r.commit for r in records}.get(version)
    tagged = Repo(repo).tag_commit(version)
    if tagged and recorded and tagged != recorded:
        raise ReleaseError(
            f"the tag v{version} is on {tagged[:12]}, but RELEASES records {version} as "
            f"{recorded[:12]}: one of them is wrong. Check which commit was released, then fix "
            f"RELEASES or delete the tag (git tag -d v{version}) and make it again "
            "(python3 version/releases.py tag)")
    if tagged or recorded:
        return tagged or recorded
    known = ", ".join(r.version for r in records) or "none"
    raise ReleaseError(f"{version} is not a release: there is no tag v{version} and RELEASES does "
                       f"not record it (recorded: {known})")


def make_tags(repo, records, versions, into):
    wanted = versions or [r.version for r in records]
    by_version = {r.version: r.commit for r in records}
    target = Repo(into)
    lines = []
    for version in wanted:
        if version not in by_version:
            raise ReleaseError(f"RELEASES does not record {version}; recorded: "
                               f"{', '.join(by_version) or 'none'}")
        commit = by_version[version]
        if not target.has_commit(commit):
            raise ReleaseError(f"{into} does not have {commit[:12]}, the commit of {version}"
                               + shallow_hint(target))
        existing = target.tag_commit(version)
        if existing == commit:
            lines.append(f"v{version}: there already, on {commit[:12]}")
            continue
        if existing:
            raise ReleaseError(f"the tag v{version} is on {existing[:12]}, not on {commit[:12]} as "
                               "RELEASES records; left as it is. Find out which is right first")
        who = target.git("log", "-1", "--format=%cn%n%ce%n%cI", commit).stdout.splitlines()
        env = dict(os.environ, GIT_COMMITTER_NAME=who[0], GIT_COMMITTER_EMAIL=who[1],
                   GIT_COMMITTER_DATE=who[2])
        run = subprocess.run(["git", "-C", into, "tag", "-a", f"v{version}", "-m",
                              f"Release {version}", commit], capture_output=True, text=True,
                             env=env)
        if run.returncode != 0:
            raise ReleaseError(f"git tag v{version}: {run.stderr.strip()}")
        lines.append(f"v{version}: made, on {commit[:12]}")
    return lines


def shallow_hint(repo):
    run = repo.git("rev-parse", "--is-shallow-repository", check=False)
    if run.stdout.strip() == "true":
        return " (this clone is shallow: git fetch --unshallow brings the history)"
    return ""


def platforms_in_changelog(text, version):
    """The platforms the `Platforms: ...` line of VERSION's entry in a CHANGELOG names, or None."""
    entry = False
    for line in text.splitlines():
        if line.startswith("## "):
            entry = line.startswith(f"## {version} (")
        elif entry and line.startswith("Platforms: "):
            listed = line[len("Platforms: "):].split(".")[0].split(" (")[0]
            try:
                return parse_platforms(listed.replace(", ", ","))
            except ValueError:
                return ()
    return None


def check(repo_path, records):
    repo = Repo(repo_path)
    problems = []
    previous = None
    try:
        with open(os.path.join(repo_path, "CHANGELOG.md"), encoding="utf-8") as f:
            changelog_now = f.read()
    except OSError:
        changelog_now = repo.show("HEAD", "CHANGELOG.md") or ""
    for version, commit, date, platforms in records:
        said_platforms = platforms_in_changelog(changelog_now, version)
        if said_platforms != platforms:
            problems.append(f"{version}: CHANGELOG.md's entry should have the line 'Platforms: "
                            f"{', '.join(platforms)}' (RELEASES records them), not "
                            + ("none" if said_platforms is None else
                               f"'Platforms: {', '.join(said_platforms) or '?'}'"))
        if not repo.has_commit(commit):
            problems.append(f"{version}: commit {commit} is not in this repository"
                            + shallow_hint(repo))
            previous = None
            continue
        if repo.git("merge-base", "--is-ancestor", commit, "HEAD",
                    check=False).returncode != 0:
            problems.append(f"{version}: commit {commit[:12]} is not an ancestor of HEAD: a "
                            "release is a commit of this branch's history")
        if previous and repo.git("merge-base", "--is-ancestor", previous[1], commit,
                                 check=False).returncode != 0:
            problems.append(f"{version}: commit {commit[:12]} does not descend from "
                            f"{previous[0]}'s {previous[1][:12]}")
        core = version.split("-", 1)[0]
        said = (repo.show(commit, "VERSION") or "(no VERSION file)").strip()
        if said != core:
            problems.append(f"{version}: the VERSION file of {commit[:12]} says {said}, not {core}")
        changelog = repo.show(commit, "CHANGELOG.md") or ""
        if f"## {version} ({date})" not in changelog.splitlines():
            problems.append(f"{version}: CHANGELOG.md of {commit[:12]} has no heading "
                            f"'## {version} ({date})'")
        tagged = repo.tag_commit(version)
        if tagged and tagged != commit:
            problems.append(f"{version}: the tag v{version} is on {tagged[:12]}, not on "
                            f"{commit[:12]}")
        previous = (version, commit)
    # The VERSION being built: the checkout's (as version/describe.sh reads it), else HEAD's.
    try:
        with open(os.path.join(repo_path, "VERSION"), encoding="utf-8") as f:
            head = f.read().strip()
    except OSError:
        head = (repo.show("HEAD", "VERSION") or "").strip()
    if records and SEMVER.match(head or "x") and \
            semver_key(head) <= semver_key(records[-1][0].split("-", 1)[0]):
        problems.append(f"VERSION says {head}, but {records[-1][0]} is released: move VERSION to "
                        "the next release, so that builds of this checkout sort above it")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(
        prog="releases.py", description="The releases recorded in RELEASES, and their git tags.")
    parser.add_argument("--repo", default=os.path.dirname(HERE),
                        help="the checkout whose RELEASES is read (default: this one)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    sub.add_parser("newest")
    commit = sub.add_parser("commit")
    commit.add_argument("version")
    platforms = sub.add_parser("platforms")
    platforms.add_argument("version")
    tag = sub.add_parser("tag")
    tag.add_argument("--into", help="the repository to make the tags in (default: --repo)")
    tag.add_argument("versions", nargs="*")
    sub.add_parser("check")
    args = parser.parse_args(argv)
    repo = os.path.abspath(args.repo)
    try:
        records = read_records(releases_path(repo))
        if args.command == "list":
            for record in records:
                print(record.version, record.commit, record.date, ",".join(record.platforms))
        elif args.command == "newest":
            if not records:
                raise ReleaseError(f"{releases_path(repo)} records no release")
            print(records[-1][0])
        elif args.command == "commit":
            if not SEMVER.match(args.version):
                print(f"releases.py: '{args.version}' is not a release version (e.g. 1.1.0)",
                      file=sys.stderr)
                return 2
            print(commit_of(repo, records, args.version))
        elif args.command == "platforms":
            recorded = {r.version: r.platforms for r in records}
            if args.version not in recorded:
                raise ReleaseError(f"RELEASES does not record {args.version}; recorded: "
                                   f"{', '.join(recorded) or 'none'}")
            print(",".join(recorded[args.version]))
        elif args.command == "tag":
            for line in make_tags(repo, records, args.versions, os.path.abspath(args.into or repo)):
                print(line)
        elif args.command == "check":
            problems = check(repo, records)
            if problems:
                print("releases.py check: RELEASES and the history disagree:\n  "
                      + "\n  ".join(problems), file=sys.stderr)
                return 1
            print(f"releases.py check: {len(records)} releases, each a commit of this history "
                  "whose VERSION and CHANGELOG.md name it, with its platforms")
    except ReleaseError as e:
        print(f"releases.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

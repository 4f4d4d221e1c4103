#!/usr/bin/env python3
"""Checks the documentation as a reader meets it, without building anything:

  - README.md is a front door: at most 250 lines, whose first screen leads to the compatibility
    table, upgrading and rolling back, and how to report a vulnerability;
  - every page of docs/ has at most 300 lines (split a longer one by task), no table cell in the
    front door or docs/ runs past 400 characters (move the detail to prose), and neither tells
    the project's history ("now fixed", "still not met", ...: that belongs in CHANGELOG.md), and
    none repeats a claim found false (FALSE_CLAIMS, each with what is true);
  - every relative link in the repository's Markdown files leads to a file or directory the
    repository has, and every #anchor to a heading of that file (GitHub's anchor rules);
  - every file under docs/ is reached from README.md, following links (docs/ holds documents
    and examples only; their tests live here, in test/docs/).

    python3 test/docs/check_docs.py [DIR]     checks DIR (default: this repository); prints each
                                         problem and exits 1, or prints a PASS line
    python3 test/docs/check_docs.py --self-test
                                         plants each kind of problem in a scratch tree and
                                         requires that it is found, and that a clean tree passes

Files are those git tracks in DIR, or every file under DIR when it is not a git work tree.
Links to other sites are not followed: the test suite has no network.
"""
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

README_MAX_LINES = 250
PAGE_MAX_LINES = 300
CELL_MAX_CHARS = 400
# What a reader of the README's first screen must find a link to.
FIRST_SCREEN_LINES = 40
FIRST_SCREEN_LINKS = ("docs/compatibility.md", "docs/upgrading.md", "SECURITY.md")
# Words of the project's history, not of what is true now.
HISTORY = re.compile(r"now fixed|was wrong|still not met|dropped|this session|the move\b|"
                     r"earlier commit|after release [0-9]|\bused to\b|until now|this commit", re.I)

# Claims once made in these pages and found false, each with what is true: refused wherever they
# come back (searched with line breaks read as spaces, outside CHANGELOG.md).
FALSE_CLAIMS = [
    (re.compile(r"(?:long-term support|LTS)[^.;]*\bamd64 and arm64 only", re.I),
     "Debian 12's long-term support covers i386, amd64, arm64, armhf and ppc64el, not s390x (the "
     "package source here serves its updates for amd64 and arm64 only)"),
    (re.compile(r"for older Go releases, which refuse them"),
     "the Go registrar takes --logging-format and --log-* from v2.11; say what each release does"),
    (re.compile(r"\b7\.7 MB resident"),
     "7.7 MB is the Go registrar's working set; ours is about 7.3 MB resident"),
    (re.compile(r"three flags are ours alone"),
     "the flags' underscore spellings are ours alone too"),
    (re.compile(r"README's release section"), "the README has no release section: docs/release.md"),
    (re.compile(r"kubelet code of its newest patch"),
     "name the patch that was read (for 1.29, v1.29.6: the newest the module proxy serves here)"),
]

# [text](target) and [text]: target; an image's ![alt](target) alike.
INLINE_LINK = re.compile(r"\]\(([^()\s]+(?:\([^()\s]*\))?)(?:\s+\"[^\"]*\")?\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s+(\S+)", re.M)
# A command that runs Bazel itself: there is no Bazel on a Debian 12 host.
BARE_BAZEL = re.compile(r"^\s*(?:\$\s*)?(?:sudo\s+)?bazel\s")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        return sorted(f for f in out.split("\0") if f)
    except (subprocess.CalledProcessError, FileNotFoundError):
        found = []
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("bazel-")]
            for name in files:
                found.append(os.path.relpath(os.path.join(directory, name), root))
        return sorted(found)


def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    seen = {}
    result = set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
        result.add(m.group(1))
    return result


def links(text):
    """(line number, target) of every link outside code: inline and reference links."""
    for number, line in prose_lines(text):
        # Inline code may show link syntax without being a link.
        line = re.sub(r"`[^`]*`", "", line)
        for m in INLINE_LINK.finditer(line):
            yield number, m.group(1)
        for m in REFERENCE_LINK.finditer(line):
            yield number, m.group(1)


def is_external(target):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None


def check(root):
    files = tracked_files(root)
    file_set = set(files)
    directories = {os.path.dirname(f) for f in files}
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            directories.add("/".join(parts[:i]))
    markdown = [f for f in files if f.endswith(".md")]
    texts = {}
    for f in markdown:
        with open(os.path.join(root, f), encoding="utf-8") as handle:
            texts[f] = handle.read()
    problems = []

    readme = texts.get("README.md")
    if readme is None:
        return ["README.md: missing"]
    count = readme.count("\n")
    if count > README_MAX_LINES:
        problems.append(f"README.md: {count} lines; a front door has at most {README_MAX_LINES}: "
                        "move the details into docs/ and link them")

    first_screen = "\n".join(readme.split("\n")[:FIRST_SCREEN_LINES])
    first_links = {urllib.parse.unquote(t.partition("#")[0]) for _, t in links(first_screen)}
    for target in FIRST_SCREEN_LINKS:
        if target not in first_links:
            problems.append(f"README.md: its first {FIRST_SCREEN_LINES} lines do not link {target}")

    for f in markdown:
        if not (f.startswith("docs/") or "/" not in f):  # the pages and the top-level files
            continue
        lines = texts[f].split("\n")
        if f.startswith("docs/") and len(lines) - 1 > PAGE_MAX_LINES:
            problems.append(f"{f}: {len(lines) - 1} lines; a page has at most "
                            f"{PAGE_MAX_LINES}: split it by task")
        for number, line in enumerate(lines, 1):
            m = HISTORY.search(line)
            if m and f != "CHANGELOG.md":
                problems.append(f"{f}:{number}: \"{m.group(0)}\" tells the project's history: say "
                                "what is true now, and put what changed in CHANGELOG.md")
        if f != "CHANGELOG.md":
            flat = texts[f].replace("\n", " ")
            for pattern, truth in FALSE_CLAIMS:
                for m in pattern.finditer(flat):
                    number = texts[f].count("\n", 0, m.start()) + 1
                    problems.append(f"{f}:{number}: \"{m.group(0)}\" is not true: {truth}")
        prose = {number for number, _ in prose_lines(texts[f])}
        for number, line in enumerate(lines, 1):
            if number not in prose and BARE_BAZEL.match(line):
                problems.append(f"{f}:{number}: a command runs `bazel` itself, which a Debian 12 "
                                "host does not have: write `bash test/bazel.sh ...`, which runs it "
                                "where the project builds")
        for number, line in prose_lines(texts[f]):
            if line.startswith("|"):
                for cell in line.strip().strip("|").split(" | "):
                    if len(cell) > CELL_MAX_CHARS:
                        problems.append(f"{f}:{number}: a table cell of {len(cell)} characters; at "
                                        f"most {CELL_MAX_CHARS}: move the detail to prose")
                        break

    graph = {}
    for f in markdown:
        graph[f] = set()
        for number, target in links(texts[f]):
            if is_external(target):
                continue
            path, _, anchor = target.partition("#")
            path = urllib.parse.unquote(path)
            resolved = f if path == "" else os.path.normpath(
                os.path.join(os.path.dirname(f), path))
            where = f"{f}:{number}: link to {target}"
            if resolved.startswith("..") or os.path.isabs(path):
                problems.append(f"{where}: leaves the repository")
                continue
            if resolved not in file_set and resolved not in directories:
                problems.append(f"{where}: {resolved} is not in the repository")
                continue
            graph[f].add(resolved)
            if anchor:
                if resolved not in texts:
                    problems.append(f"{where}: #{anchor} in a file that is not Markdown")
                elif anchor not in anchors(texts[resolved]):
                    problems.append(f"{where}: {resolved} has no heading with the anchor "
                                    f"#{anchor}")

    reached = {"README.md"}
    queue = ["README.md"]
    while queue:
        for target in graph.get(queue.pop(), ()):
            for f in ([target] if target in file_set else
                      [x for x in files if x.startswith(target + "/")]):
                if f not in reached:
                    reached.add(f)
                    queue.append(f)
    for f in files:
        if f.startswith("docs/") and f not in reached:
            problems.append(f"{f}: not reached from README.md: link it from the map of docs/ "
                            "or from a page the map links")
    return problems


def self_test():
    scratch = tempfile.TemporaryDirectory(prefix="ndr-docs-")  # removed when the test ends

    def tree(files):
        root = tempfile.mkdtemp(dir=scratch.name)
        for name, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        return root

    clean = {
        "README.md": "# Title\n\n[guide](docs/guide.md#the---flags) and [code](src/)\n"
                     "[c](docs/compatibility.md) [u](docs/upgrading.md) [s](SECURITY.md)\n",
        "SECURITY.md": "# Security\n",
        "docs/compatibility.md": "# Compatibility\n\n| a | b |\n|---|---|\n| x | y |\n",
        "docs/upgrading.md": "# Upgrading\n",
        "docs/guide.md": "# Guide\n\n## The `--flags`\n\n[back](../README.md#title)\n"
                         "[example](examples/run.sh)\n\n```\n[not a link](nowhere.md)\n```\n",
        "docs/examples/run.sh": "true\n",
        "src/main.cc": "\n",
    }
    failures = []
    if check(tree(clean)):
        failures.append(f"a clean tree was refused: {check(tree(clean))}")
    planted = {
        "a missing file": ("docs/guide.md", "[x](missing.md)\n", "is not in the repository"),
        "a missing anchor": ("docs/guide.md", "[x](../README.md#nowhere)\n",
                             "has no heading with the anchor"),
        "a link out of the repository": ("docs/guide.md", "[x](../../elsewhere/x.md)\n",
                                         "leaves the repository"),
        "a page nobody links": ("docs/orphan.md", "# Orphan\n", "not reached from README.md"),
        "a long README": ("README.md", "line\n" * (README_MAX_LINES + 1),
                          "a front door has at most"),
        "a long page": ("docs/guide.md", "line\n" * (PAGE_MAX_LINES + 1), "split it by task"),
        "a long table cell": ("docs/compatibility.md",
                              "| " + "x" * (CELL_MAX_CHARS + 1) + " | y |\n", "a table cell of"),
        "history in a page": ("docs/upgrading.md", "The race is now fixed.\n",
                              "tells the project's history"),
        "history in the README": ("README.md", "Dropped: the old way.\n",
                                  "tells the project's history"),
        "a bare bazel command": ("docs/guide.md", "```sh\nbazel test //...\n```\n",
                                 "runs `bazel` itself"),
        "a change narrated": ("docs/guide.md", "## What the move kept\n",
                              "tells the project's history"),
        "an earlier commit": ("docs/guide.md", "Where the earlier commit wrote FAIL.\n",
                              "tells the project's history"),
        "a release as a moment": ("SECURITY.md", "After release 1.1.0 the base is new.\n",
                                  "tells the project's history"),
        "a false claim across lines": ("docs/guide.md", "Debian 12's long-term support publishes "
                                       "updates for amd64 and\narm64 only.\n", "is not true"),
        "a false claim in the README": ("README.md", "It is 7.7 MB resident.\n",
                                        "7.3 MB resident"),
    }
    for what, (name, text, expected) in planted.items():
        files = dict(clean)
        files[name] = files.get(name, "") + text
        problems = check(tree(files))
        if not any(expected in p for p in problems):
            failures.append(f"missed {what}: {problems}")
    # History's words only as words: "refused to" holds "used to" and is no history.
    files = dict(clean)
    files["docs/guide.md"] = files.get("docs/guide.md", "") + "kubelet refused to register it.\n"
    history = [p for p in check(tree(files)) if "tells the project's history" in p]
    if history:
        failures.append(f"took a word holding a history word for history: {history}")
    planted_used_to = dict(clean)
    planted_used_to["docs/guide.md"] = planted_used_to.get("docs/guide.md", "") + "It used to fail.\n"
    if not any("tells the project's history" in p for p in check(tree(planted_used_to))):
        failures.append("missed \"used to\"")
    # The README's first screen: a link further down does not count.
    files = dict(clean)
    files["README.md"] = ("# Title\n\n[guide](docs/guide.md#the---flags) [code](src/)\n" +
                          "line\n" * FIRST_SCREEN_LINES +
                          "[c](docs/compatibility.md) [u](docs/upgrading.md) [s](SECURITY.md)\n")
    expected = f"first {FIRST_SCREEN_LINES} lines do not link docs/upgrading.md"
    if not any(expected in p for p in check(tree(files))):
        failures.append(f"missed links below the README's first screen: {check(tree(files))}")
    scratch.cleanup()
    for f in failures:
        print(f"check_docs self-test: {f}", file=sys.stderr)
    if failures:
        return 1
    print("check_docs self-test: PASS")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    here = os.path.dirname(os.path.abspath(__file__))  # test/docs
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(here))
    problems = check(root)
    if problems:
        print("check_docs: FAIL")
        for p in problems:
            print("  " + p)
        return 1
    print("check_docs: PASS (README.md and its first screen, links and anchors, every page of docs/ "
          "reached, page and cell lengths, no history, no claim found false)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

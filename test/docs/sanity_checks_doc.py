#!/usr/bin/env python3
"""Writes docs/sanity-checks.md from what `kubeletclient sanity --list` prints, so that the page
lists exactly the checks the judge runs, in the order it runs them.

    python3 test/docs/sanity_checks_doc.py KUBELETCLIENT > docs/sanity-checks.md
    python3 test/docs/sanity_checks_doc.py KUBELETCLIENT --check docs/sanity-checks.md
                                     exits 1, saying how to write it again, when the page differs

`--list` prints a first line that explains the names, then a line per check: its name, its
group, and what it does followed by "(kubelet: FUNCTIONS)".
"""
import re
import subprocess
import sys

LINE = re.compile(r"^(\S+)\s+(registration|volume|ephemeral|controller)\s+(.*)$")
GROUPS = {
    "registration": "Registration: kubelet's handshake, once per run",
    "volume": "Volumes: each persistent volume, in each volume mode",
    "ephemeral": "Ephemeral volumes: an inline volume and a generic ephemeral one",
    "controller": "Controller: the volumes the judge makes when no handle is given",
}


def cell(text):
    """Text for a table cell: kept literal (no HTML, no column breaks)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def render(listing):
    lines = listing.rstrip("\n").split("\n")
    if len(lines) < 2:
        raise ValueError("--list printed no checks")
    checks = []
    for line in lines[1:]:
        m = LINE.match(line)
        if not m:
            raise ValueError(f"--list printed a line this script cannot read: {line!r}")
        name, group, rest = m.groups()
        does, kubelet = rest, ""
        at = rest.rfind(" (kubelet: ")
        if at >= 0 and rest.endswith(")"):
            does, kubelet = rest[:at], rest[at + len(" (kubelet: "):-1]
        checks.append((group, name, does, kubelet))
    out = [
        "# Every check of `kubeletclient sanity`",
        "",
        "Written by",
        "`python3 test/docs/sanity_checks_doc.py bazel-bin/kubeletclient/kubeletclient`",
        "from what `kubeletclient sanity --list` prints; `//test/docs:sanity_checks_doc_test` fails",
        "when the two differ. How the judge runs them, and its flags: [judge.md](judge.md).",
        "",
        "```text",
        lines[0],
        "```",
        "",
    ]
    for group, title in GROUPS.items():
        rows = [c for c in checks if c[0] == group]
        if not rows:
            continue
        out += [f"## {title}", "", "| check | what is sent, and what passes | kubelet |",
                "|---|---|---|"]
        for _, name, does, kubelet in rows:
            code = name.replace("|", "\\|")  # a code span keeps < and > as they are
            out.append(f"| `{code}` | {cell(does)} | {cell(kubelet)} |")
        out.append("")
    unknown = sorted({c[0] for c in checks} - set(GROUPS))
    if unknown:
        raise ValueError(f"groups this script does not know: {unknown}")
    out.append(f"{len(checks)} checks in all.")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    listing = subprocess.run([argv[1], "sanity", "--list"], capture_output=True, text=True,
                             check=True).stdout
    page = render(listing)
    if len(argv) == 2:
        sys.stdout.write(page)
        return 0
    with open(argv[3], encoding="utf-8") as handle:
        current = handle.read()
    if current != page:
        import difflib
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), page.splitlines(True), "docs/sanity-checks.md",
            "from kubeletclient sanity --list"))
        print("docs/sanity-checks.md is not what `kubeletclient sanity --list` prints; write it "
              "again: python3 test/docs/sanity_checks_doc.py bazel-bin/kubeletclient/kubeletclient "
              "> docs/sanity-checks.md")
        return 1
    print("docs/sanity-checks.md: the same as kubeletclient sanity --list")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

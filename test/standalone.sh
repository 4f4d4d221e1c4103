#!/usr/bin/env bash
# The repository stands alone: nothing in it may point at files a clone does not have (a design
# folder beside the checkout, or its documents by name) or at work items by number (the word
# issue or seed and a number), which mean nothing to a reader of the clone. Write the fact itself
# instead.
#
#   bash test/standalone.sh [DIR]   checks the files git tracks in DIR (default: this repository),
#                                   or every file under DIR when it is not a git work tree; prints
#                                   each offending line and exits 1, or prints a PASS line.
#   bash test/standalone.sh --self-test
#                                   shows that the check finds a planted line and passes a clean
#                                   tree, so that a check that can no longer fail is noticed.
# CHANGELOG.md is exempt: release notes may name what a release fixed.
set -euo pipefail

pattern='\.\./shared/|shared/(design|seeds)/|\b[Ii]ssues? #?[0-9]{1,3}\b|\bseeds? 0[0-9]{2}\b|\b(CONTRACT|TOOLCHAIN|REAL-NODE|STYLE)\.md\b'

scan() {
  local dir=$1
  if git -C "$dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$dir" grep -nIE "$pattern" -- . ':!CHANGELOG.md' || true
  else
    (cd "$dir" && grep -rnIE --exclude=CHANGELOG.md "$pattern" . || true)
  fi
}

if [ "${1:-}" = --self-test ]; then
  tmp=$(mktemp -d /tmp/ndr-standalone-XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  echo 'nothing to see' >"$tmp/clean.md"
  [ -z "$(scan "$tmp")" ] || { echo "standalone self-test: a clean tree was refused" >&2; exit 1; }
  # Built from parts, so that this file does not match what it looks for.
  dots=.. folder=design n=21
  doc=REAL-NODE
  for line in "see $dots/shared/$folder/X.md" "the race of issue $n" "as seed 0$n says" \
              "as $doc.md says"; do
    echo "$line" >"$tmp/bad.md"
    [ -n "$(scan "$tmp")" ] || { echo "standalone self-test: missed: $line" >&2; exit 1; }
  done
  echo "standalone self-test: PASS"
  exit 0
fi

found=$(scan "${1:-$(cd "$(dirname "$0")/.." && pwd)}")
if [ -n "$found" ]; then
  echo "standalone: FAIL: these lines point outside the repository or name work items by number;"
  echo "write the fact itself:"
  echo "$found" | sed 's/^/  /'
  exit 1
fi
echo "standalone: PASS"

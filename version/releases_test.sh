#!/usr/bin/env bash
# version/releases.py in throwaway git repositories: what `check` holds a record to, what
# `commit` answers with and without tags, and that `tag` makes the same tags in every copy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/ndr-releases-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # name, expected, actual
  if [ "$2" = "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: expected '$2', got '$3'"
    failures=$((failures + 1))
  fi
}
outcome() {  # name, expected exit status, text expected in the output ("" for any), command...
  local name=$1 want_status=$2 want=$3 out status=0
  shift 3
  out=$("$@" 2>&1) || status=$?
  if [ "$status" -eq "$want_status" ] && [[ "$out" == *"$want"* ]]; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $status (expected $want_status), output: $out"
    failures=$((failures + 1))
  fi
}
releases() { python3 "$repo/version/releases.py" --repo "$repo" "$@"; }

repo=$tmp/repo
mkdir -p "$repo/version"
cp "$here/releases.py" "$repo/version/"
cd "$repo"
git init -q
git config user.email test@example.com
git config user.name test
export GIT_COMMITTER_DATE="2000-01-02T03:04:05Z" GIT_AUTHOR_DATE="2000-01-02T03:04:05Z"
commit_version() {  # VERSION, CHANGELOG heading: commits them, the entry above the earlier ones
  # (kept in $tmp/entries: this runs in a subshell), naming amd64 as its platforms; prints the commit
  echo "$1" >VERSION
  printf '%s\n\nPlatforms: amd64.\n\n%s' "$2" "$(cat "$tmp/entries" 2>/dev/null)" >"$tmp/entries.new"
  mv "$tmp/entries.new" "$tmp/entries"
  printf '# Changelog\n\n%s\n' "$(cat "$tmp/entries")" >CHANGELOG.md
  git add -A
  git commit -q -m "$1"
  git rev-parse HEAD
}
one=$(commit_version 1.0.0 "## 1.0.0 (2000-01-02)")
two=$(commit_version 1.1.0 "## 1.1.0 (unreleased)")
record() { printf '# version commit date platforms\n%s\n' "$@" >RELEASES; }

record "1.0.0 $one 2000-01-02 amd64"
outcome "a release recorded after it: check passes" 0 "1 releases" releases check
check "commit: from the record, without a tag" "$one" "$(releases commit 1.0.0)"
check "newest" "1.0.0" "$(releases newest)"
outcome "commit of a version never released" 1 "1.1.0 is not a release" releases commit 1.1.0
outcome "commit of something that is not a version" 2 "not a release version" releases commit v1.0.0

record "1.0.0 $two 2000-01-02 amd64"
outcome "a record whose commit's VERSION says another version" 1 \
  "the VERSION file of ${two:0:12} says 1.1.0, not 1.0.0" releases check
record "1.0.0 $one 2000-01-03 amd64"
outcome "a record whose date its CHANGELOG does not give" 1 "no heading '## 1.0.0 (2000-01-03)'" \
  releases check
record "1.0.0 0123456789abcdef0123456789abcdef01234567 2000-01-02 amd64"
outcome "a commit that is not in the repository" 1 "is not in this repository" releases check
record "1.0.0 $one"
outcome "a line without a date" 1 "is not 'VERSION COMMIT DATE PLATFORMS'" releases check
record "v1.0.0 ${one:0:12} 2.1.2000 amd64"
outcome "a bad version, a short commit and a bad date, each said" 1 "not a date (YYYY-MM-DD)" \
  releases check
outcome "... and the short commit" 1 "40 lower-case hex digits" releases check
outcome "... and the version with v" 1 "'v1.0.0' is not a release version" releases check

# Platforms: OCI names of Linux platforms, each once, in the record's order; the CHANGELOG's entry
# names the same.
record "1.0.0 $one 2000-01-02 amd64"
check "platforms of a release" "amd64" "$(releases platforms 1.0.0 2>&1)"
record "1.0.0 $one 2000-01-02 amd64,riscv64"
outcome "an unknown platform" 1 "names 'riscv64': a platform is one of amd64, arm64, arm/v7" \
  releases check
record "1.0.0 $one 2000-01-02 arm64,amd64"
outcome "platforms out of order" 1 "is not in the order amd64,arm64,arm/v7,ppc64le,s390x" \
  releases check
record "1.0.0 $one 2000-01-02 amd64,amd64"
outcome "a platform twice" 1 "names a platform twice" releases check
record "1.0.0 $one 2000-01-02 amd64,arm64"
outcome "a CHANGELOG entry naming other platforms" 1 \
  "should have the line 'Platforms: amd64, arm64' (RELEASES records them), not 'Platforms: amd64'" \
  releases check
outcome "platforms of a version not recorded" 1 "does not record 1.3.0" releases platforms 1.3.0
record "1.0.0 $one 2000-01-02 amd64"

# A commit off this branch is not a release of it.
git checkout -q -b side "$one"
side=$(commit_version 1.0.0 "## 1.0.0 (2000-01-02)")
git checkout -q -
record "1.0.0 $side 2000-01-02 amd64"
outcome "a commit that is not an ancestor of HEAD" 1 "is not an ancestor of HEAD" releases check

# VERSION at HEAD must have moved on from the newest release.
three=$(commit_version 1.1.0 "## 1.1.0 (2000-01-04)")
record "1.0.0 $one 2000-01-02 amd64" "1.1.0 $three 2000-01-04 amd64"
outcome "VERSION is the newest release's" 1 "VERSION says 1.1.0, but 1.1.0 is released" releases check
record "1.1.0 $three 2000-01-04 amd64" "1.0.0 $one 2000-01-02 amd64"
outcome "records out of order" 1 "1.0.0 comes after 1.1.0" releases check
record "1.0.0 $one 2000-01-02 amd64" "1.0.0 $one 2000-01-02 amd64"
outcome "a release recorded twice" 1 "recorded twice" releases check
commit_version 1.2.0 "## 1.2.0 (unreleased)" >/dev/null
record "1.0.0 $one 2000-01-02 amd64" "1.1.0 $three 2000-01-04 amd64"
outcome "two releases, then VERSION moved on: check passes" 0 "2 releases" releases check

# Tags: made from the records, with the commit's committer and date, so every copy gets the same.
outcome "tag makes every missing tag" 0 "v1.1.0: made, on ${three:0:12}" releases tag
check "the tag is annotated" "tag" "$(git cat-file -t v1.0.0)"
check "the tag's commit" "$one" "$(git rev-parse 'v1.0.0^{commit}')"
outcome "tag again: nothing to make" 0 "v1.0.0: there already" releases tag
git clone -q --no-tags "$repo" "$tmp/copy"
check "the copy starts without tags" "" "$(git -C "$tmp/copy" tag)"
outcome "tag --into another copy" 0 "v1.0.0: made" releases tag --into "$tmp/copy" 1.0.0
check "the same tag object in both copies" "$(git rev-parse v1.0.0)" \
  "$(git -C "$tmp/copy" rev-parse v1.0.0)"
check "only the version named was tagged" "v1.0.0" "$(git -C "$tmp/copy" tag)"
outcome "tag of a version not recorded" 1 "does not record 1.3.0" releases tag 1.3.0

# A tag and a record that disagree: refused, and the tag is never moved.
git tag -d v1.1.0 >/dev/null
git tag -a v1.1.0 -m wrong "$one"
outcome "commit: tag and record disagree" 1 "the tag v1.1.0 is on ${one:0:12}" releases commit 1.1.0
outcome "check: tag and record disagree" 1 "the tag v1.1.0 is on ${one:0:12}, not on" releases check
outcome "tag: never moves a tag" 1 "left as it is" releases tag
check "the wrong tag is still where it was" "$one" "$(git rev-parse 'v1.1.0^{commit}')"
git tag -d v1.1.0 >/dev/null
git tag v1.1.0 "$three"
check "commit: a tag that agrees with the record" "$three" "$(releases commit 1.1.0)"

# A release that is tagged but not recorded (as before records existed) is still found.
record "1.0.0 $one 2000-01-02 amd64"
check "commit: a tag without a record" "$three" "$(releases commit 1.1.0)"

# A shallow clone lacks the commits and says how to get them.
git clone -q --depth 1 "file://$repo" "$tmp/shallow"
cp RELEASES "$tmp/shallow/"
outcome "a shallow clone says so" 1 "git fetch --unshallow" \
  python3 "$repo/version/releases.py" --repo "$tmp/shallow" check

[ "$failures" -eq 0 ]

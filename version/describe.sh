#!/usr/bin/env bash
# Says which version a checkout of this project builds as, one "key value" line each:
#
#   version            1.0.0 when HEAD carries the tag v1.0.0 (or v1.0.0-rc.1: then 1.0.0-rc.1)
#                      for the version in the VERSION file and nothing is changed; otherwise
#                      1.0.0-dev+<12 hex digits of the commit>, with ".dirty" when files are
#                      changed or untracked, or 1.0.0-dev+unknown outside a git checkout
#   commit             the commit's 40 hex digits, or "unknown"
#   source_date_epoch  SOURCE_DATE_EPOCH if set, else the commit's time (so that two builds of
#                      one commit say the same), else 0
#   build_date         that time in RFC 3339, UTC
#
#   version/describe.sh [DIR]      (DIR: the checkout, default the one this script is in)
#
# Bazel's workspace status (version/workspace_status.sh) and the release scripts both use it, so
# a binary's --version, its image's labels and the release's name cannot disagree. A VERSION file
# that is not MAJOR.MINOR.PATCH, or a bad SOURCE_DATE_EPOCH, is an error (exit 1) saying so.
set -euo pipefail
dir=${1:-"$(dirname "$0")/.."}
cd "$dir"
fail() {
  echo "version/describe.sh: $*" >&2
  exit 1
}
[ -f VERSION ] || fail "no VERSION file in $(pwd): it holds the version being made, e.g. 1.0.0"
base=$(tr -d ' \t\r\n' <VERSION)
# Numbers without leading zeros, as semver.org says.
number='(0|[1-9][0-9]*)'
[[ "$base" =~ ^$number\.$number\.$number$ ]] ||
  fail "VERSION holds '$base', not MAJOR.MINOR.PATCH (e.g. 1.0.0); pre-releases are tags (v1.0.0-rc.1)"

commit=unknown dirty=false tags=
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && commit=$(git rev-parse HEAD 2>/dev/null); then
  [ -z "$(git status --porcelain 2>/dev/null)" ] || dirty=true
  tags=$(git tag --points-at HEAD --list "v$base" "v$base-*" 2>/dev/null)
else
  commit=unknown
fi

version=
if [ "$commit" != unknown ] && ! $dirty && [ -n "$tags" ]; then
  # A release (v1.0.0) wins over a pre-release (v1.0.0-rc.1) tag of the same commit.
  if grep -qxF "v$base" <<<"$tags"; then
    version=$base
  else
    version=$(head -n 1 <<<"$tags")
    version=${version#v}
  fi
  # A tag is only a version if it is one: v1.0.0-rc.1, not v1.0.0-what?ever.
  [[ "$version" =~ ^$number\.$number\.$number(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$ ]] || version=
fi
if [ -z "$version" ]; then
  if [ "$commit" = unknown ]; then
    version="$base-dev+unknown"
  else
    version="$base-dev+${commit:0:12}"
    ! $dirty || version+=".dirty"
  fi
fi

if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  [[ "$SOURCE_DATE_EPOCH" =~ ^[0-9]+$ ]] ||
    fail "SOURCE_DATE_EPOCH is '$SOURCE_DATE_EPOCH', not seconds since 1970 (e.g. 1795651200)"
  epoch=$SOURCE_DATE_EPOCH
elif [ "$commit" != unknown ]; then
  epoch=$(git log -1 --format=%ct HEAD)
else
  epoch=0
fi
echo "version $version"
echo "commit $commit"
echo "source_date_epoch $epoch"
echo "build_date $(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"

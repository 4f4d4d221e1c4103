#!/usr/bin/env bash
# version/describe.sh's rules, in throwaway git repositories, and version/stamp.sh's checks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/ndr-describe-XXXXXX)
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
field() {  # dir, key: describe.sh's value for key
  (cd "$1" && bash version/describe.sh) | sed -n "s/^$2 //p"
}
refused() {  # name, text expected in the error, command...
  local name=$1 want=$2 out status=0
  shift 2
  out=$("$@" 2>&1) || status=$?
  if [ "$status" -ne 0 ] && [[ "$out" == *"$want"* ]]; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $status, output: $out"
    failures=$((failures + 1))
  fi
}

repo=$tmp/repo
mkdir -p "$repo/version"
cp "$here/describe.sh" "$here/workspace_status.sh" "$repo/version/"
cd "$repo"
git init -q
git config user.email test@example.com
git config user.name test
echo 1.0.0 >VERSION
echo a >file
git add -A
# A fixed commit time, long ago: a description that used the clock would not match it.
export GIT_COMMITTER_DATE="2000-01-02T03:04:05Z" GIT_AUTHOR_DATE="2000-01-02T03:04:05Z"
git commit -q -m one
commit=$(git rev-parse HEAD)
unset SOURCE_DATE_EPOCH

check "untagged: a dev version with the commit" "1.0.0-dev+${commit:0:12}" "$(field . version)"
check "the commit" "$commit" "$(field . commit)"
check "the date is the commit's" "946782245" "$(field . source_date_epoch)"
check "the date in RFC 3339" "2000-01-02T03:04:05Z" "$(field . build_date)"

git tag v1.0.0
check "tagged v1.0.0: 1.0.0" "1.0.0" "$(field . version)"
echo b >file
check "tagged, a file changed: dev and dirty" "1.0.0-dev+${commit:0:12}.dirty" "$(field . version)"
git checkout -q file
touch untracked
check "tagged, an untracked file: dirty" "1.0.0-dev+${commit:0:12}.dirty" "$(field . version)"
rm untracked
check "tagged and clean again" "1.0.0" "$(field . version)"

# The same commit, cloned into another directory and described later, says the same.
git clone -q "$repo" "$tmp/elsewhere"
check "a clone elsewhere: the same description" "$(cd "$repo" && bash version/describe.sh)" \
  "$(cd "$tmp/elsewhere" && bash version/describe.sh)"
check "workspace status: stable keys" "STABLE_NDR_VERSION 1.0.0
STABLE_NDR_COMMIT $commit
STABLE_NDR_SOURCE_DATE_EPOCH 946782245
STABLE_NDR_BUILD_DATE 2000-01-02T03:04:05Z" "$(bash version/workspace_status.sh)"

check "SOURCE_DATE_EPOCH wins" "1795651200" "$(SOURCE_DATE_EPOCH=1795651200 field . source_date_epoch)"
refused "a SOURCE_DATE_EPOCH that is not a number" "not seconds since 1970" \
  env SOURCE_DATE_EPOCH=yesterday bash version/describe.sh

# A tag of another version than VERSION's is not this commit's version.
echo 1.1.0 >VERSION
git commit -q -am two
second=$(git rev-parse HEAD)
git tag v1.0.1
check "tag v1.0.1 on a commit whose VERSION is 1.1.0: dev" "1.1.0-dev+${second:0:12}" \
  "$(field . version)"
git tag v1.1.0-rc.1
check "a pre-release tag" "1.1.0-rc.1" "$(field . version)"
git tag v1.1.0
check "a release tag beside a pre-release tag" "1.1.0" "$(field . version)"

for bad in 1.0 v1.0.0 01.0.0 "1.0.0-rc.1" "1.0.0 extra"; do
  echo "$bad" >VERSION
  refused "VERSION '$bad' refused" "not MAJOR.MINOR.PATCH" bash version/describe.sh
done
git checkout -q VERSION

# Outside a git checkout: dev, commit unknown, date 0 unless SOURCE_DATE_EPOCH says.
mkdir -p "$tmp/export/version"
cp VERSION "$tmp/export/"
cp version/describe.sh "$tmp/export/version/"
check "no git: dev+unknown" "1.1.0-dev+unknown" "$(field "$tmp/export" version)"
check "no git: commit unknown" "unknown" "$(field "$tmp/export" commit)"
check "no git: date 0" "0" "$(field "$tmp/export" source_date_epoch)"
rm VERSION
refused "no VERSION file" "no VERSION file" bash version/describe.sh
git checkout -q VERSION

# stamp.sh writes the values as C++ strings, and refuses anything else.
stamp() {
  printf 'BUILD_HOST x\nSTABLE_NDR_VERSION %s\nSTABLE_NDR_COMMIT %s\nSTABLE_NDR_BUILD_DATE %s\n' \
    "$1" "$2" "$3" >"$tmp/status"
  bash "$here/stamp.sh" "$tmp/status"
}
out=$(stamp 1.0.0-dev+0123456789ab.dirty "$commit" 2000-01-02T03:04:05Z)
check "stamp.sh: the version literal" 'extern const char kStampedVersion[] = "1.0.0-dev+0123456789ab.dirty";' \
  "$(grep kStampedVersion <<<"$out")"
check "stamp.sh: the commit literal" "extern const char kStampedCommit[] = \"$commit\";" \
  "$(grep kStampedCommit <<<"$out")"
refused "stamp.sh: a version with a quote" "not a semver version" \
  stamp '1.0.0-a"b' "$commit" 2000-01-02T03:04:05Z
refused "stamp.sh: a short commit" "not a commit" stamp 1.0.0 abc 2000-01-02T03:04:05Z
refused "stamp.sh: a local date" "not an RFC 3339 UTC date" stamp 1.0.0 unknown "2000-01-02 03:04"
printf 'BUILD_HOST x\n' >"$tmp/status"
refused "stamp.sh: no status keys" "this repository's .bazelrc" bash "$here/stamp.sh" "$tmp/status"

[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# Every program of this project answers --version with the same build: "<name> <semver>", the
# commit, the date; the registrar also names the Go registrar release whose flags and behaviour it
# matches. A program left unstamped, or stamped from another build, would say something else.
set -euo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
failures=0
fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}
semver='(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?'
first=
for program in registrar/csi-node-driver-registrar kubeletclient/kubeletclient \
  test/csidriver/sample-csi-driver test/registrar-conformance; do
  name=$(basename "$program")
  status=0
  out=$("$program" --version 2>&1) || status=$?
  [ "$status" -eq 0 ] || fail "$name --version exited $status: $out"
  mapfile -t lines <<<"$out"
  [[ "${lines[0]}" =~ ^$name\ $semver$ ]] || fail "$name: first line '${lines[0]}' is not '$name <semver>'"
  [[ "${lines[1]:-}" =~ ^commit:\ ([0-9a-f]{40}|unknown)$ ]] || fail "$name: '${lines[1]:-}' is not the commit"
  [[ "${lines[2]:-}" =~ ^built:\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] ||
    fail "$name: '${lines[2]:-}' is not the date"
  build="${lines[0]#"$name "} ${lines[1]:-} ${lines[2]:-}"
  if [ -z "$first" ]; then
    first=$build
  elif [ "$build" != "$first" ]; then
    fail "$name says '$build', the registrar '$first'"
  fi
  if [ "$name" = csi-node-driver-registrar ]; then
    [ "${lines[3]:-}" = "matches: node-driver-registrar v2.17.0 (its flags and behaviour)" ] ||
      fail "$name: the fourth line '${lines[3]:-}' does not name the Go registrar release"
    [ "${#lines[@]}" -eq 4 ] || fail "$name: ${#lines[@]} lines: $out"
  else
    [ "${#lines[@]}" -eq 3 ] || fail "$name: ${#lines[@]} lines: $out"
  fi
  echo "ok   $name: ${lines[0]}"
done
# -version (Go's spelling) too.
[ "$(registrar/csi-node-driver-registrar -version | head -n 1)" = \
  "$(registrar/csi-node-driver-registrar --version | head -n 1)" ] || fail "-version differs"
echo "build: $first"
[ "$failures" -eq 0 ]

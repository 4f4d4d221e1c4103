#!/usr/bin/env bash
# Validates deploy/'s manifests and kustomizations (built first) against the Kubernetes API types,
# checks that each deliberately broken manifest or kustomization in deploy/testdata is refused,
# and that deploy/ names the images of the newest release in CHANGELOG.md. Writes JUnit XML for
# the suite's count.
set -u
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
python=/usr/bin/python3
cases=() failures=0

record() {  # name, failure message ("" when it passed), output to show
  local name=$1 failure=$2 output=$3
  if [ -z "$failure" ]; then
    echo "ok   $name"
    cases+=("<testcase name=\"$name\"/>")
  else
    echo "FAIL $name ($failure)"
    cases+=("<testcase name=\"$name\"><failure message=\"$failure\"/></testcase>")
    failures=$((failures + 1))
  fi
  [ -n "$output" ] && echo "$output" | sed 's/^/     /'
}

run_case() {  # name, expected exit (0 valid, 1 refused), files...
  local name=$1 expected=$2
  shift 2
  local output
  output=$("$python" deploy/validate.py "$@" 2>&1)
  local code=$?
  if [ "$code" -eq "$expected" ]; then
    record "$name" "" "$output"
  else
    record "$name" "exit $code, expected $expected" "$output"
  fi
}

for manifest in deploy/*.yaml deploy/*/kustomization.yaml test/demo/*.yaml; do
  run_case "valid: $manifest" 0 "$manifest"
done
for manifest in deploy/testdata/*.yaml deploy/testdata/*/kustomization.yaml; do
  run_case "refused: $manifest" 1 "$manifest"
done

# The images deploy/ runs are the newest release's: the first "## X.Y.Z (date)" of CHANGELOG.md.
release=$(sed -n 's/^## \([0-9][0-9.]*[0-9]\) ([0-9-]*)$/\1/p' CHANGELOG.md | head -n 1)
tags=$(sed -n 's|^ *image: localhost/ndr/[a-z-]*:\(.*\)$|\1|p' deploy/daemonset.yaml | sort -u)
if [ -n "$release" ] && [ "$tags" = "$release" ]; then
  record "deploy/ runs release $release's images" "" ""
else
  record "deploy/ runs the newest release's images" \
    "deploy/daemonset.yaml tags '$tags', newest release in CHANGELOG.md '$release'" ""
fi

if [ -n "${XML_OUTPUT_FILE:-}" ]; then
  {
    echo "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    echo "<testsuites tests=\"${#cases[@]}\" failures=\"$failures\" disabled=\"0\" errors=\"0\">"
    echo "<testsuite name=\"manifests\" tests=\"${#cases[@]}\" failures=\"$failures\">"
    printf '%s\n' "${cases[@]}"
    echo "</testsuite></testsuites>"
  } > "$XML_OUTPUT_FILE"
fi
[ "$failures" -eq 0 ]

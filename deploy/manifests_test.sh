#!/usr/bin/env bash
# Validates deploy/*.yaml against the Kubernetes API types, and checks that each deliberately
# broken manifest in deploy/testdata is refused. Writes JUnit XML for the suite's count.
set -u
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
python=/usr/bin/python3
cases=() failures=0

run_case() {  # name, expected exit (0 valid, 1 refused), files...
  local name=$1 expected=$2
  shift 2
  local output
  output=$("$python" deploy/validate.py "$@" 2>&1)
  local code=$?
  if [ "$code" -eq "$expected" ]; then
    echo "ok   $name"
    cases+=("<testcase name=\"$name\"/>")
  else
    echo "FAIL $name (exit $code, expected $expected)"
    echo "$output" | sed 's/^/     /'
    cases+=("<testcase name=\"$name\"><failure message=\"exit $code\"/></testcase>")
    failures=$((failures + 1))
  fi
  [ -n "$output" ] && echo "$output" | sed 's/^/     /'
}

for manifest in deploy/*.yaml test/demo/*.yaml; do
  run_case "valid: $manifest" 0 "$manifest"
done
for manifest in deploy/testdata/*.yaml; do
  run_case "refused: $manifest" 1 "$manifest"
done

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

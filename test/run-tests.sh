#!/usr/bin/env bash
# Runs the whole test suite: installs missing Debian packages, then `bazel test //...`, then
# prints how many test cases ran. Extra arguments go to `bazel test` (e.g. --config=asan).
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_deps

# Never leave a Bazel server behind, whatever happens.
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT

# Tests always run: they start real processes on real sockets, so a result cached from another
# clone or another day proves little. Builds still come from the disk cache.
# shellcheck disable=SC2046
rc=0
bazel test $(ndr_bazel_flags) --nocache_test_results "$@" -- //... || rc=$?

# Count test cases from each test target's JUnit XML (gtest writes it through Bazel).
passed=0 failed=0 targets=0
testlogs=$(bazel info bazel-testlogs 2>/dev/null)
for target in $(bazel query 'tests(//...)' 2>/dev/null); do
  xml="$testlogs/$(echo "${target#//}" | tr ':' '/')/test.xml"
  [ -f "$xml" ] || continue
  targets=$((targets + 1))
  line=$(grep -m1 -o '<testsuites[^>]*>' "$xml" || true)
  tests=$(echo "$line" | sed -n 's/.* tests="\([0-9]*\)".*/\1/p')
  failures=$(echo "$line" | sed -n 's/.* failures="\([0-9]*\)".*/\1/p')
  errors=$(echo "$line" | sed -n 's/.* errors="\([0-9]*\)".*/\1/p')
  disabled=$(echo "$line" | sed -n 's/.* disabled="\([0-9]*\)".*/\1/p')
  bad=$(( ${failures:-0} + ${errors:-0} ))
  passed=$(( passed + ${tests:-0} - bad - ${disabled:-0} ))
  failed=$(( failed + bad ))
done
echo "Test cases in ${targets} test targets:"
echo "tests: ${passed} passed, ${failed} failed"
if [ "$rc" -eq 0 ] && [ "$failed" -ne 0 ]; then rc=1; fi
exit "$rc"

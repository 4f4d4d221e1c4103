#!/usr/bin/env bash
# Runs the whole test suite, as CI does. Installs missing Debian packages first.
#
#   bash test/run-tests.sh          every stage: `bazel test //...` in the plain build, then under
#                                   ASan, UBSan and TSan, then a short fuzzing run (test/fuzz.sh)
#   bash test/run-tests.sh --quick  the plain build only, for a quick answer while editing
#   bash test/run-tests.sh ARGS...  the plain stage only, with ARGS passed to `bazel test`
#                                   (e.g. --config=asan)
#
# Each stage prints how many test cases ran, counted from every test target's JUnit XML; the last
# line totals them: `tests: N passed, M failed`. NDR_FUZZ_SECONDS (default 30) sets how long each
# fuzzer runs. The script goes on after a failing stage and exits 1 if any stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_deps

# Never leave a Bazel server behind, whatever happens.
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT

total_passed=0 total_failed=0 failed_stages=()

# run_stage NAME BAZEL_TEST_ARGS...: one `bazel test //...`, then its count of test cases.
run_stage() {
  local name=$1 rc=0 start=$SECONDS
  shift
  echo "==> stage ${name}: bazel test $* //..."
  # Tests always run: they start real processes on real sockets, so a result cached from another
  # clone or another day proves little. Builds still come from the disk cache.
  # shellcheck disable=SC2046
  bazel test $(ndr_bazel_flags) --nocache_test_results "$@" -- //... || rc=$?

  local passed=0 failed=0 targets=0 testlogs target xml line tests failures errors disabled bad
  testlogs=$(bazel info "$@" bazel-testlogs 2>/dev/null)
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
  echo "stage ${name}: ${passed} passed, ${failed} failed in ${targets} test targets" \
    "($((SECONDS - start)) s)"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then failed_stages+=("$name"); fi
}

if [ $# -gt 0 ] && [ "$1" != --quick ]; then
  run_stage plain "$@"
else
  run_stage plain
  if [ "${1:-}" != --quick ]; then
    run_stage asan --config=asan
    run_stage ubsan --config=ubsan
    run_stage tsan --config=tsan
    echo "==> stage fuzz: each fuzzer for ${NDR_FUZZ_SECONDS:-30} s"
    bash test/fuzz.sh "${NDR_FUZZ_SECONDS:-30}" || failed_stages+=(fuzz)
  fi
fi

echo "tests: ${total_passed} passed, ${total_failed} failed"
if [ ${#failed_stages[@]} -ne 0 ]; then
  echo "failed stages: ${failed_stages[*]}" >&2
  exit 1
fi

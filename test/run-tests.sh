#!/usr/bin/env bash
# Runs the whole test suite, as CI does. Installs missing Debian packages first.
#
#   bash test/run-tests.sh          every stage: `bazel test //...` in the plain build, then under
#                                   ASan and UBSan together (one build: they combine), then TSan,
#                                   then a short fuzzing run (test/fuzz.sh)
#   bash test/run-tests.sh --quick  the plain build only, for a quick answer while editing
#   bash test/run-tests.sh ARGS...  the plain stage only, with ARGS passed to `bazel test`
#                                   (e.g. --config=asan)
#
# The plain stage also builds and tests the other architectures' binaries (toolchain/cross) and
# the five-platform images; the sanitizer stages leave them out. Each stage prints how many test
# cases ran, counted from every test target's JUnit XML (test/junit.py), and names each one that
# failed; the last line totals them:
# `tests: N passed, M failed, K skipped`. NDR_FUZZ_SECONDS (default 30) sets how long each
# fuzzer runs. Before them, test/standalone.sh checks that nothing in the repository points
# outside it, and test/docs/check_docs.py that the documentation's links hold. The script goes on
# after a failing stage and exits 1 if any stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_buildroot_reexec "$0" "$@"
ndr_install_cross_deps

# Never leave a Bazel server behind, whatever happens.
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT

source test/test-stage.sh
total_passed=0 total_failed=0 total_skipped=0 failed_stages=()

run_stage() {
  local name=$1 rc=0
  ndr_test_stage "$@" || rc=$?
  total_passed=$((total_passed + ndr_stage_passed))
  total_failed=$((total_failed + ndr_stage_failed))
  total_skipped=$((total_skipped + ndr_stage_skipped))
  [ "$rc" -eq 0 ] || failed_stages+=("$name")
}

# Before any build, seven test cases: the repository stands alone (test/standalone.sh); its
# documentation holds together (test/docs/check_docs.py: the README's length, links and anchors,
# every page reached) and names only released versions of ours, the newest where it says what to
# run (test/docs/check_versions.py); each with its self-test; and every release RELEASES records is
# a commit of this history whose VERSION names it (version/releases.py check; its self-test is
# //version:releases_test). They need git's history, which a Bazel test's sandbox does not have.
echo "==> stage standalone: nothing points outside the repository; the docs' links and versions hold; releases are commits of this history"
for check in "bash test/standalone.sh --self-test" "bash test/standalone.sh" \
             "python3 test/docs/check_docs.py --self-test" "python3 test/docs/check_docs.py" \
             "python3 test/docs/check_versions.py --self-test" "python3 test/docs/check_versions.py" \
             "python3 version/releases.py check"; do
  if $check; then
    total_passed=$((total_passed + 1))
  else
    total_failed=$((total_failed + 1))
    failed_stages+=("standalone: $check")
  fi
done

if [ $# -gt 0 ] && [ "$1" != --quick ]; then
  run_stage plain "$@"
else
  run_stage plain
  if [ "${1:-}" != --quick ]; then
    # The other architectures' builds (tag `cross`) are never sanitized: the plain stage has
    # built and tested them.
    # ASan and UBSan in one build, as they combine: a cold suite compiles everything three times,
    # not four (a fresh machine's whole run stays well inside the hour).
    run_stage asan+ubsan --config=asan --config=ubsan "${NDR_NO_CROSS[@]}"
    run_stage tsan --config=tsan "${NDR_NO_CROSS[@]}"
    echo "==> stage fuzz: each fuzzer for ${NDR_FUZZ_SECONDS:-30} s"
    bash test/fuzz.sh "${NDR_FUZZ_SECONDS:-30}" || failed_stages+=(fuzz)
  fi
fi

echo "tests: ${total_passed} passed, ${total_failed} failed, ${total_skipped} skipped"
if [ ${#failed_stages[@]} -ne 0 ]; then
  echo "failed stages: ${failed_stages[*]}" >&2
  exit 1
fi

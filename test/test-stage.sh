# Sourced by test/run-tests.sh and test/stress.sh: one `bazel test //...` and its count of test
# cases. Needs test/install-deps.sh sourced first (for ndr_bazel_flags).

# The targets built for other architectures (toolchain/cross, and the image test that packs them)
# are tagged `cross`. They are built without sanitizers whatever the configuration, so a
# sanitizer stage leaves them out with these flags instead of building them again.
NDR_NO_CROSS=(--build_tag_filters=-cross --test_tag_filters=-cross)

# ndr_test_stage NAME BAZEL_TEST_ARGS...: runs every test once (never from the cache: they start
# real processes on real sockets, so a result cached from another clone or another day proves
# little; builds still come from the disk cache), then prints
#   stage NAME: P passed, F failed, S skipped in T test targets (N s)
# and one `FAILED //pkg:target Suite.Case` line per failure. Sets ndr_stage_passed,
# ndr_stage_failed, ndr_stage_skipped and ndr_stage_failures (those FAILED lines). Returns 1 if
# anything failed, Bazel's own errors included.
ndr_test_stage() {
  local name=$1 rc=0 start=$SECONDS since testlogs summary excluded=manual
  shift
  [[ " $* " != *" --test_tag_filters=-cross "* ]] || excluded="manual|cross"
  since=$(date +%s)
  echo "==> stage ${name}: bazel test $* //..."
  # shellcheck disable=SC2046
  bazel test $(ndr_bazel_flags) --nocache_test_results "$@" -- //... || rc=$?
  testlogs=$(bazel info "$@" bazel-testlogs 2>/dev/null)
  # shellcheck disable=SC2046
  summary=$(python3 test/junit.py --since="$since" "$testlogs" \
    $(bazel query "tests(//...) except attr(tags, '\\b($excluded)\\b', //...)" 2>/dev/null))
  read -r ndr_stage_passed ndr_stage_failed ndr_stage_skipped targets <<<"$(head -n 1 <<<"$summary")"
  ndr_stage_failures=$(tail -n +2 <<<"$summary")
  if [ "$rc" -ne 0 ] && [ "$ndr_stage_failed" -eq 0 ]; then
    ndr_stage_failed=1
    ndr_stage_failures="FAILED bazel test exited with code $rc"
  fi
  echo "stage ${name}: ${ndr_stage_passed} passed, ${ndr_stage_failed} failed," \
    "${ndr_stage_skipped} skipped in ${targets} test targets ($((SECONDS - start)) s)"
  [ -z "$ndr_stage_failures" ] || echo "$ndr_stage_failures"
  [ "$rc" -eq 0 ] && [ "$ndr_stage_failed" -eq 0 ]
}

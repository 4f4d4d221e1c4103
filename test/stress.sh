#!/usr/bin/env bash
# Runs the whole test suite N times on a machine kept busy on purpose, to find tests whose
# verdict depends on how fast the machine is. Installs missing Debian packages first.
#
#   bash test/stress.sh N [SANITIZER]
#
# Each round runs `bazel test //...` in the plain build, then with --config=SANITIZER (asan,
# ubsan or tsan; default asan), while two busy loops per core, started and stopped by this
# script, compete with the tests for the CPU: each test gets a fraction of what it would get on
# an idle machine, as on a shared CI machine. At the end it prints how often each test case
# failed, and exits 1 if any did. The busy loops end with the script, even if it is killed (each
# one checks that the script is still there).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-}
sanitizer=${2:-asan}
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bash test/stress.sh N [asan|ubsan|tsan]  (N: how many rounds, at least 1)" >&2
  exit 2
fi
case "$sanitizer" in
  asan | ubsan | tsan) ;;
  *)
    echo "test/stress.sh: unknown sanitizer \"$sanitizer\"; use asan, ubsan or tsan" >&2
    exit 2
    ;;
esac

source test/install-deps.sh
ndr_buildroot_reexec "$0" "$@"
ndr_install_cross_deps
source test/test-stage.sh

hogs=()
stop_hogs() {
  [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true
  hogs=()
}
trap 'stop_hogs; bazel shutdown >/dev/null 2>&1 || true' EXIT

# Two busy loops per core, each bounded by this script's life.
start_hogs() {
  local i script=$$
  for i in $(seq 1 $((2 * $(nproc)))); do
    (
      while kill -0 "$script" 2>/dev/null; do
        for ((n = 0; n < 200000; n++)); do :; done
      done
    ) &
    hogs+=($!)
  done
}

# Build everything first, without the load, so that the rounds measure the tests.
echo "==> building the plain and --config=${sanitizer} trees"
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) -- //...
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) "--config=${sanitizer}" "${NDR_NO_CROSS[@]}" -- //...

failures_file=$(mktemp /tmp/ndr-stress-XXXXXX)
total_passed=0 total_failed=0 start=$SECONDS
start_hogs
echo "==> ${rounds} rounds with ${#hogs[@]} busy loops running (two per core)"
for round in $(seq 1 "$rounds"); do
  for config in plain "$sanitizer"; do
    args=()
    [ "$config" = plain ] || args=("--config=${config}" "${NDR_NO_CROSS[@]}")
    ndr_test_stage "round ${round}/${rounds} ${config}" "${args[@]}" || true
    total_passed=$((total_passed + ndr_stage_passed))
    total_failed=$((total_failed + ndr_stage_failed))
    [ -z "$ndr_stage_failures" ] || sed "s/^FAILED /${config} /" <<<"$ndr_stage_failures" \
      >>"$failures_file"
  done
done
stop_hogs

elapsed=$((SECONDS - start))
echo
echo "stress: ${rounds} rounds (plain and ${sanitizer}) under load in $((elapsed / 60)) min" \
  "$((elapsed % 60)) s: ${total_passed} test cases passed, ${total_failed} failed"
if [ -s "$failures_file" ]; then
  echo "failures per test case (count, build, target, test case):"
  sort "$failures_file" | uniq -c | sort -rn
  rm -f "$failures_file"
  exit 1
fi
rm -f "$failures_file"
echo "no test case failed"

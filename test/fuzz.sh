#!/usr/bin/env bash
# Fuzzes every target in test/fuzz with libFuzzer and ASan (clang), starting from the checked-in
# seed corpora, for SECONDS each (default 60):
#   bash test/fuzz.sh [SECONDS]
# test/run-tests.sh runs it briefly as its last stage; for a longer run pass e.g. 3600.
#
# Each fuzzer's corpus grows in /tmp/ndr-fuzz/NAME (kept between runs, so long runs add up); copy
# inputs worth keeping into test/fuzz/corpus/NAME/, which the normal test suite replays. A crash,
# a hang (one input over 60 s) or an input needing over 3 GB stops that fuzzer and leaves the
# input in /tmp/ndr-fuzz/findings/; the script then exits 1 (see test/fuzz/findings/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_buildroot_reexec "$0" "$@"
ndr_install_deps "${NDR_TEST_PACKAGES[@]}"
seconds=${1:-60}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bash test/fuzz.sh [SECONDS]   (SECONDS per fuzzer, a positive whole number)" >&2
  exit 2
fi
# An output base of its own: switching to clang must not invalidate the normal build. Its builds
# make no bazel-* links (--symlink_prefix=/): links into this output base would stand where the
# normal build's are, and its next `bazel test //...` would read them as packages and fail.
bazel_fuzz=(bazel --output_base="$HOME/.cache/ndr-fuzz-output-base")
trap '"${bazel_fuzz[@]}" shutdown >/dev/null 2>&1 || true' EXIT
fuzzers=(names objects handlers)
# shellcheck disable=SC2046
"${bazel_fuzz[@]}" build $(ndr_bazel_flags) --config=fuzz --symlink_prefix=/ \
  $(printf '//test/fuzz:%s_fuzzer ' "${fuzzers[@]}")
bin=$("${bazel_fuzz[@]}" info --config=fuzz bazel-bin 2>/dev/null)

work=/tmp/ndr-fuzz
# Kept between runs, so it must be this project's: made by root, writable by no one else.
if [ -d "$work" ] && [ ! -L "$work" ]; then
  ndr_check_private_dir "$work" "the fuzzers' corpus directory" || exit 1
else
  ndr_make_private_dir "$work" "the fuzzers' corpus directory" 0755 || exit 1
fi
mkdir -p "$work/findings"
found=0
for name in "${fuzzers[@]}"; do
  mkdir -p "$work/$name"
  cp test/fuzz/corpus/"$name"/* "$work/$name"/
  echo "==> $name: fuzzing for ${seconds}s from $(ls "$work/$name" | wc -l) inputs"
  log="$work/$name.log"
  rc=0
  ASAN_OPTIONS=detect_leaks=0 "$bin/test/fuzz/${name}_fuzzer" -max_total_time="$seconds" \
    -timeout=60 -rss_limit_mb=3000 -print_final_stats=1 \
    -artifact_prefix="$work/findings/$name-" "$work/$name" >"$log" 2>&1 || rc=$?
  grep -a -E "stat::number_of_executed_units|ERROR: |SUMMARY|Test unit written" "$log" || true
  if [ "$rc" -ne 0 ]; then
    found=1
    echo "    FINDING: ${name}_fuzzer exited $rc; the input and its log:" >&2
    grep -a -o "Test unit written to .*" "$log" >&2 || true
    echo "    $log" >&2
  else
    echo "    no finding; corpus now $(ls "$work/$name" | wc -l) inputs in $work/$name"
  fi
done
exit "$found"

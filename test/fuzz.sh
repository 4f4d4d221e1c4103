#!/usr/bin/env bash
# Fuzzes every target in test/fuzz with libFuzzer and ASan (clang), starting from the checked-in
# seed corpora, for SECONDS each (default 60):
#   bash test/fuzz.sh [SECONDS]
# New inputs go to a scratch corpus under /tmp; copy interesting ones into test/fuzz/corpus/NAME/,
# where the normal test suite replays them. A crash, a hang (over 10 s) or an input needing over
# 3 GB ends that fuzzer's run and leaves the input in the current directory (see
# test/fuzz/findings/).
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_install_deps clang libclang-rt-14-dev
seconds=${1:-60}
# An output base of its own: switching to clang must not invalidate the normal build.
bazel_fuzz=(bazel --output_base="$HOME/.cache/ndr-fuzz-output-base")
trap '"${bazel_fuzz[@]}" shutdown >/dev/null 2>&1 || true' EXIT
fuzzers=(names objects handlers)
# shellcheck disable=SC2046
"${bazel_fuzz[@]}" build $(ndr_bazel_flags) --config=fuzz \
  $(printf '//test/fuzz:%s_fuzzer ' "${fuzzers[@]}")
bin=$("${bazel_fuzz[@]}" info --config=fuzz bazel-bin 2>/dev/null)
for name in "${fuzzers[@]}"; do
  scratch=$(mktemp -d /tmp/ndr-fuzz-corpus-XXXXXX)
  cp test/fuzz/corpus/"$name"/* "$scratch"/
  echo "==> $name: fuzzing for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=0 "$bin/test/fuzz/${name}_fuzzer" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=3000 -print_final_stats=1 "$scratch" 2>&1 |
    grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" || true
  echo "    corpus now $(ls "$scratch" | wc -l) inputs in $scratch"
done

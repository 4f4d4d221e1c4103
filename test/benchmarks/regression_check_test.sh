#!/bin/bash
# figures.sh's regression check reads the right rows of the right section, passes a build within
# 10% of the release, and fails one above it or one whose figure is missing.
set -euo pipefail
source test/util/shtest.sh
source test/benchmarks/regression_check.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Results as registrar_benchmark prints them (rows cut from a real run): the release's section
# with the ratios given, then a Go registrar's section whose ratios are all far above 1.10, so
# that a check reading the wrong section fails the passing case.
# results FILE STEADY_HELD RIGHT_AFTER_HELD IDLE_HELD SOCKET GETINFO
results() {
  cat >"$1" <<TABLES
### Ours against the release 9.9.9

| MB                                                       | ours       | other      | ours/other |
|----------------------------------------------------------|------------|------------|------------|
| steady, between calls: mean of 10                        | 1.22       | 1.24       | 1.50       |
| steady, between calls, less charged ahead: mean of 10    | 0.80       | 0.90       | $2       |
| steady, between calls, less charged ahead: highest of 10 | 0.81       | 0.92       | 1.50       |
|   working set less charged ahead, mean                   | 0.80       | 0.90       | 1.50       |
| steady, right after a call: working set                  | 1.80       | 1.72       | 1.50       |
|   working set less charged ahead                         | 1.37       | 1.47       | $3       |
| idle: working set                                        | 0.72       | 0.68       | 1.50       |
|   working set less charged ahead                         | 0.61       | 0.65       | $4       |

| figure                           | ours           | ours, steady   | other          | other, steady  | steady ratio |
|----------------------------------|----------------|----------------|----------------|----------------|--------------|
| exec to registration socket      | 4.5 ms         |                | 4.7 ms         |                | $5         |
| exec to GetInfo answered         | 6.9 ms         |                | 7.1 ms         |                | $6         |

### Ours against the Go registrar v2.17.0

| MB                                                       | ours       | other      | ours/other |
|----------------------------------------------------------|------------|------------|------------|
| steady, between calls, less charged ahead: mean of 10    | 0.80       | 0.10       | 8.00       |
| steady, right after a call: working set                  | 1.80       | 0.10       | 8.00       |
|   working set less charged ahead                         | 1.37       | 0.10       | 8.00       |
| idle: working set                                        | 0.72       | 0.10       | 8.00       |
|   working set less charged ahead                         | 0.61       | 0.10       | 8.00       |
| exec to registration socket      | 4.5 ms         |                | 0.1 ms         |                | 8.00         |
| exec to GetInfo answered         | 6.9 ms         |                | 0.1 ms         |                | 8.00         |
TABLES
}

# expect STATUS PATTERN FILE: the check of FILE returns STATUS and prints a line matching PATTERN.
expect() {
  local status=0 out
  out=$(ndr_figures_regression_check "$3" 9.9.9) || status=$?
  [ "$status" -eq "$1" ] || { echo "returned $status, not $1:"; echo "$out"; return 1; }
  grep -q -- "$2" <<<"$out" || { echo "no line matching '$2' in:"; echo "$out"; return 1; }
}

results "$dir/pass" 0.89 0.93 1.10 0.95 1.00
shtest_case "a build at most 1.10 times the release in every figure passes (1.10 itself included)" \
  expect 0 "passed (5 figures" "$dir/pass"

results "$dir/steady" 1.11 0.93 0.94 0.95 0.97
shtest_case "steady memory between calls 1.11 times the release's fails, naming it" \
  expect 3 "steady, between calls, less charged ahead: mean of: 1.11 times" "$dir/steady"

results "$dir/after" 0.89 1.20 0.94 0.95 0.97
shtest_case "memory right after a call is read from its own row, not the first such row" \
  expect 3 "steady, right after a call: working set /  working set less charged ahead: 1.20" "$dir/after"

results "$dir/idle" 0.89 0.93 1.30 0.95 0.97
shtest_case "idle memory 1.30 times the release's fails" \
  expect 3 "idle: working set /  working set less charged ahead: 1.30" "$dir/idle"

results "$dir/socket" 0.89 0.93 0.94 1.15 0.97
shtest_case "exec to the socket 1.15 times the release's fails" \
  expect 3 "exec to registration socket: 1.15" "$dir/socket"

results "$dir/getinfo" 0.89 0.93 0.94 0.95 1.11
shtest_case "exec to GetInfo 1.11 times the release's fails" \
  expect 3 "exec to GetInfo answered: 1.11" "$dir/getinfo"

results "$dir/missing" 0.89 0.93 - 0.95 0.97
shtest_case "a figure not measured ('-') fails the check rather than passing it" \
  expect 3 "idle: working set /  working set less charged ahead: not measured" "$dir/missing"

results "$dir/other-version" 0.89 0.93 0.94 0.95 0.97
sed -i 's/release 9.9.9/release 9.9.8/' "$dir/other-version"
shtest_case "results of another release than the one checked against fail, all five unmeasured" \
  expect 3 "exec to GetInfo answered: not measured" "$dir/other-version"

shtest_end

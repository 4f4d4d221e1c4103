# Reading figures.sh's results, sourced by figures.sh and its test: ratios out of the Markdown
# tables registrar_benchmark prints, and the regression check against the newest release.

# A ratio, ours/other, from the section of RESULTS titled "### TITLE": column COLUMN of the first
# table row starting with "| ROW" (5 in the working-set table, 7 in the start-up table), or with
# THEN given, of the first row starting with "| THEN" after that row. Prints nothing if none.
#   ndr_figures_ratio RESULTS TITLE ROW COLUMN [THEN]
ndr_figures_ratio() {
  awk -v title="### $2" -v row="| $3" -v column="$4" -v then="${5:+| $5}" -F'|' '
    /^### / { inside = ($0 == title) }
    inside && !found && index($0, row) == 1 { found = 1; if (then == "") { take = 1 } else { next } }
    inside && found && then != "" && index($0, then) == 1 { take = 1 }
    take { gsub(/ /, "", $column); print $column; exit }' "$1"
}

# The regression check: this build against release VERSION, from the section "### Ours against the
# release VERSION" of RESULTS, where "other" is that release. Prints the verdict, one line, and a
# line for each figure that failed; returns 0 when every figure is at most 1.10 times the
# release's, and 3 when one is above, or was not measured (a check not carried out never passes).
#
# Memory is what the processes hold, the working set less the pages charged ahead: those are the
# kernel's per-CPU batches (up to 256 kB a CPU), which land on one registrar or the other by
# chance, as much as half of an idle registrar's working set either way, and would make the check
# a coin toss. Start-up is the median of the alternating start-ups.
#   ndr_figures_regression_check RESULTS VERSION
ndr_figures_regression_check() {
  local results=$1 version=$2 check row column then what value regressions=() checked=0
  for check in "steady, between calls, less charged ahead: mean of|5|" \
      "steady, right after a call: working set|5|  working set less charged ahead" \
      "idle: working set|5|  working set less charged ahead" \
      "exec to registration socket|7|" "exec to GetInfo answered|7|"; do
    IFS='|' read -r row column then <<<"$check"
    what="$row${then:+ /$then}"
    value=$(ndr_figures_ratio "$results" "Ours against the release $version" "$row" "$column" "$then")
    if ! [[ $value =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
      regressions+=("$what: not measured")
    elif awk -v v="$value" 'BEGIN { exit !(v > 1.10) }'; then
      regressions+=("$what: $value times release $version's")
    fi
    checked=$((checked + 1))
  done
  if [ ${#regressions[@]} -eq 0 ]; then
    echo "Regression check against release $version: passed ($checked figures, each at most 1.10 times the release's)"
    return 0
  fi
  echo "Regression check against release $version: FAILED, more than 1.10 times the release's (or unmeasured):"
  printf -- '- %s\n' "${regressions[@]}"
  return 3
}

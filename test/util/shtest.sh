# Named cases for a shell test, reported as the C++ tests report theirs: a line per case on
# stdout, and JUnit XML in $XML_OUTPUT_FILE (under Bazel), which test/junit.py counts for the suite.
# A case that was not carried out is reported as skipped, with its reason, never as passed.
#   source test/util/shtest.sh
#   shtest_case "what the case shows" COMMAND [ARGS...]
#   shtest_skip "what the case shows" "why it was not run"
#   shtest_end                       # writes the XML; exits 1 if a case failed
# A failing COMMAND's output is shown under its case; a passing one's is not.

shtest_cases_=()
shtest_failures_=0
shtest_skipped_=0

shtest_xml_escape_() {
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g' <<<"$1"
}

shtest_case() {
  local name=$1 out status=0
  shift
  out=$("$@" 2>&1) || status=$?
  if [ "$status" -eq 0 ]; then
    echo "PASS: $name"
    shtest_cases_+=("<testcase name=\"$(shtest_xml_escape_ "$name")\"/>")
  else
    echo "FAIL: $name (exit $status)"
    [ -z "$out" ] || sed 's/^/    /' <<<"$out"
    shtest_failures_=$((shtest_failures_ + 1))
    shtest_cases_+=("<testcase name=\"$(shtest_xml_escape_ "$name")\"><failure message=\"exit $status\">$(shtest_xml_escape_ "$out")</failure></testcase>")
  fi
}

shtest_skip() {
  echo "SKIPPED: $1 ($2)"
  shtest_skipped_=$((shtest_skipped_ + 1))
  shtest_cases_+=("<testcase name=\"$(shtest_xml_escape_ "$1")\"><skipped message=\"$(shtest_xml_escape_ "$2")\"/></testcase>")
}

shtest_end() {
  if [ -n "${XML_OUTPUT_FILE:-}" ]; then
    {
      echo '<?xml version="1.0" encoding="UTF-8"?>'
      echo "<testsuites><testsuite name=\"${TEST_TARGET:-shtest}\" tests=\"${#shtest_cases_[@]}\" failures=\"$shtest_failures_\" skipped=\"$shtest_skipped_\">"
      printf '%s\n' "${shtest_cases_[@]}"
      echo '</testsuite></testsuites>'
    } >"$XML_OUTPUT_FILE"
  fi
  echo "${#shtest_cases_[@]} cases: $shtest_failures_ failed, $shtest_skipped_ skipped"
  [ "$shtest_failures_" -eq 0 ]
}

# Polls COMMAND until it succeeds or SECONDS pass (no sleep stands in for a synchronisation).
#   shtest_wait_for SECONDS COMMAND [ARGS...]
shtest_wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

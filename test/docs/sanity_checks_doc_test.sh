#!/usr/bin/env bash
# docs/sanity-checks.md must be what `kubeletclient sanity --list` prints, rendered by
# test/docs/sanity_checks_doc.py; and the comparison must notice a page that differs.
set -uo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
kc=kubeletclient/kubeletclient
status=0 cases=""
record() {  # name, outcome (pass or the failure text)
  if [ "$2" = pass ]; then
    cases+="<testcase name=\"$1\"/>"
  else
    status=1
    cases+="<testcase name=\"$1\"><failure message=\"$(printf '%s' "$2" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/"/\&quot;/g')\"/></testcase>"
    echo "FAIL $1: $2"
  fi
}

if out=$(python3 test/docs/sanity_checks_doc.py "$kc" --check docs/sanity-checks.md 2>&1); then
  record PageIsTheListOfChecks pass
else
  record PageIsTheListOfChecks "$out"
fi
echo "$out" | tail -1

stale=$(mktemp)
sed '$d' docs/sanity-checks.md >"$stale"   # the page without its last line
if python3 test/docs/sanity_checks_doc.py "$kc" --check "$stale" >/dev/null 2>&1; then
  record AChangedPageIsNoticed "a page without its last line was taken as current"
else
  record AChangedPageIsNoticed pass
fi
rm -f "$stale"

if [ -n "${XML_OUTPUT_FILE:-}" ]; then
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="sanity_checks_doc">%s</testsuite></testsuites>\n' "$cases" >"$XML_OUTPUT_FILE"
fi
exit $status

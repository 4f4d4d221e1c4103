#!/usr/bin/env bash
# Runs a Python test of this package with Debian's python3, from the runfiles' root; the test's
# own arguments follow (JUnit XML goes to $XML_OUTPUT_FILE).
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
test=$1
shift
exec /usr/bin/python3 "$test" "$@"

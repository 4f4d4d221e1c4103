#!/usr/bin/env bash
# Runs test/docs/quickstart_test.py (JUnit XML to $XML_OUTPUT_FILE).
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
exec /usr/bin/python3 test/docs/quickstart_test.py

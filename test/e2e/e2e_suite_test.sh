#!/usr/bin/env bash
# Runs the unit tests of real-node/e2e_suite.py (JUnit XML to $XML_OUTPUT_FILE).
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
exec /usr/bin/python3 test/e2e/real-node/e2e_suite_test.py

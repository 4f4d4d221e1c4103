#!/usr/bin/env bash
# Runs the unit tests of real-node/day2_observe.py (JUnit XML to $XML_OUTPUT_FILE).
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
exec /usr/bin/python3 test/e2e/real-node/day2_observe_test.py

#!/usr/bin/env bash
# Runs the unit tests of fleet_model.py (JUnit XML to $XML_OUTPUT_FILE).
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}" || exit 1
exec /usr/bin/python3 test/fleet/fleet_model_test.py

"""Runs a Python unittest module as a Bazel test: the usual verbose output, and each test's
outcome as JUnit XML in $XML_OUTPUT_FILE, which test/junit.py counts for the suite.

    if __name__ == "__main__":
        sys.path.insert(0, ...); import unittest_junit; unittest_junit.main("suite name")
"""
import os
import sys
import unittest
from xml.sax.saxutils import quoteattr


class _Result(unittest.TextTestResult):
    outcomes = []  # (test id, failure text or None, skipped)

    def addSuccess(self, test):
        super().addSuccess(test)
        _Result.outcomes.append((test.id(), None, False))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        _Result.outcomes.append((test.id(), self._exc_info_to_string(err, test), False))

    def addError(self, test, err):
        super().addError(test, err)
        _Result.outcomes.append((test.id(), self._exc_info_to_string(err, test), False))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        _Result.outcomes.append((test.id(), reason, True))


def main(suite):
    result = unittest.main(testRunner=unittest.TextTestRunner(resultclass=_Result, verbosity=2),
                           exit=False).result
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        outcomes = _Result.outcomes
        failures = sum(1 for _, text, skipped in outcomes if text and not skipped)
        skipped = sum(1 for _, _, s in outcomes if s)
        with open(xml, "w", encoding="utf-8") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            f.write(f'<testsuites tests="{len(outcomes)}" failures="{failures}" '
                    f'skipped="{skipped}" disabled="0" errors="0">\n')
            f.write(f'<testsuite name={quoteattr(suite)} tests="{len(outcomes)}" '
                    f'failures="{failures}" skipped="{skipped}">\n')
            for name, text, was_skipped in outcomes:
                if was_skipped:
                    f.write(f"<testcase name={quoteattr(name)}><skipped message="
                            f"{quoteattr(text)}/></testcase>\n")
                elif text:
                    f.write(f"<testcase name={quoteattr(name)}><failure message="
                            f"{quoteattr(text)}/></testcase>\n")
                else:
                    f.write(f"<testcase name={quoteattr(name)}/>\n")
            f.write("</testsuite></testsuites>\n")
    sys.exit(0 if result.wasSuccessful() else 1)

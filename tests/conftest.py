"""Test-run summary: one line per reason tests were skipped, with how many (issue 30).

pytest's own ``-rs`` lists a line per test location; a run with ``../shared`` present but the
grammar extra absent would print hundreds. Skips are grouped here by their reason instead, so a
contributor sees at once why and how to run them (each reason names the file or extra it needs).
"""

from __future__ import annotations

import collections


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's signature
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons = collections.Counter(_reason(report) for report in skipped)
    terminalreporter.section("skipped, by reason", sep="-")
    for reason, count in reasons.most_common():
        terminalreporter.line(f"{count:>5} skipped: {reason}")

"""The text report a person reads: the tier abbreviations explained once, one word per status (the JSON report's),
columns that line up whatever the statuses, the rerun line only where it helps."""

from __future__ import annotations

import re
import sys

import pytest

from acp_conformance.runner.report import table
from acp_conformance.runner.run import RunOptions, run

BROKEN = [sys.executable, "-m", "acp_conformance.agent", "--broken", "junk-stdout"]  # fails framing only
ROW = re.compile(r"^  (PASS|WARN|FAIL|SKIPPED|NOT_TESTED) +([a-z0-9-]+) +\d+\.\d\ds  (MAND|CAPA|ADVI|INFO)  ")


@pytest.mark.anyio
async def test_statuses_tiers_and_columns_read_the_same_everywhere() -> None:
    only = ["framing", "initialize", "auth-methods", "session-new", "cancel-request-ignored"]
    report = await run(RunOptions(BROKEN, only=only, wait=3.0, jobs=2))
    text = table(report, ["acp-conformance", "--agent", " ".join(BROKEN)])
    # The tiers are spelled out once, at the top; the rows use their first four letters.
    assert text.count("MAND = MANDATORY") == 1 and text.index("MAND = MANDATORY") < text.index("\nTransport\n")
    for name in ("CAPA = CAPABILITY", "ADVI = ADVISORY", "INFO = INFORMATIONAL"):
        assert text.count(name) == 1, name
    # SKIPPED, as in the JSON report: neither N/A nor "not applicable".
    assert "N/A" not in text and "not applicable" not in text
    rows = [line for line in text.splitlines() if ROW.match(line)]
    words = {m[2]: m[1] for m in map(ROW.match, rows) if m}
    assert words == {
        "framing": "FAIL",
        "initialize": "PASS",
        "auth-methods": "SKIPPED",
        "session-new": "PASS",
        "cancel-request-ignored": "PASS",
    }
    # Aligned: every row's id, time and tier start in the same column.
    matches = [m for m in map(ROW.match, rows) if m]
    assert len({m.start(2) for m in matches}) == 1, rows
    assert len({m.start(3) for m in matches}) == 1, rows
    assert len({row.index("s  ", m.end(2)) for row, m in zip(rows, matches, strict=True)}) == 1, rows
    assert "3 passed (0 with warnings), 1 failed, 1 skipped;" in text
    # A rerun line for the failure only.
    assert text.count("rerun: ") == 1 and "--check framing" in text


@pytest.mark.anyio
async def test_a_run_of_one_failing_check_prints_no_rerun_of_itself() -> None:
    report = await run(RunOptions(BROKEN, only=["framing"], wait=3.0))
    text = table(report, ["acp-conformance", "--agent", " ".join(BROKEN), "--check", "framing"])
    assert re.search(r"^  FAIL +framing ", text, re.MULTILINE) and "rerun:" not in text
    assert re.search(r"; \d+\.\d s, 1 agent process$", text, re.MULTILINE), text

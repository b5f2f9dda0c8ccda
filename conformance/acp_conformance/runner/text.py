"""The text report's shared parts (agent and client mode): the tier legend, the status words, the counts line and
the verdict with its coverage, tier counts and baseline. One word per status, the JSON report's: PASS, WARN (a
PASS with a warning), FAIL, SKIPPED, NOT_TESTED."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from .verdict import PARTIAL, Verdict

__all__ = ["NOT_CHECKED_ROW", "WIDTH", "counts_line", "status_word", "tier_legend", "verdict_lines", "wrapped"]

WIDTH = 118  # the text report's lines are wrapped here
NOT_CHECKED_ROW = "not run (see NOT CHECKED above)"  # a row's message when the whole run could not check


def tier_legend(subject: str = "agent") -> list[str]:
    """The tier abbreviations the rows use, spelled out once (``subject``: who must, an agent or a client)."""
    return wrapped(
        f"tiers: MAND = MANDATORY (every {subject} must; decides the verdict), CAPA = CAPABILITY (a must once the "
        "feature is offered; decides), ADVI = ADVISORY (a should; never decides), INFO = INFORMATIONAL (recorded "
        "only)",
        "",
        "       ",
    )


def wrapped(text: str, indent: str, more: str = "  ") -> list[str]:
    """``text`` wrapped at ``WIDTH`` under ``indent`` (continuation lines indented by ``more`` again)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=" " * len(indent) + more,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [indent.rstrip()]


def status_word(status: str, warned: bool = False) -> str:
    """The word a row shows: the verdict's status, WARN for a PASS that carries a warning."""
    return "WARN" if status == "PASS" and warned else status


def counts_line(words: Sequence[str]) -> str:
    """``3 passed (1 with warnings), 1 failed, 2 skipped`` (and ``1 not tested`` when any), from the row words."""
    passed = sum(w in ("PASS", "WARN") for w in words)
    parts = [f"{passed} passed ({sum(w == 'WARN' for w in words)} with warnings)"]
    parts += [f"{sum(w == 'FAIL' for w in words)} failed", f"{sum(w == 'SKIPPED' for w in words)} skipped"]
    untested = sum(w == "NOT_TESTED" for w in words)
    if untested:
        parts.append(f"{untested} not tested")
    return ", ".join(parts)


def verdict_lines(verdict: Verdict, unit: str = "checks run") -> list[str]:
    """The verdict (with what the run covered when it was a subset), the counts per tier, and what the baseline
    made of the failures. ``unit``: what a subset counts ("checks run"; client mode's "runs played")."""
    coverage = verdict.coverage
    head = f"VERDICT: {verdict.verdict.upper()}"
    if coverage.partial:
        covered = f"{coverage.run} of {coverage.total} {unit}"
        if verdict.verdict == PARTIAL:
            head = f"VERDICT: PARTIAL: {covered}" + (f" ({coverage.selection})" if coverage.selection else "")
        else:
            head = f"{head} ({covered}" + (f": {coverage.selection})" if coverage.selection else ")")
    lines = [head]
    if coverage.partial:
        lines += wrapped(f"not run ({len(coverage.not_run)}): {', '.join(coverage.not_run)}", "  ")
    if verdict.deciding:
        lines += wrapped(f"deciding: {', '.join(verdict.deciding)}", "  ")
    width = max(len(tier) for tier in verdict.tier_counts)
    for tier, counts in verdict.tier_counts.items():
        if any(counts.values()):
            text = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
            lines.append(f"  {tier:<{width}}  {text}")
    outcome = verdict.baseline
    for label, ids in (
        ("known failures (baseline)", outcome.known),
        ("NEW failures (not in the baseline)", outcome.new),
        ("STALE baseline entries (now passing; remove them)", outcome.stale),
        ("baseline entries not run", outcome.unused),
    ):
        if ids:
            lines.append(f"  {label}: {', '.join(ids)}")
    return lines

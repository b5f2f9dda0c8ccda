"""The run's verdict in the official test kit's terms, from the check results, their tiers and a baseline.

Each check gets a status: PASS (warnings included), FAIL, SKIPPED (not applicable: the agent does not offer
what it needs, no scenario triggers it) or NOT_TESTED (it could not run: the agent did not start, refused a
session, or wanted a login). ``conformant`` means no MANDATORY failure or NOT_TESTED and no CAPABILITY
failure (failures the baseline expects excepted), the agent could be checked at all, neither a missing login
nor a version the agent does not share blocked the run, and the run covered the whole check set. A run of a
subset (``--check``, ``--area``, ``--tier``) that finds nothing deciding is ``partial``: what ran passes, the
rest was not looked at, so the run says nothing about conformance. ADVISORY and INFORMATIONAL results never
decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .baseline import Baseline, BaselineOutcome, apply_baseline
from .run import CheckResult, RunReport
from .tiers import Tier, classify

__all__ = ["CONFORMANT", "PARTIAL", "STATUSES", "Coverage", "Tally", "Verdict", "check_status", "judge", "tally"]

CONFORMANT = "conformant"
PARTIAL = "partial"
STATUSES = ("PASS", "FAIL", "SKIPPED", "NOT_TESTED")


def check_status(result: CheckResult, report: RunReport) -> str:
    if result.status in ("pass", "warn"):
        return "PASS"
    if result.status == "fail":
        return "FAIL"
    if result.blocked is not None or report.problem is not None:
        return "NOT_TESTED"
    return "SKIPPED"


@dataclass(frozen=True)
class Coverage:
    """How much of the check set (or of client mode's runs) a run covered."""

    run: int  # the checks (runs) it covered
    not_run: tuple[str, ...] = ()  # what the selection left out
    selection: str = ""  # the options that chose the subset, as typed

    @property
    def total(self) -> int:
        return self.run + len(self.not_run)

    @property
    def partial(self) -> bool:
        return bool(self.not_run)


@dataclass
class Verdict:
    verdict: str  # conformant, partial, non_conformant, blocked_by_auth, blocked_by_version_mismatch
    blocked_by_auth: bool
    blocked_by_version_mismatch: bool
    tier_counts: dict[str, dict[str, int]]
    statuses: dict[str, str]  # check id -> status
    deciding: list[str]  # the checks that make the run non-conformant (baselined failures excepted)
    baseline: BaselineOutcome = field(default_factory=BaselineOutcome)
    coverage: Coverage = Coverage(0)

    @property
    def conformant(self) -> bool:
        return self.verdict == CONFORMANT

    @property
    def conformant_json(self) -> bool | None:
        """``conformant`` as the JSON report gives it: null for a partial run (not judged either way)."""
        return None if self.verdict == PARTIAL else self.conformant


@dataclass
class Tally:
    """What the tiers make of a set of statuses: the deciding failures and untested checks, counts per tier."""

    statuses: dict[str, str]
    failed: list[str]  # MANDATORY or CAPABILITY failures the baseline does not expect
    untested: list[str]  # MANDATORY checks that could not run (and are not baselined)
    counts: dict[str, dict[str, int]]
    baseline: BaselineOutcome


def tally(entries: Sequence[tuple[str, Tier, str]], baseline: Baseline | None = None) -> Tally:
    """``entries``: (check id, tier, status) with status one of ``STATUSES`` (agent and client mode alike)."""
    statuses = {check_id: status for check_id, _, status in entries}
    counts = {tier.value: dict.fromkeys(STATUSES, 0) for tier in Tier}
    outcome = apply_baseline(baseline, statuses)
    failed: list[str] = []
    untested: list[str] = []
    for check_id, tier, status in entries:
        counts[tier.value][status] += 1
        if check_id in outcome.known:
            continue
        if status == "FAIL" and tier in (Tier.MANDATORY, Tier.CAPABILITY):
            failed.append(check_id)
        elif status == "NOT_TESTED" and tier is Tier.MANDATORY:
            untested.append(check_id)
    return Tally(statuses, failed, untested, counts, outcome)


def judge(report: RunReport, baseline: Baseline | None = None) -> Verdict:
    version = report.check_set
    entries = [(r.id, classify(version, r.id).tier, check_status(r, report)) for r in report.results]
    result = tally(entries, baseline)
    failed, untested = result.failed, result.untested
    mismatch = report.version_mismatch
    auth = report.login is not None
    if failed:
        name = "non_conformant"
    elif mismatch:
        name = "blocked_by_version_mismatch"
    elif auth:
        name = "blocked_by_auth"
    elif untested or report.problem is not None:  # an agent that could not be checked is never conformant,
        name = "non_conformant"  # even when --check chose no MANDATORY row
    elif report.not_selected:
        name = PARTIAL
    else:
        name = CONFORMANT
    coverage = Coverage(len(report.results), tuple(report.not_selected), report.selection)
    return Verdict(name, auth, mismatch, result.counts, result.statuses, failed + untested, result.baseline, coverage)

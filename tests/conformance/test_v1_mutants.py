"""Mutation coverage of the v1 check set: every broken v1 mode of the reference agent (``--broken v1-...``, plus
``junk-stdout`` and the modes of the checks beyond the kit) turns the official kit id it breaks FAIL, fails
exactly the checks v1_mutants.py names (each message starting with its rule), and moves nothing else, neither a
check nor a kit id.

Cheap by construction: the runner runs in process and modes whose checks do not overlap share one run (a
mode's defect is confined to what it changes, so a run with several fails the union of their checks and
nothing more); the runs alternate between the asyncio and trio backends.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_conformance.agent.v1_mutants import V1_BROKEN_MODES
from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import KIT, kit_rows
from acp_conformance.runner.report import requirement_statuses
from acp_conformance.runner.run import RunOptions, RunReport, run
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, load_scenarios
from acp_conformance.runner.tiers import CLASSIFICATIONS
from acp_conformance.runner.verdict import judge

from .doc_tables import documented
from .packing import first_fit
from .v1_mutants import BEYOND_KIT_MODES, MUTANTS, UNREACHABLE, Mutant, mutation_table

AGENT = [sys.executable, "-m", "acp_conformance.agent", "--protocol-versions", "1"]
DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
_WORST = ("FAIL", "PASS", "NOT_TESTED", "SKIPPED")


def _groups() -> list[list[Mutant]]:
    """The modes packed into runs: a mode joins the first run whose modes touch none of its checks."""

    def joins(group: list[Mutant], mutant: Mutant) -> bool:
        touched = set(mutant.fails) | set(mutant.moves)
        shared = any(
            touched & (set(other.fails) | set(other.moves))
            or other.alone
            or other.auth != mutant.auth
            or (mutant.hook and other.hook == mutant.hook)
            for other in group
        )
        return not mutant.alone and not shared

    return first_fit(MUTANTS, joins)


GROUPS = _groups()


def _expected(group: list[Mutant]) -> dict[str, str]:
    """Each check's result under the group's modes: the reference agent's documented v1 results, changed as the
    modes say (``blocked``: not run for lack of a login)."""
    statuses = dict(documented("### Results: protocol v1 agents", "reference agent"))
    for mutant in group:
        if mutant.login_blocks:
            statuses.update({c.id: "blocked" for c in CHECK_SETS[1] if c.needs_session})
        statuses.update(mutant.moves)
        statuses.update(dict.fromkeys(mutant.fails, "fail"))
    return statuses


def _kit_view(statuses: dict[str, str]) -> dict[str, str]:
    """The kit ids' statuses those check results make: the worst of each id's checks (no check: NOT_TESTED)."""
    as_kit = {"pass": "PASS", "warn": "PASS", "fail": "FAIL", "n/a": "SKIPPED", "blocked": "NOT_TESTED"}
    out = {}
    for row in kit_rows(1):
        found = [as_kit[statuses[c]] for c in row.checks]
        out[row.id] = min(found, key=_WORST.index) if found else "NOT_TESTED"
    return out


def _run(group: list[Mutant], backend: str) -> RunReport:
    argv = AGENT + [arg for mutant in group for arg in ("--broken", mutant.mode, *mutant.args)]
    options = RunOptions(argv, offer=1, wait=2.0, scenarios=load_scenarios(REFERENCE_SCENARIOS), auth=group[0].auth)
    return anyio.run(run, options, backend=backend)


@pytest.mark.parametrize("index", range(len(GROUPS)), ids=[f"{g[0].mode}+{len(g) - 1}" for g in GROUPS])
def test_each_broken_v1_mode_fails_its_kit_id_and_moves_nothing_else(index: int) -> None:
    group = GROUPS[index]
    report = _run(group, ("asyncio", "trio")[index % 2])
    assert report.version == 1, report.problem
    results = {r.id: r for r in report.results}
    got = {r.id: "blocked" if r.blocked == "login" else r.status for r in report.results}
    expected = _expected(group)
    assert got == expected, {
        k: (expected.get(k), v, results[k].message[:160]) for k, v in got.items() if v != expected.get(k)
    }
    for mutant in group:
        for check_id, rule in mutant.fails.items():
            assert results[check_id].message.startswith(f"{rule}:"), (mutant.mode, check_id, results[check_id].message)
    kit = {kit_id: entry["status"] for kit_id, entry in requirement_statuses(report, judge(report)).items()}
    assert kit == _kit_view(expected)
    for mutant in group:
        assert all(kit[kit_id] == "FAIL" for kit_id in mutant.kit), (mutant.mode, {k: kit[k] for k in mutant.kit})


def test_the_table_covers_every_mode_kit_id_and_check() -> None:
    """Every v1 mode is in the table; every v1 kit id and every v1 check is failed by a mode, or says why none can;
    a mode's kit ids are those of the checks it fails."""
    modes = [m.mode for m in MUTANTS]
    assert len(modes) == len(set(modes))
    assert set(modes) == set(V1_BROKEN_MODES) | set(BEYOND_KIT_MODES)
    failed_ids = {kit_id for m in MUTANTS for kit_id in m.kit}
    assert set(KIT[1]) == failed_ids | (set(UNREACHABLE) & set(KIT[1])), set(KIT[1]) - failed_ids
    assert not failed_ids & set(UNREACHABLE)
    failed_checks = {c for m in MUTANTS for c in m.fails}
    records = {
        c.id
        for c in CHECK_SETS[1]
        if CLASSIFICATIONS[1][c.id].requirements
        and all(r in UNREACHABLE for r in CLASSIFICATIONS[1][c.id].requirements)
    }
    assert {c.id for c in CHECK_SETS[1]} == failed_checks | records | (set(UNREACHABLE) - set(KIT[1]))
    for mutant in MUTANTS:
        mapped = {r for c in mutant.fails for r in CLASSIFICATIONS[1][c].requirements}
        assert set(mutant.kit) <= mapped, mutant.mode


def test_docs_carry_the_v1_mutation_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- mutants-v1 -->\n") + len("<!-- mutants-v1 -->\n")
    end = text.index("\n<!-- /mutants-v1 -->")
    assert text[start:end] == mutation_table(), "regenerate: python -m tests.conformance.v1_mutants"

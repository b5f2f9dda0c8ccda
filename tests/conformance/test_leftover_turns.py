"""A check's leftover turn does not land in the next check: an agent that ignores ``session/cancel`` keeps the
cancelled turn streaming after the cancel check ends (``n/a``: nothing to judge), and the next check on the same
process (``update-schema``: every update of its turn names its session) would see that turn's updates. The runner
gives the next check a fresh process instead (once flaky in ``test_mutants_v2_runs_1.py`` under load, where the
reference scenario's 4 s turn outlived the cancel check's 3 s wait; here the turn streams for 10 s)."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from acp_conformance.runner.run import RunOptions, run
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, Scenarios, load_scenarios

IGNORES_CANCEL = [sys.executable, "-m", "acp_conformance.agent", "--broken", "ignore-cancel"]


def _long_turn_of(seconds: int) -> Scenarios:
    reference = load_scenarios(REFERENCE_SCENARIOS)
    entries = dict(reference.entries)
    entries["long_turn"] = dataclasses.replace(entries["long_turn"], prompt=f"/slow {seconds * 10}")
    return Scenarios(reference.source, entries)


@pytest.mark.anyio
async def test_a_turn_the_agent_would_not_cancel_does_not_reach_the_next_check() -> None:
    # One worker: the cancel check (it needs a scenario, so it runs first) and update-schema would share a process.
    only = ["cancel-nothing-after", "update-schema"]
    report = await run(RunOptions(IGNORES_CANCEL, wait=3.0, jobs=1, only=only, scenarios=_long_turn_of(10)))
    statuses = {r.id: (r.status, r.message) for r in report.results}
    assert statuses["cancel-nothing-after"][0] == "n/a", statuses  # the turn never ended: nothing to judge
    assert statuses["update-schema"][0] == "pass", statuses
    assert report.processes == 2  # the still-streaming turn's process was left behind
    # An agent that cancels: its turn ends at once, the process goes on serving (nothing is replaced for nothing).
    healthy = await run(RunOptions(IGNORES_CANCEL[:-2], wait=3.0, jobs=1, only=only, scenarios=_long_turn_of(10)))
    assert {r.id: r.status for r in healthy.results} == {"cancel-nothing-after": "pass", "update-schema": "pass"}
    assert healthy.processes == 1

"""Running the v2 mutation table (``mutants_v2.MUTANTS``): each broken variant of the reference agent through the
whole v2 check set, held to its row against the healthy agent's run.

Each mode is one whole run of the runner, in process, against real agent processes over real pipes. The agents are
forked from a warm parent (``agent_zygote.py``, the ``zygote`` fixture of conftest.py; the runner starts
``agent_launcher.py``, which hands its pipes to the fork), so ~110 runs do not each pay ~8 interpreter start-ups,
and the runs go several at a time. The table is run in ``PARTS`` test modules (``test_mutants_v2_runs_*.py``), so
parallel workers share it; within a part the modes are split between the two backends (the even ones on asyncio,
the odd ones on trio), so the runner's waits, timeouts and process handling are exercised on both without running
everything twice.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import anyio

from acp_conformance.runner.report import requirement_statuses
from acp_conformance.runner.run import RunOptions, RunReport, run
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, Scenarios, load_scenarios
from acp_conformance.runner.verdict import check_status, judge

from .mutants_v2 import MUTANTS, Mutant

__all__ = ["PARTS", "check_part"]

HERE = Path(__file__).resolve().parent
PARTS = 3  # test modules the table is run in
WAIT = 3.0  # seconds for one answer: a broken variant's silence costs this, a healthy agent answers in ms
SCENARIO_TIMEOUT = 3.0
AT_ONCE = 4  # runs at a time: they mostly wait, on their agents and on the broken variants' silences
# Agent processes of one run: one, except for the modes that silence a whole kind of answer and so move many ids
# (never-idle, ignore-cancel, no-idle-after-turn, no-message-id), which wait out one check after another: never-idle
# takes 73 s with one process, 19 s with four. More processes for every run cost more CPU than they save.
JOBS, SLOW_JOBS, SLOW = 1, 4, 8  # SLOW: ids and checks a mode moves from which it gets SLOW_JOBS
RULE = re.compile(r"^(ACP2-\d{3}|schema:[A-Za-z()\-0-9.]+|[a-z-]+\.mdx(#[a-z0-9-]+)?): ")


def _scenarios() -> Scenarios:
    reference = load_scenarios(REFERENCE_SCENARIOS)
    return Scenarios(
        reference.source,
        {name: dataclasses.replace(s, timeout=SCENARIO_TIMEOUT) for name, s in reference.entries.items()},
    )


def _statuses(report: RunReport) -> dict[str, str]:
    """Every check's status and every kit id's, as the JSON report gives them."""
    verdict = judge(report)
    out = {r.id: check_status(r, report) for r in report.results}
    out.update({k: v["status"] for k, v in requirement_statuses(report, verdict).items()})
    return out


def _moves(mode: str) -> int:
    mutant = MUTANTS[mode]
    return len(mutant.fails + mutant.skips)


async def _run(socket: str, args: list[str], scenarios: Scenarios, jobs: int = JOBS) -> RunReport:
    argv = [sys.executable, "-I", "-S", str(HERE / "agent_launcher.py"), socket, *args]
    return await run(RunOptions(argv, wait=WAIT, jobs=jobs, scenarios=scenarios))


def _moved(mode: str, mutant: Mutant, baseline: dict[str, str], report: RunReport) -> list[str]:
    """What is wrong about ``mode``'s run: its targets not FAIL, anything else moved, a failure citing no rule."""
    got = _statuses(report)
    wrong = [f"{mode}: {target} is {got.get(target)}, not FAIL" for target in mutant.fails if got.get(target) != "FAIL"]
    for key, status in got.items():
        if key in mutant.fails or status == baseline.get(key):
            continue
        if key in mutant.skips and status == "SKIPPED":
            continue
        if mutant.blocks is not None and status == "NOT_TESTED":
            continue
        wrong.append(f"{mode}: {key} moved {baseline.get(key)} -> {status}")
    for result in report.results:
        if result.status == "fail" and not RULE.match(result.message):
            wrong.append(f"{mode}: {result.id} fails without naming its rule: {result.message!r}")
    return wrong


async def check_part(zygote: str, part: int, anyio_backend: str) -> None:
    """Run part ``part`` (0 to ``PARTS - 1``) of the table's modes, this backend's half of them, and the healthy
    agent (plain and ``--all-capabilities``) beside them; fail naming every mode whose run is not its row."""
    modes = sorted(MUTANTS)[part::PARTS][0 if anyio_backend == "asyncio" else 1 :: 2]
    scenarios = _scenarios()
    reports: dict[str, RunReport] = {}
    limit = anyio.CapacityLimiter(AT_ONCE)
    wide = any(MUTANTS[mode].wide for mode in modes)

    async def one(key: str, args: list[str], jobs: int = JOBS) -> None:
        async with limit:
            reports[key] = await _run(zygote, args, scenarios, jobs)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "", [])
        if wide:
            tg.start_soon(one, "--all-capabilities", ["--all-capabilities"])
        # The modes that move the most first: they wait out the most silences, so they should not start last.
        for mode in sorted(modes, key=lambda m: -_moves(m)):
            base = ["--all-capabilities"] if MUTANTS[mode].wide else []
            tg.start_soon(one, mode, [*base, "--broken", mode], SLOW_JOBS if _moves(mode) >= SLOW else JOBS)
    baselines = {key: _statuses(reports[key]) for key in ("", "--all-capabilities") if key in reports}
    for key, statuses in baselines.items():  # the healthy agent fails nothing, so every FAIL below is the mode's
        assert "FAIL" not in statuses.values(), (key, {k: v for k, v in statuses.items() if v == "FAIL"})
    wrong: list[str] = []
    for mode in modes:
        mutant = MUTANTS[mode]
        wrong += _moved(mode, mutant, baselines["--all-capabilities" if mutant.wide else ""], reports[mode])
    assert not wrong, "\n".join(wrong)

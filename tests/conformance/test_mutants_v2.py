"""Mutation coverage of the v2 check set: every broken variant of the reference agent (``mutants_v2.MUTANTS``) turns
exactly its kit ids and checks FAIL, and nothing else moves against the healthy agent's run.

Each mode is one whole run of the runner, in process, against real agent processes over real pipes. The agents are
forked from a warm parent (``agent_zygote.py``; the runner starts ``agent_launcher.py``, which hands its pipes to
the fork), so ~100 runs do not each pay ~8 interpreter start-ups, and the runs go several at a time. The modes are
split between the two backends: the even ones run on asyncio, the odd ones on trio, so the runner's waits,
timeouts and process handling are exercised on both without running everything twice.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_conformance.agent.server import BROKEN_MODES
from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import kit_rows
from acp_conformance.runner.report import requirement_statuses
from acp_conformance.runner.run import RunOptions, RunReport, run
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, Scenarios, load_scenarios
from acp_conformance.runner.verdict import check_status, judge

from .mutants_v2 import MUTANTS, Mutant, mutation_table

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "conformance.md"
WAIT = 3.0  # seconds for one answer: a broken variant's silence costs this, a healthy agent answers in ms
SCENARIO_TIMEOUT = 3.0
AT_ONCE = 8  # runs at a time: they mostly wait, on their agents and on the broken variants' silences
RULE = re.compile(r"^(ACP2-\d{3}|schema:[A-Za-z()\-0-9.]+|[a-z-]+\.mdx(#[a-z0-9-]+)?): ")


@pytest.fixture(scope="module")
def zygote() -> Iterator[str]:
    """A warm parent forking reference agents (``agent_zygote.py``): the socket to reach it at."""
    folder = tempfile.mkdtemp(prefix="acp-zygote-")
    socket = os.path.join(folder, "zygote.sock")
    process = subprocess.Popen(
        [sys.executable, str(HERE / "agent_zygote.py"), socket], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield socket
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        os.unlink(socket)
        os.rmdir(folder)


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


async def _run(socket: str, args: list[str], scenarios: Scenarios) -> RunReport:
    argv = [sys.executable, "-I", "-S", str(HERE / "agent_launcher.py"), socket, *args]
    return await run(RunOptions(argv, wait=WAIT, jobs=1, scenarios=scenarios))


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


@pytest.mark.anyio
async def test_each_broken_variant_fails_exactly_its_ids(zygote: str, anyio_backend: str) -> None:
    modes = sorted(MUTANTS)[0 if anyio_backend == "asyncio" else 1 :: 2]
    scenarios = _scenarios()
    reports: dict[str, RunReport] = {}
    limit = anyio.CapacityLimiter(AT_ONCE)

    async def one(key: str, args: list[str]) -> None:
        async with limit:
            reports[key] = await _run(zygote, args, scenarios)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "", [])
        tg.start_soon(one, "--all-capabilities", ["--all-capabilities"])
        for mode in modes:
            base = ["--all-capabilities"] if MUTANTS[mode].wide else []
            tg.start_soon(one, mode, [*base, "--broken", mode])
    baselines = {key: _statuses(reports[key]) for key in ("", "--all-capabilities")}
    for key, statuses in baselines.items():  # the healthy agent fails nothing, so every FAIL below is the mode's
        assert "FAIL" not in statuses.values(), (key, {k: v for k, v in statuses.items() if v == "FAIL"})
    wrong: list[str] = []
    for mode in modes:
        mutant = MUTANTS[mode]
        wrong += _moved(mode, mutant, baselines["--all-capabilities" if mutant.wide else ""], reports[mode])
    assert not wrong, "\n".join(wrong)


def test_every_v2_mode_check_and_mapped_kit_id_has_its_mutant() -> None:
    """Every v2 broken mode has a row; every v2 check and every kit id a v2 check judges is failed by one."""
    assert set(MUTANTS) == set(BROKEN_MODES)
    failed = {target for mutant in MUTANTS.values() for target in mutant.fails}
    assert sorted({c.id for c in CHECK_SETS[2]} - failed) == []
    mapped = {row.id for row in kit_rows(2) if row.checks}
    assert sorted(mapped - failed) == []
    known = {c.id for c in CHECK_SETS[2]} | {row.id for row in kit_rows(2)}
    named = {t for m in MUTANTS.values() for t in (*m.fails, *m.skips)}
    assert sorted(named - known) == []


def test_the_mutation_table_in_the_docs_is_current() -> None:
    doc = DOC.read_text(encoding="utf-8")
    start = doc.index("<!-- mutants-v2 -->\n") + len("<!-- mutants-v2 -->\n")
    end = doc.index("\n<!-- /mutants-v2 -->")
    assert doc[start:end] == mutation_table(), "regenerate: python -m tests.conformance.mutants_v2"

"""The whole-turn driver (dev/real_agents/turns.py) end to end, against a small agent that asks the scripted model.

A real agent process (tests/real_agents/model_agent.py, v1 over stdio) pointed at the harness's scripted model
with the same wiring as claude-agent-acp, driven through the public API: every turn check must pass, and a
broken agent must fail its rows rather than the run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dev.real_agents.check import Target
from dev.real_agents.turns import TURN_CHECKS, run_turns

MODEL_AGENT = Path(__file__).resolve().parent / "model_agent.py"
ENVIRON = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent-caller-home", "LANG": "C.UTF-8"}


@pytest.mark.anyio
async def test_every_turn_check_passes_against_an_agent_asking_the_scripted_model() -> None:
    target = Target("model-agent", [sys.executable, str(MODEL_AGENT)])
    report = await run_turns(target, "anthropic", limit=20, environ=ENVIRON)
    assert report.protocol == 1 and report.checks == TURN_CHECKS
    assert {name: report.cell(name).status for name in TURN_CHECKS} == dict.fromkeys(TURN_CHECKS, "pass"), report.cells
    assert report.cell("edit approved").text.startswith("answered allow_once 'yes'; file written")
    assert "ChatFile allow.txt" in report.cell("edit approved").text
    assert report.cell("edit rejected").text.startswith("answered reject_once 'no'; file not written")
    assert "output seen" in report.cell("shell").text
    assert report.cell("cancel").text.startswith("stop reason cancelled")
    assert "model stream closed by the agent" in report.cell("cancel").text  # it stopped reading: the server saw it
    assert report.cell("resume").text.startswith("new process:")
    assert not any("acp-turns-model-agent-cwd" in cell.text for cell in report.cells.values())  # shown as $CWD
    assert any(line.startswith("anthropic /v1/messages x") for line in report.requests)
    assert "no mode option: the agent's permission questions as they come" in report.notes


@pytest.mark.anyio
async def test_an_agent_that_cannot_start_fails_every_row() -> None:
    target = Target("missing", ["/nonexistent/agent-binary"])
    report = await run_turns(target, "anthropic", limit=5, environ=ENVIRON)
    assert [report.cell(name).status for name in TURN_CHECKS] == ["fail"] * len(TURN_CHECKS)
    assert "FileNotFoundError" in report.cell("text").text

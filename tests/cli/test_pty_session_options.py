"""``/mode``, ``/model`` and ``/set`` in the interactive chat, through a real pseudo-terminal (issue 38): shown,
switched, completed from the values the agent advertises (the reference agent: mode ask|code|review, thoughts
true|false; a v1 agent's modes and models), and a value it does not offer is refused with the list."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.cli.support import PROMPT
from tests.cli.test_pty import finish, spawn
from tests.protocol.support import v1_argv

pexpect = pytest.importorskip("pexpect")


def ready(state: Path, *args: str) -> pexpect.spawn:
    child = spawn(state, "chat", *args)
    child.expect("/exit or Ctrl-D leaves")
    child.expect_exact(PROMPT)
    return child


def test_mode_and_set_switch_the_session_and_the_agent_answers_accordingly(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.sendline("/mode")
    child.expect(r"mode \(Mode\): ask \*code review")  # the current value marked
    child.expect_exact(PROMPT)
    child.sendline("/mode review")
    child.expect("Mode: review")
    child.expect_exact(PROMPT)
    child.sendline("is this fine")
    child.expect(r"Review of your message \(12 characters\)")
    child.expect_exact(PROMPT)
    child.sendline("/set thoughts true")
    child.expect("Show thoughts: true")
    child.expect_exact(PROMPT)
    child.sendline("/set mode=ask")
    child.expect("Mode: ask")
    child.expect_exact(PROMPT)
    child.sendline("what now")
    child.expect(r"replying in ask mode")  # the thought the thoughts option turned on
    child.expect("You asked: what now")
    child.expect_exact(PROMPT)
    child.sendline("/mode fast")
    child.expect(r"/mode fast: mode has no value 'fast'; choose one of: ask, code, review")
    child.expect_exact(PROMPT)
    child.sendline("/model")
    child.expect("the agent offers no model option")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0


def test_tab_completes_option_values_and_keys(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.send("/mo")
    child.expect("show or switch the session's mode")  # the chat's own command, in the menu
    child.send("de re")
    child.expect("Review")  # the value's name in the menu, from the agent's select option
    child.send("\t\r")
    child.expect("Mode: review")
    child.expect_exact(PROMPT)
    child.send("/set th")
    child.expect("Show thoughts")
    child.send("\t")
    child.expect("oughts")  # the key completed on the line
    child.send(" tr")
    child.expect(" true ")  # the boolean's values in the menu
    child.send("\t\r")
    child.expect("Show thoughts: true")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0


def test_a_v1_agents_modes_and_models_switch_with_set_mode_and_set_model(tmp_path: Path) -> None:
    """The library maps a v1 agent's modes and models to options: /model sends session/set_model."""
    log = tmp_path / "agent.log"
    modes = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
    models = {
        "currentModelId": "small",
        "availableModels": [{"modelId": "small", "name": "S"}, {"modelId": "big", "name": "B"}],
    }
    agent = shlex.join(v1_argv(log, new={"modes": modes, "models": models}))
    child = ready(tmp_path, "--agent", agent)
    child.send("/model b")
    child.expect("big")
    child.send("\t\r")
    child.expect(r"\r\n.*: big")
    child.expect_exact(PROMPT)
    child.sendline("/mode code")
    child.expect(": code")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0
    calls = [json.loads(line) for line in log.read_text().splitlines() if '"session/set_' in line]
    assert [(c["method"], c["params"]) for c in calls] == [
        ("session/set_model", {"sessionId": "s1", "modelId": "big"}),
        ("session/set_mode", {"sessionId": "s1", "modeId": "code"}),
    ]

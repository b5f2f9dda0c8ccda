"""The CLI while an agent starts: ``--init-timeout``, a one-line error for an agent that never answers
``initialize``, and a "starting <agent>… N s" line on a terminal meanwhile."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.cli.support import CLI, run_cli

from .support import AGENTS

pytestmark = pytest.mark.skipif(shutil.which("sleep") is None, reason="needs sleep")


def test_an_agent_that_never_answers_ends_in_one_line(tmp_path: Path) -> None:
    start = time.monotonic()
    done = run_cli(tmp_path, "chat", "--agent", "sleep 600", "--init-timeout", "1", "hi")
    assert time.monotonic() - start < 10
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "acp-session: the agent `sleep 600` did not answer initialize within 1 s"
        " (--init-timeout SECONDS to wait longer)\n"
    )


def test_a_banner_then_silence_is_reported_once_then_times_out(tmp_path: Path) -> None:
    config = {"stdout": ["Welcome to Slow Agent", "more banner"], "stderr": ["need a login"], "initialize": False}
    agent = shlex.join([sys.executable, str(AGENTS / "slow_agent.py"), json.dumps(config)])
    done = run_cli(tmp_path, "sessions", "--agent", agent, "--init-timeout", "0.5")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 4 and "Traceback" not in done.stderr
    assert "not JSON-RPC" in lines[0] and "'Welcome to Slow Agent'" in lines[0]
    assert lines[1].startswith("acp-session: the agent `") and "slow_agent.py" in lines[1]
    assert lines[1].endswith("within 0.5 s (--init-timeout SECONDS to wait longer)")
    assert lines[2:] == ["  the agent's last stderr lines:", "  | need a login"]


@pytest.mark.parametrize("value", ["-1", "soon", "inf"])
def test_init_timeout_must_be_seconds(tmp_path: Path, value: str) -> None:
    done = run_cli(tmp_path, "chat", "--agent", "sleep 600", "--init-timeout", value, "hi")
    assert done.returncode == 2
    assert "--init-timeout" in done.stderr


def test_init_timeout_zero_means_no_limit(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "sessions", "--init-timeout", "0")  # the bundled reference agent
    assert done.returncode == 0, done.stderr


def test_a_terminal_shows_that_the_agent_is_starting(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.support import cli_env

    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed")
    child = pexpect.spawn(
        CLI,
        ["chat", "--agent", "sleep 600", "--init-timeout", "2.5", "hi"],
        env=cli_env(tmp_path),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=10,
    )
    child.expect("starting sleep 600\u2026 1 s")
    child.expect("starting sleep 600\u2026 2 s")
    child.expect("\r\x1b\\[Kacp-session: the agent `sleep 600` did not answer initialize within 2.5 s")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1


def slow_agent(**config: object) -> str:
    return shlex.join([sys.executable, str(AGENTS / "slow_agent.py"), json.dumps(config)])


def test_an_initialize_error_shows_the_agents_last_stderr_lines(tmp_path: Path) -> None:
    agent = slow_agent(stderr=["config.toml: bad syntax"], initialize={"code": -32603, "message": "Internal error"})
    done = run_cli(tmp_path, "sessions", "--agent", agent)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [  # issue 30 item 2: plain words, then what the agent said
        "acp-session: the agent failed: Internal error; its last stderr lines may say more",
        "  the agent's last stderr lines:",
        "  | config.toml: bad syntax",
    ]


def test_an_agent_dying_at_start_shows_why(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "sessions", "--agent", slow_agent(stderr=["error: no API key"], exit=2))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "acp-session: the agent exited with code 2; its last stderr lines may say why",
        "  the agent's last stderr lines:",
        "  | error: no API key",
    ]

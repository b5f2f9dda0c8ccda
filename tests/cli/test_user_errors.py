"""Every user error of ``acp-session`` is one clear line on stderr and exit code 2, never a traceback; arguments
are handled the same way by every subcommand (options anywhere, the prompt optional, ``--cwd`` defaulting to .)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.support import run_cli


def assert_one_line_usage_error(result: object, *needles: str) -> str:
    stderr = getattr(result, "stderr", "")
    assert getattr(result, "returncode", None) == 2, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    for needle in needles:
        assert needle in lines[0], stderr
    return str(lines[0])


@pytest.mark.parametrize("prompt", ["", "   ", "\n"])
def test_an_empty_prompt_is_a_usage_error(tmp_path: Path, prompt: str) -> None:
    line = assert_one_line_usage_error(run_cli(tmp_path, "chat", prompt), "prompt is empty")
    assert line.startswith("acp-session chat: error:")


def test_an_agent_command_line_that_does_not_parse_is_a_usage_error(tmp_path: Path) -> None:
    assert_one_line_usage_error(run_cli(tmp_path, "chat", "--agent", "'x", "hi"), "--agent", "closing quotation")
    assert_one_line_usage_error(run_cli(tmp_path, "sessions", "--agent", '"x'), "--agent")
    assert_one_line_usage_error(run_cli(tmp_path, "chat", "--agent", "   ", "hi"), "--agent is empty")


def test_argparse_errors_are_one_line_naming_the_subcommand(tmp_path: Path) -> None:
    line = assert_one_line_usage_error(run_cli(tmp_path, "chat", "--no-such-option", "hi"), "--no-such-option")
    assert line.startswith("acp-session chat: error:") and "--help" in line
    assert_one_line_usage_error(run_cli(tmp_path, "chat", "--init-timeout", "soon", "hi"), "soon")
    assert_one_line_usage_error(run_cli(tmp_path, "sessions", "extra"), "extra")
    assert_one_line_usage_error(run_cli(tmp_path, "no-such-command"), "no-such-command")
    assert_one_line_usage_error(run_cli(tmp_path, "chat", "--cwd", str(tmp_path / "missing"), "hi"), "--cwd")


def test_resume_without_an_id_asks_for_the_id_only(tmp_path: Path) -> None:
    line = assert_one_line_usage_error(run_cli(tmp_path, "resume"), "session ID")
    assert "PROMPT" not in line


def test_options_may_follow_the_prompt_in_chat_and_resume(tmp_path: Path) -> None:
    chat = run_cli(tmp_path, "chat", "hi", "--json", "there")
    assert chat.returncode == 0, chat.stderr
    assert json.loads(chat.stdout.splitlines()[-1])["text"] == "You said: hi there"

    resumed = run_cli(tmp_path, "resume", "sess-1", "--json", "again")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["text"] == "You said: again"

    resumed = run_cli(tmp_path, "resume", "--json", "sess-1", "and", "again")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["text"] == "You said: and again"


def test_sessions_lists_the_current_directory_unless_all(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    assert run_cli(tmp_path, "chat", "--cwd", str(here), "first").returncode == 0
    assert run_cli(tmp_path, "chat", "--cwd", str(there), "second").returncode == 0

    listed = run_cli(tmp_path, "sessions", "--cwd", str(here))
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["ID", "sess-1"]

    at_root = run_cli(tmp_path, "sessions")  # the CLI runs in tmp_path: no session there
    assert at_root.returncode == 0 and at_root.stdout.strip() == f"no sessions in {tmp_path}", at_root.stdout

    every = run_cli(tmp_path, "sessions", "--all")
    assert sorted(line.split()[0] for line in every.stdout.splitlines()[1:]) == ["sess-1", "sess-2"]
    assert_one_line_usage_error(run_cli(tmp_path, "sessions", "--all", "--cwd", str(here)), "--all")


def test_conformance_without_agent_checks_the_reference_agent(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "conformance", "--check", "initialize", "--json")
    assert result.returncode == 4, result.stderr  # passed, but one check is a partial verdict
    report = json.loads(result.stdout)
    assert [c["result"] for c in report["checks"]] == ["pass"]

    explicit = run_cli(
        tmp_path, "conformance", f"--agent={sys.executable} -m acp_conformance.agent", "--check", "initialize"
    )
    assert explicit.returncode == 4, explicit.stderr

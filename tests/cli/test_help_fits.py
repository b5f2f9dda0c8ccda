"""Each subcommand's ``--help`` lists what applies to it: ``sessions`` and ``login`` run no turn (no
``--reconnect``, no ``--format quiet``), ``login`` works in no directory (no ``--cwd``), ``agents`` has no
``--agent``; and ``acp-session config`` alone shows the settings (``show`` is the default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import run_cli


@pytest.mark.parametrize("command", ["sessions", "login"])
def test_commands_without_turns_list_no_turn_options(tmp_path: Path, command: str) -> None:
    shown = run_cli(tmp_path, command, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--reconnect" not in shown.stdout and "quiet" not in shown.stdout
    assert "--format {text,json}" in shown.stdout and "--init-timeout" in shown.stdout
    assert ("--cwd" in shown.stdout) == (command == "sessions")
    refused = run_cli(tmp_path, command, "--reconnect=2")
    assert refused.returncode == 2 and "unrecognized arguments: --reconnect" in refused.stderr


def test_chat_keeps_its_turn_options(tmp_path: Path) -> None:
    shown = run_cli(tmp_path, "chat", "--help").stdout
    assert "--reconnect" in shown and "quiet" in shown and "--cwd" in shown


def test_agents_help_speaks_of_its_own_actions(tmp_path: Path) -> None:
    shown = run_cli(tmp_path, "agents", "--help")
    assert shown.returncode == 0
    assert "for --agent ID" not in shown.stdout and "--agent ID: the agent's preview" not in shown.stdout
    assert "install: the agent's preview (pre-release) channel" in shown.stdout


def test_config_alone_shows_the_settings(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "config")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# ") and "config.toml (no such file)" in done.stdout
    assert run_cli(tmp_path, "config", "show").stdout == done.stdout

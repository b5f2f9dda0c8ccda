"""Coming back to a session: ``chat -c`` (and ``chat --session NAME``) recaps where you were; ``resume ID`` with
no prompt and no terminal replays the history and ends well; the hint for continuing later names the session and
the agent the way they were given (a ``--session`` name, a config profile)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from tests.cli.support import run_cli
from tests.cli.test_json_records import records_of


def test_chat_c_recaps_the_last_prompt_and_reply(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "chat", "/tool").returncode == 0
    assert run_cli(tmp_path, "chat", "-c", "/markdown").returncode == 0
    done = run_cli(tmp_path, "chat", "-c", "what now")
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    start = err.index(
        "continuing session sess-1: 2 earlier prompts (`acp-session sessions history sess-1` shows them all); the last:"
    )
    assert err[start + 1 : start + 5] == [
        "  > /markdown",
        "  # A Markdown reply",
        "  Clients may render **Markdown**: a heading, a list and a code block.",
        "  - first item",
    ]
    assert err[start + 5].startswith("  \u2026 ") and err[start + 5].endswith(" more lines")
    assert done.stdout == "You said: what now\n[stop: end_turn]\n"  # the recap is not among the answers
    again = run_cli(tmp_path, "chat", "-c", "/echo x")
    assert "  > what now" in again.stderr and "  You said: what now" in again.stderr


def test_a_named_session_recaps_and_its_hint_names_it(tmp_path: Path) -> None:
    first = run_cli(tmp_path, "chat", "--session", "bugfix", "/tool")
    assert first.returncode == 0, first.stderr
    assert "(continue: acp-session chat --session bugfix)" in first.stderr
    done = run_cli(tmp_path, "chat", "--session", "bugfix", "and now?")
    assert "continuing session 'bugfix' (sess-1): 1 earlier prompt" in done.stderr
    assert "`acp-session sessions history bugfix`" in done.stderr
    assert "  > /tool" in done.stderr and "  I changed one line in example.txt." in done.stderr
    assert "  (1 tool call)" in done.stderr


def write_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "acp-session" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_hint_names_a_profile_as_it_was_given(tmp_path: Path) -> None:
    agent = shlex.join([sys.executable, "-m", "acp_conformance.agent", "--store", str(tmp_path / "store.json")])
    write_config(f"[agents.ref]\ncommand = {json.dumps(agent)}\n")
    done = run_cli(tmp_path, "chat", "--agent", "ref", "hi")
    assert done.returncode == 0, done.stderr
    assert "(continue: acp-session chat -c --agent ref)" in done.stderr  # the profile, not its command line
    write_config(f'default_agent = "ref"\n\n[agents.ref]\ncommand = {json.dumps(agent)}\n')
    done = run_cli(tmp_path, "chat", "-c", "again")
    assert done.returncode == 0, done.stderr
    assert "(continue: acp-session chat -c)" in done.stderr  # the config's default agent needs no --agent


def test_resume_without_a_prompt_or_a_terminal_replays_and_ends_well(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "chat", "/echo remember me").returncode == 0
    done = run_cli(tmp_path, "resume", "sess-1")  # stdin: empty, not a terminal
    assert done.returncode == 0, done.stderr
    assert "> /echo remember me" in done.stdout and "--- end of replayed history ---" in done.stdout
    assert "stdin was empty" not in done.stderr
    assert "nothing to send (stdin is not a terminal and was empty); continue: acp-session resume sess-1 PROMPT" in (
        done.stderr
    )
    records = records_of(run_cli(tmp_path, "resume", "--json", "sess-1").stdout)
    assert [r["event"] for r in records][-1] == "done" and "history" in [r["event"] for r in records]
    explicit = run_cli(tmp_path, "resume", "sess-1", "-")  # `-` asks for a prompt on stdin: none is an error
    assert explicit.returncode == 1 and "stdin was empty" in explicit.stderr
    piped = run_cli(tmp_path, "resume", "sess-1", stdin="and now\n")  # piped: one turn, as before
    assert piped.returncode == 0 and "You said: and now" in piped.stdout


def test_sessions_lists_the_names_and_shows_one_time_format(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "chat", "--session", "bugfix", "hi").returncode == 0
    assert run_cli(tmp_path, "chat", "unnamed").returncode == 0
    lines = run_cli(tmp_path, "sessions").stdout.splitlines()
    assert lines[0].split() == ["ID", "NAME", "UPDATED", "DIRECTORY", "TITLE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["sess-1"][1] == "bugfix" and rows["sess-2"][1] == "-"
    listed = rows["sess-1"][2] + " " + rows["sess-1"][3]  # local time, to the minute
    shown = run_cli(tmp_path, "sessions", "show", "bugfix").stdout.splitlines()
    assert f"updated at: {listed}" in shown and "names: bugfix" in shown

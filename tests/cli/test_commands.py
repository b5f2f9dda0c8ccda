"""``acp-session`` subcommands without a terminal: --json, --yes, exit codes, sessions, resume, conformance."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_session.cli.main import EXIT_CODES, exit_code
from tests.cli.support import REPO, cli_env, run_cli


def json_lines(stdout: str) -> list[dict[str, object]]:
    records = [json.loads(line) for line in stdout.splitlines()]
    assert all(isinstance(r, dict) and "event" in r for r in records)
    return records


def test_json_output_one_event_per_line_ending_with_done(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--json", "--yes", "/permission")
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    kinds = [r["event"] for r in records]
    assert kinds[:2] == ["session", "start"] and kinds[-1] == "done"
    assert records[0] == {"event": "session", "session_id": "sess-1", "cwd": str(tmp_path)}
    assert kinds.index("tool_begin") < kinds.index("permission") < kinds.index("tool_end") < kinds.index("done")
    permission = next(r for r in records if r["event"] == "permission")
    assert permission["answer"] == "allow-once"  # --yes approves
    assert records[-1]["stop_reason"] == "end_turn"
    assert records[-1]["text"] == "Done: build/ was removed."


def test_exit_codes_follow_the_stop_reason(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--json", "/max_tokens")
    assert json_lines(result.stdout)[-1]["stop_reason"] == "max_tokens"
    assert result.returncode == EXIT_CODES["max_tokens"] == 5, result.stderr
    assert [exit_code(r) for r in ("end_turn", "error", "cancelled", "refusal", "max_tokens", "max_turn_requests")] == [
        0,
        1,
        3,
        4,
        5,
        6,
    ]
    assert exit_code("some_future_reason") == 7 and exit_code(None) == 1
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


def test_usage_errors_exit_2_and_help_documents_the_exit_codes(tmp_path: Path) -> None:
    assert run_cli(tmp_path).returncode == 2
    assert run_cli(tmp_path, "chat", "--no-such-option").returncode == 2
    assert run_cli(tmp_path, "chat", "--agent", "", "hi").returncode == 2
    missing = run_cli(tmp_path, "chat", "--agent", "no-such-agent-command-xyz", "hi")
    assert missing.returncode == 1 and "agent command not found" in missing.stderr
    help_text = run_cli(tmp_path, "chat", "--help").stdout
    for line in ("0    the turn ended with end_turn", "3    cancelled", "4    refusal", "5    max_tokens"):
        assert line in help_text
    assert "6    max_turn_requests" in help_text and "130  interrupted" in help_text


def test_piped_stdin_is_one_prompt_and_questions_are_rejected_at_its_end(tmp_path: Path) -> None:
    # Issue 30 item 5: stdin read whole as one prompt (and with ``chat -``); no interactive banner.
    for args in (("chat",), ("chat", "-")):
        pasted = run_cli(tmp_path, *args, stdin="first line\nsecond line\nthird line\n")
        assert pasted.returncode == 0, pasted.stderr
        assert pasted.stdout.count("[stop: end_turn]") == 1, pasted.stdout
        assert "You said: first line\nsecond line\nthird line\n[stop: end_turn]" in pasted.stdout
        assert "leaves" not in pasted.stderr and "type a prompt" not in pasted.stderr
    empty = run_cli(tmp_path, "chat", stdin="\n")
    assert empty.returncode == 1 and "stdin was empty" in empty.stderr

    result = run_cli(tmp_path, "chat", stdin="/permission\n")
    assert result.returncode == 9, result.stderr  # a question nobody could answer: a script should know
    out = result.stdout
    assert "? Run `rm -rf build/`?" in result.stderr  # questions go to stderr, answers to stdout
    # stdin ended while the question was open: no approval (the cancelled outcome), and why
    assert "[permission] Run `rm -rf build/`?: cancelled (not asked: stdin is not a terminal" in out
    assert "nobody could answer (stdin is not a terminal and its input has ended)" in result.stderr
    assert "--approve-all" in result.stderr and "Permission was not granted" in out


def test_sessions_then_resume_replays_and_continues(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "sessions").stdout.strip() == f"no sessions in {tmp_path}"
    first = run_cli(tmp_path, "chat", "hello")
    assert first.returncode == 0, first.stderr
    assert "session sess-1 (continue: acp-session chat -c)" in first.stderr  # issue 30 item 4
    again = run_cli(tmp_path, "chat", "-c", "/tool")
    assert again.returncode == 0, again.stderr
    assert "continuing session sess-1" in again.stderr

    listed = run_cli(tmp_path, "sessions")
    assert listed.returncode == 0, listed.stderr
    header, line = listed.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "UPDATED", "DIRECTORY", "TITLE"]
    assert line.startswith("sess-1 ") and line.endswith("hello") and str(tmp_path) in line

    # A new agent process: the session is replayed from the agent's store, then the prompt continues it.
    resumed = run_cli(tmp_path, "resume", "sess-1", "what", "now")
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
    assert out.index("> hello") < out.index("Hello! I am the ACP reference agent.") < out.index("> /tool")
    assert out.index("[tool] Editing example.txt (edit): completed") < out.index("I changed one line")
    assert (
        out.index("--- end of replayed history ---") < out.index("You said: what now") < out.index("[stop: end_turn]")
    )

    unknown = run_cli(tmp_path, "resume", "sess-99", "hi")
    assert unknown.returncode == 1
    assert "the agent does not know session sess-99 (`acp-session sessions` lists its sessions)" in unknown.stderr


def test_conformance_subcommand_is_acp_conformance(tmp_path: Path) -> None:
    agent = f"{sys.executable} -m acp_conformance.agent"
    result = run_cli(tmp_path, "conformance", "--agent", agent, "--check", "initialize", "--json")
    assert result.returncode == 4, result.stderr  # passed, but one check is a partial verdict
    report = json.loads(result.stdout)
    assert [c["result"] for c in report["checks"]] == ["pass"]
    assert run_cli(tmp_path, "conformance", "--agent", agent, "--check", "no-such-check").returncode != 0


def test_python_dash_m_acp_session(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "acp_session", "chat", "hello"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        cwd=REPO,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Hello! I am the ACP reference agent. Type `/help` to see what I can demonstrate.",
        "[stop: end_turn]",
    ]


@pytest.mark.parametrize("reason", sorted(EXIT_CODES))
def test_exit_code_table_is_in_docs(reason: str) -> None:
    docs = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"| {EXIT_CODES[reason]} | `{reason}`" in docs


def test_sessions_fall_back_to_the_first_prompt_and_show_local_times(tmp_path: Path) -> None:
    """Issue 30 item 4: a session the agent gave no title is listed by the first prompt this CLI sent."""
    assert run_cli(tmp_path, "chat", "fix the flaky test\nin tests/test_io.py").returncode == 0
    store = tmp_path / "acp-session" / "reference-agent-sessions.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    for session in data["sessions"]:
        session["title"] = None  # as most agents: no title
    store.write_text(json.dumps(data), encoding="utf-8")
    header, row = run_cli(tmp_path, "sessions").stdout.splitlines()
    assert header.split() == ["ID", "NAME", "UPDATED", "DIRECTORY", "TITLE"]
    assert row.startswith("sess-1  ") and row.endswith("  fix the flaky test in tests/test_io.py")
    assert re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d  ", row), row  # local time, to the minute

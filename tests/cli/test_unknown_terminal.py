"""zed #64538 in the CLI: after ``acp-session resume``, an agent names a terminal the client does not know (from
its process before the resume). The update is shown whole (tool status and content, reply, plan) and the terminal
is said to be unavailable, where its output would be."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.cli.support import run_cli

AGENT = Path(__file__).resolve().parents[1] / "conversation" / "agents" / "stale_terminal_agent.py"
COMMAND = shlex.join([sys.executable, str(AGENT)])


def test_an_unknown_terminal_is_shown_unavailable_and_the_rest_of_the_update_is_shown(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "resume", "s1", "--agent", COMMAND, "go")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    end = lines.index("--- end of replayed history ---")
    assert lines[end + 1 :] == [
        "[tool] make test (execute): completed",
        "  tests passed",
        "  (terminal t-old unavailable)",
        "reply after resume",
        "[plan]",
        "  [x] run the tests",
        "[stop: end_turn]",
    ]


def test_the_json_records_keep_the_whole_update(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "resume", "s1", "--agent", COMMAND, "--json", "go")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    ends = [r for r in records if r["event"] == "tool_end"]
    assert [r["tool_call"]["id"] for r in ends] == ["t0"] and ends[0]["status"] == "completed"
    assert any(r["event"] == "text" and r["text"] == "reply after resume" for r in records)
    assert any(r["event"] == "progress" and r["entries"][0]["status"] == "completed" for r in records)
    assert records[-1]["event"] == "done" and records[-1]["stop_reason"] == "end_turn"

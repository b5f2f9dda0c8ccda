"""``--json`` (issue 30 item 6): every record, of every subcommand and failure, validated one by one against the
documented schema (docs/cli-records.schema.json); every run ends with ``done`` or ``error``; keys the CLI names
are snake_case; tool records carry only what changed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli.support import REPO, run_cli

SCHEMA = json.loads((REPO / "docs" / "cli-records.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
# Values that are ACP objects as the agent sent them keep the protocol's spelling.
WIRE_VALUES = {"content", "locations", "entries", "notice", "raw_input", "raw_output", "data", "error"}


def records_of(stdout: str) -> list[dict[str, Any]]:
    """Each line parsed and validated on its own; the last one ends the run."""
    records = []
    for number, line in enumerate(stdout.splitlines(), 1):
        record = json.loads(line)
        errors = sorted(VALIDATOR.iter_errors(record), key=str)
        assert not errors, f"record {number} {line!r}: {errors[0].message if errors else ''}"
        assert_snake_keys(record)
        records.append(record)
    assert records, "no records"
    assert records[-1]["event"] in ("done", "error"), records[-1]
    return records


def assert_snake_keys(value: Any, key: str = "") -> None:
    if key in WIRE_VALUES:
        return
    if isinstance(value, dict):
        for name, item in value.items():
            assert SNAKE.match(name), f"key {name!r} is not snake_case"
            assert_snake_keys(item, name)
    elif isinstance(value, list):
        for item in value:
            assert_snake_keys(item, key)


def test_the_schema_itself_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    events = {branch["properties"]["event"]["const"] for branch in SCHEMA["oneOf"]}
    assert {"session", "start", "text", "tool_begin", "tool_update", "tool_end", "done", "error"} <= events


@pytest.mark.parametrize(
    "prompt", ["/all", "/tool", "/permission", "/usage", "/fail", "/refuse", "/markdown", "/subagent"]
)
def test_chat_records_match_the_schema(tmp_path: Path, prompt: str) -> None:
    result = run_cli(tmp_path, "chat", "--json", "--yes", prompt)
    records = records_of(result.stdout)
    assert records[0] == {"event": "session", "session_id": "sess-1", "cwd": str(tmp_path)}
    assert records[-1]["event"] == "done"


def test_a_permission_that_cannot_be_asked_says_why_and_exits_9(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--format", "json", "/permission")  # stdin: empty, not a terminal
    assert result.returncode == 9, result.stderr
    records = records_of(result.stdout)
    [permission] = [r for r in records if r["event"] == "permission"]
    assert permission["answer"] is None
    assert permission["reason"] == "stdin is not a terminal and its input has ended"
    assert records[-1]["event"] == "done" and records[-1]["stop_reason"] == "end_turn"
    assert "nobody could answer" in result.stderr and "exit code 9" in result.stderr
    answered = run_cli(tmp_path, "chat", "--json", "/permission", stdin="o\n")  # piped answers are answers
    assert answered.returncode == 0, answered.stderr
    [permission] = [r for r in records_of(answered.stdout) if r["event"] == "permission"]
    assert permission["answer"] == "allow-once" and "reason" not in permission


def test_tool_records_carry_only_what_changed(tmp_path: Path) -> None:
    records = records_of(run_cli(tmp_path, "chat", "--json", "/tool").stdout)
    tools = [r for r in records if r["event"].startswith("tool_")]
    assert tools[0]["event"] == "tool_begin" and tools[0]["tool_call"]["title"] == "Editing example.txt"
    for later in tools[1:]:
        assert "title" not in later["tool_call"] and "name" not in later["tool_call"]
    final = {k: v for r in tools for k, v in r["tool_call"].items() if k != "content"}
    assert final["status"] == "completed" and final["raw_output"] == {"changed": 1}  # item 10: rawOutput reported


def test_resume_sessions_and_login_records_match_the_schema(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "chat", "/tool").returncode == 0
    resumed = records_of(run_cli(tmp_path, "resume", "--json", "sess-1", "again").stdout)
    assert resumed[0]["event"] == "session" and resumed[0]["session_id"] == "sess-1"
    assert "history" in [r["event"] for r in resumed]
    listed = records_of(run_cli(tmp_path, "sessions", "--json").stdout)
    assert [r["event"] for r in listed] == ["session", "done"]
    assert listed[0]["session_id"] == "sess-1" and listed[0]["first_prompt"] == "/tool"
    login = run_cli(tmp_path, "login", "--json")  # the reference agent offers no login method
    assert login.returncode == 2
    assert records_of(login.stdout)[-1]["error_type"] == "UnknownLoginMethod"


def test_failures_end_with_an_error_record(tmp_path: Path) -> None:
    missing = run_cli(tmp_path, "chat", "--json", "--agent", "no-such-agent-xyz", "hi")
    assert missing.returncode == 1
    # A word that is neither a program on PATH nor an ACP registry id (cli/agents.py decides which it is).
    [record] = records_of(missing.stdout)
    assert record["event"] == "error" and record["error_type"] == "AgentNotFound"
    assert record["error"].startswith("agent command not found: no-such-agent-xyz (nor is it an agent id in ")

    dying = f"{sys.executable} -c \"import sys; sys.stderr.write('no API key\\\\n'); sys.exit(3)\""
    exits = run_cli(tmp_path, "chat", "--json", "--agent", dying, "hi")
    assert exits.returncode == 1
    (error,) = records_of(exits.stdout)
    assert error["exit_code"] == 3 and error["stderr_tail"] == ["no API key"]
    assert error["error"].startswith("the agent exited with code 3")

    unknown = run_cli(tmp_path, "resume", "--json", "sess-42", "hi")
    assert unknown.returncode == 1
    (error,) = records_of(unknown.stdout)
    assert error["error_type"] == "ResourceNotFound" and "session sess-42" in error["error"]

    nothing = run_cli(tmp_path, "chat", "-c", "--json", "hi")
    assert nothing.returncode == 1
    assert records_of(nothing.stdout)[-1]["error_type"] == "NoSessionToContinue"

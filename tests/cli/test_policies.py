"""Permission policies on the command line (issue 38), with the reference agent's ``/permission`` scenario (its
``KIND PATH`` form for kind and path rules): what each policy answered, that nobody was asked when it decided,
that the rest is still asked, and how a decision is shown and recorded in ``--json``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.cli.support import run_cli
from tests.cli.test_json_records import records_of
from tests.interop.conftest import PY_V1_AGENT

QUESTION = "? Run `rm -rf build/`?"


@pytest.mark.parametrize(
    ("flag", "reply", "shown"),
    [
        ("--approve-all", "Done: build/ was removed.", "(--approve-all): Allow once"),
        ("--yes", "Done: build/ was removed.", "(--approve-all): Allow once"),  # the old names
        ("-y", "Done: build/ was removed.", "(--approve-all): Allow once"),
        ("--deny-all", "Permission was not granted", "(--deny-all): Reject"),
    ],
)
def test_a_preset_answers_without_asking(tmp_path: Path, flag: str, reply: str, shown: str) -> None:
    done = run_cli(tmp_path, "chat", flag, "/permission")
    assert done.returncode == 0, done.stderr
    assert reply in done.stdout
    assert f"[permission] Run `rm -rf build/`? {shown}" in done.stdout
    assert QUESTION not in done.stderr


def test_approve_reads_approves_a_read_and_asks_about_a_command(tmp_path: Path) -> None:
    read = run_cli(tmp_path, "chat", "--approve-reads", "/permission read notes.txt")
    assert read.returncode == 0, read.stderr
    assert "[permission] read notes.txt? (--allow read): Allow once" in read.stdout
    assert "Done: read notes.txt." in read.stdout and "build/" not in read.stdout  # what was asked for, done
    command = run_cli(tmp_path, "chat", "--approve-reads", "/permission")  # execute: asked; stdin has no answer
    assert QUESTION in command.stderr
    assert "[permission] Run `rm -rf build/`?: cancelled" in command.stdout
    assert "Permission was not granted" in command.stdout
    edit = run_cli(tmp_path, "chat", "--approve-reads", "/permission edit notes.txt")
    assert "? edit notes.txt?" in edit.stderr  # an edit is asked too


def test_path_rules_judge_every_path_under_the_directory(tmp_path: Path) -> None:
    inside = run_cli(tmp_path, "chat", "--allow", "edit:src/**", "/permission edit src/pkg/app.py")
    assert inside.returncode == 0, inside.stderr
    assert "(--allow edit:src/**): Allow once" in inside.stdout and "? edit" not in inside.stderr
    outside = run_cli(tmp_path, "chat", "--allow", "edit:src/**", "/permission edit docs/app.md")
    assert "? edit docs/app.md?" in outside.stderr  # not under src/: asked
    other_kind = run_cli(tmp_path, "chat", "--allow", "edit:src/**", "/permission delete src/app.py")
    assert "? delete src/app.py?" in other_kind.stderr


def test_rules_come_before_the_preset_and_the_first_match_wins(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--approve-all", "--deny", "execute", "/permission")
    assert "(--deny execute): Reject" in done.stdout and "not granted" in done.stdout
    done = run_cli(tmp_path, "chat", "--allow", "edit:a/*", "--deny", "edit", "/permission edit a/x")
    assert "(--allow edit:a/*): Allow once" in done.stdout
    done = run_cli(tmp_path, "chat", "--deny", "edit", "--allow", "edit:a/*", "/permission edit a/x")
    assert "(--deny edit): Reject" in done.stdout


def test_json_records_what_the_policy_decided(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--json", "--allow", "edit:src/**", "/permission edit src/app.py")
    assert done.returncode == 0, done.stderr
    [record] = [r for r in records_of(done.stdout) if r["event"] == "permission"]
    assert record["answer"] == "allow-once" and record["decided_by"] == "policy"
    assert (record["decision"], record["policy"], record["tool_kind"]) == ("allow", "--allow edit:src/**", "edit")
    assert record["paths"] == [str(tmp_path / "src" / "app.py")]
    asked = run_cli(tmp_path, "chat", "--json", "--approve-reads", "/permission")
    [record] = [r for r in records_of(asked.stdout) if r["event"] == "permission"]
    assert "decided_by" not in record and record["answer"] is None  # asked, and stdin had no answer


def test_the_edit_scenario_writes_only_what_the_policy_allows(tmp_path: Path) -> None:
    """``/edit ask`` asks before writing <cwd>/acp-reference-edit/greeting.txt and notes.md."""
    written = tmp_path / "acp-reference-edit" / "greeting.txt"
    denied = run_cli(tmp_path, "chat", "--deny-all", "/edit ask")
    assert "[permission] Edit greeting.txt and notes.md? (--deny-all): Reject" in denied.stdout
    assert "wrote nothing" in denied.stdout and not written.exists()
    outside = run_cli(tmp_path, "chat", "--allow", "edit:src/**", "/edit ask")  # the files are not under src/
    assert "? Edit greeting.txt and notes.md?" in outside.stderr and not written.exists()
    allowed = run_cli(tmp_path, "chat", "--allow", "edit:acp-reference-edit/*", "/edit ask")
    assert "(--allow edit:acp-reference-edit/*): Allow once" in allowed.stdout
    assert written.read_text() == "Hello from the ACP reference agent.\n"
    reads = run_cli(tmp_path, "chat", "--approve-reads", "/edit ask")  # an edit is not a read: asked
    assert "? Edit greeting.txt and notes.md?" in reads.stderr


def test_a_v1_agents_request_is_judged_with_the_path_its_tool_call_reported(tmp_path: Path) -> None:
    """The Python SDK's v1 agent asks about an edit tool call without its location; the tool call's earlier
    update named ``protected.txt``, which is what the path rule judges."""
    agent = shlex.join([sys.executable, str(PY_V1_AGENT)])
    done = run_cli(tmp_path, "chat", "--agent", agent, "--allow", "edit:protected.txt", "permission")
    assert done.returncode == 0, done.stderr
    assert "[permission] Touch the protected file (--allow edit:protected.txt): Allow once" in done.stdout
    assert "allowed" in done.stdout
    other = run_cli(tmp_path, "chat", "--agent", agent, "--allow", "edit:other.txt", "--json", "permission")
    [record] = [r for r in records_of(other.stdout) if r["event"] == "permission"]
    assert record["answer"] is None and "decided_by" not in record  # not covered: asked, no answer on stdin
    denied = run_cli(tmp_path, "chat", "--agent", agent, "--deny-all", "permission")
    assert "(--deny-all): Reject" in denied.stdout and "rejected" in denied.stdout

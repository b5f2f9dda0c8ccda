"""acpx (npm, pinned in package.json), a headless protocol v1 client nobody here wrote, drives the reference agent
through whole turns: a one-shot exec with streamed text, a permission approved and denied, a tool call whose file
goes through the client's fs/* methods, two turns in a named session and a cancelled turn.

acpx keeps its sessions under ``~/.acpx``: the autouse fixture in tests/conftest.py points HOME at a temporary
folder, so nothing reaches the user's own. Its exit codes are its own (dist: ``EXIT_CODES``): 0 success,
5 permission denied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.schema_source import INTEROP

ACPX_CLI = INTEROP / "node_modules" / "acpx" / "dist" / "cli.js"
AGENT = "acp-reference-agent"
PERMISSION_DENIED = 5  # acpx's exit code when a permission was denied


@pytest.fixture
def acpx(node: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run acpx in a fresh working folder against the reference agent (on PATH from this interpreter's bin)."""
    assert ACPX_CLI.is_file(), f"acpx is not installed in {INTEROP}/node_modules (npm install there)"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    work = tmp_path / "work"
    work.mkdir()

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        # --ttl: the session's queue owner (and its agent) outlives a command by that long, not acpx's 300 s.
        command = [node, str(ACPX_CLI), "--ttl", "10", "--agent", AGENT, *args]
        return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)

    run.cwd = work  # type: ignore[attr-defined]
    return run


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def test_exec_hello_streams_the_reply(acpx) -> None:  # type: ignore[no-untyped-def]
    out = _ok(acpx("exec", "hello"))
    assert "Hello! I am the ACP reference agent." in out
    assert "[done] end_turn" in out


def test_exec_permission_approved(acpx) -> None:  # type: ignore[no-untyped-def]
    out = _ok(acpx("--approve-all", "exec", "/permission"))
    assert "[client] session/request_permission" in out
    assert "Done: build/ was removed." in out and "rm -rf build/ (completed)" in out


def test_exec_permission_denied(acpx) -> None:  # type: ignore[no-untyped-def]
    proc = acpx("--deny-all", "exec", "/permission")
    assert proc.returncode == PERMISSION_DENIED, (proc.stdout, proc.stderr)
    assert "Permission was not granted, so I did nothing." in proc.stdout
    assert "rm -rf build/ (failed)" in proc.stdout and "[done] end_turn" in proc.stdout


def test_exec_tool_writes_through_the_client(acpx) -> None:  # type: ignore[no-untyped-def]
    out = _ok(acpx("--approve-all", "exec", "/tool"))
    # acpx advertises fs: the agent reads (the file is missing: -32002) and writes through it.
    assert "[client] fs/read_text_file" in out and "[client] fs/write_text_file" in out
    assert "I changed one line in example.txt." in out
    assert (acpx.cwd / "example.txt").read_text() == "new\n"
    # Without the capability the agent writes the file itself and calls no fs/* method.
    out = _ok(acpx("--no-fs", "--approve-all", "exec", "/tool"))
    assert "[client] fs/" not in out
    assert (acpx.cwd / "example.txt").read_text() == "old\n"


def test_named_session_two_turns_and_cancel(acpx) -> None:  # type: ignore[no-untyped-def]
    created = _ok(acpx("sessions", "new", "--name", "t1"))
    assert created.strip().startswith("sess-")
    try:
        _two_turns_and_cancel(acpx)
    finally:
        acpx("sessions", "close", "t1")  # stops the session's queue owner and its agent


def _two_turns_and_cancel(acpx) -> None:  # type: ignore[no-untyped-def]
    assert "Hello! I am the ACP reference agent." in _ok(acpx("prompt", "-s", "t1", "hello"))
    assert "42." in _ok(acpx("prompt", "-s", "t1", "/thought"))
    history = _ok(acpx("sessions", "history", "t1"))
    assert "hello" in history and "The answer is 42." in history  # both turns, one session

    _ok(acpx("prompt", "-s", "t1", "--no-wait", "/slow 100"))  # 10 s of chunks, queued on the session's owner
    deadline = time.monotonic() + 20
    while "status: running" not in _ok(acpx("status", "-s", "t1")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)  # a few chunks in
    assert "cancel requested" in _ok(acpx("cancel", "-s", "t1"))
    while "status: idle" not in _ok(acpx("status", "-s", "t1")) and time.monotonic() < deadline:
        time.sleep(0.2)
    last = _ok(acpx("sessions", "history", "t1")).strip().splitlines()[-1]
    assert "chunk 1." in last and "chunk 100." not in last, last  # the turn stopped early


ACPX_DRIVER = Path(__file__).resolve().parent / "acpx_client_driver.py"
ACPX_BASELINE = Path(__file__).resolve().parent / "acpx_client_baseline.json"
UNCANCELLABLE = {"client-no-approval-after-cancel", "client-cancels-pending-permission"}


def test_acpx_in_client_mode_matches_its_baseline(node: str) -> None:
    """acpx as a subject of client mode: its one failure is baselined, and the two cancel checks, whose judged
    point comes after a session/cancel that acpx exec cannot send, are NOT_TESTED with that reason, never FAIL."""
    assert ACPX_CLI.is_file()
    command = [sys.executable, "-m", "acp_conformance.runner", "client", "--json", "--timeout", "40"]
    command += ["--baseline", str(ACPX_BASELINE), "--", sys.executable, str(ACPX_DRIVER)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads(proc.stdout)  # acpx's own transcript never reaches the runner's stdout
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    messages = {c["id"]: c["message"] for c in report["checks"]}
    assert {r["negotiated"] for r in report["runs"]} == {1}  # a v1 client: it takes 1 from the v2 agent too
    assert report["verdict"]["baseline"]["known"] == ["client-closes-sessions"]
    assert report["verdict"]["baseline"]["new"] == [] and report["verdict"]["baseline"]["stale"] == []
    for check in UNCANCELLABLE:
        assert statuses[check] == "NOT_TESTED", (check, messages[check])
        assert "the client never sent session/cancel" in messages[check]
    # acpx advertises fs and terminal: the agent's calls of them leave nothing to gate (never a vacuous PASS).
    assert statuses["client-gates-capabilities"] == "NOT_TESTED"
    assert "advertised fs.readTextFile, fs.writeTextFile and terminal" in messages["client-gates-capabilities"]
    assert {k for k, v in statuses.items() if v not in ("PASS", "NOT_TESTED")} == {"client-closes-sessions"}
    assert {k for k, v in statuses.items() if v == "NOT_TESTED"} == UNCANCELLABLE | {"client-gates-capabilities"}
    # MANDATORY checks that could not run decide the verdict (the tier model), as the baseline file records.
    assert report["verdict"]["verdict"] == "non_conformant"
    assert sorted(report["verdict"]["deciding"]) == sorted(UNCANCELLABLE)
    assert proc.returncode == 1

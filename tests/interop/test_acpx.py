"""acpx (npm, pinned in package.json), a headless protocol v1 client nobody here wrote, drives the reference agent
through whole turns: a one-shot exec with streamed text, a permission approved and denied, a tool call whose file
goes through the client's fs/* methods, two turns in a named session and a cancelled turn.

acpx keeps its sessions under ``~/.acpx``: the autouse fixture in tests/conftest.py points HOME at a temporary
folder, so nothing reaches the user's own. Its exit codes are its own (dist: ``EXIT_CODES``): 0 success,
5 permission denied.
"""

from __future__ import annotations

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

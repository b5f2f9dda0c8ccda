"""The CLI's state files under concurrency (issue 51, 3): named and recent sessions are changed by many
``acp-session`` processes at once without losing each other's rows, and a file that is not a JSON list is kept
aside with a warning instead of being emptied. The writers are real processes started at once behind a barrier."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.support import run_cli

PROCESSES = 40
EACH = 8

WRITER = """
import os, sys, time
from pathlib import Path
from acp_session.cli.named_sessions import NamedSessions
from acp_session.cli.recent import RecentSessions

kind, path, gate, index, each = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
(gate.parent / f"ready-{index}").touch()
deadline = time.monotonic() + 60
while not gate.exists() and time.monotonic() < deadline:
    time.sleep(0.002)
for n in range(each):
    key = f"p{index}-{n}"
    if kind == "named":
        NamedSessions(path).remember(key, "session-" + key, "agent", "/work")
    else:
        RecentSessions(path).remember("session-" + key, "agent", "/work", "prompt " + key)
"""


def run_writers(tmp_path: Path, kind: str, path: Path) -> None:
    """``PROCESSES`` processes, released together once every one has started, each making ``EACH`` changes."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    gate = barrier / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, kind, str(path), str(gate), str(index), str(EACH)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(PROCESSES)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(list(barrier.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.touch()
        for writer in writers:
            _, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err
            assert "warning" not in err, err
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()


def test_forty_processes_naming_sessions_at_once_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "state" / "named-sessions.json"
    run_writers(tmp_path, "named", path)
    rows = json.loads(path.read_text(encoding="utf-8"))
    names = sorted(row["name"] for row in rows)
    assert names == sorted(f"p{i}-{n}" for i in range(PROCESSES) for n in range(EACH))
    assert all(row["session_id"] == "session-" + row["name"] for row in rows)
    assert not list(path.parent.glob("*.tmp"))  # no temporary file left behind


def test_forty_processes_noting_recent_sessions_at_once_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "state" / "recent-sessions.json"
    run_writers(tmp_path, "recent", path)
    rows = json.loads(path.read_text(encoding="utf-8"))
    ids = sorted(row["session_id"] for row in rows)
    assert ids == sorted(f"session-p{i}-{n}" for i in range(PROCESSES) for n in range(EACH))
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.parametrize("broken", [b'[{"name": "old", "session_id": "s-old", "agent"', b'{"not": "a list"}'])
def test_a_corrupt_named_sessions_file_is_kept_aside_with_a_warning(tmp_path: Path, broken: bytes) -> None:
    folder = tmp_path / "acp-session"
    folder.mkdir()
    path = folder / "named-sessions.json"
    path.write_bytes(broken)
    done = run_cli(tmp_path, "chat", "--session", "work", "hello")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    kept = list(folder.glob("named-sessions.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == broken
    warning = [line for line in done.stderr.splitlines() if "named-sessions.json" in line]
    assert len(warning) == 1 and "warning" in warning[0] and kept[0].name in warning[0]
    assert [row["name"] for row in json.loads(path.read_text(encoding="utf-8"))] == ["work"]
    again = run_cli(tmp_path, "sessions", "show", "work")
    assert again.returncode == 0 and "names: work" in again.stdout, again.stderr


def test_a_corrupt_recent_sessions_file_is_kept_aside_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from acp_session.cli.recent import RecentSessions

    path = tmp_path / "recent-sessions.json"
    path.write_bytes(b"\x00" * 64)  # what a crash can leave behind
    recent = RecentSessions(path)
    assert recent.latest("agent", "/work") is None  # reading sets it aside too
    kept = list(tmp_path.glob("recent-sessions.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b"\x00" * 64
    assert f"kept as {kept[0].name}" in capsys.readouterr().err
    recent.remember("s1", "agent", "/work", "first")
    assert recent.latest("agent", "/work") == "s1"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == sorted(
        ["recent-sessions.json", kept[0].name]
    )

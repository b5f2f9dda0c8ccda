"""``acp-session serve`` with acp-session's own client (``--url``) over both profiles: a turn; a client SIGKILLed
while the agent streams 40 chunks, the turn settling on the host, and a new client's ``resume ID --url`` showing
the whole reply once (seed 002's promise); the first stdout line is the URL; bad options are one usage line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import CLI, Host

WHOLE = "".join(f"chunk {n}. " for n in range(1, 41))


def _client_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("profile", ["http", "ws"])
def test_a_killed_clients_turn_settles_and_resume_shows_it_once(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, backend: str
) -> None:
    host = start_host(backend=backend)
    url = host.url_for(profile)
    chat = subprocess.Popen(
        [*CLI, "chat", "--url", url, "/slow 40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_client_env(tmp_path),
    )
    assert chat.stdout is not None
    seen = ""
    while "chunk 5." not in seen:
        char = chat.stdout.read(1)
        assert char, f"the chat ended early: {seen!r}"
        seen += char
    chat.send_signal(signal.SIGKILL)
    chat.wait(timeout=30)
    started = host.wait_for("turn_started")
    session = started["sessionId"]
    ended = host.wait_for("turn_ended", sessionId=session)
    assert ended.get("stopReason") == "end_turn" and "error" not in ended
    host.wait_for("client_disconnected", client=started["client"])
    resumed = subprocess.run(
        [*CLI, "resume", session, "--url", url],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_client_env(tmp_path),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    text = resumed.stdout
    assert text.count(WHOLE) == 1, text
    for n in range(1, 41):
        assert len(re.findall(rf"\bchunk {n}\. ", text)) == 1, (n, text)
    attached = host.wait_for("session_attached", sessionId=session)
    assert attached["replayed"] >= 40


def test_a_turn_and_the_events(start_host: Callable[..., Host], tmp_path: Path) -> None:
    host = start_host()
    done = subprocess.run(
        [*CLI, "chat", "--url", host.url, "hello"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_client_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "I am the ACP reference agent" in done.stdout
    kinds = [e["event"] for e in host.events]
    for kind in ("agent_started", "client_connected", "session_created", "turn_started", "turn_ended"):
        assert kind in kinds, host.events
    listed = subprocess.run(
        [*CLI, "sessions", "--url", host.url, "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_client_env(tmp_path),
        timeout=60,
    )
    assert host.wait_for("session_created")["sessionId"] in listed.stdout, listed.stdout + listed.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--listen", "0.0.0.0:0"], "token"),
        (["--permission-timeout", "-1"], "--permission-timeout"),
        ([], "--agent"),
    ],
)
def test_bad_options_are_one_usage_line(tmp_path: Path, args: list[str], expected: str) -> None:
    agent = [] if not args else ["--agent", "acp-reference-agent"]
    done = subprocess.run([*CLI, "serve", *agent, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""

"""``acp-session serve --store DIR``: the host stopped and started again lists its sessions (``sessions --url``) and
``resume`` shows their history; with an agent that keeps its sessions too (the reference agent's ``--store``) a
resumed session takes new prompts, otherwise it is read-only and the refusal says so. ``--token-file``: 401
without the token, a turn with ``--header "Authorization: Bearer ..."``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx

from .conftest import CLI, REFERENCE_AGENT, Host


def _cli(tmp_path: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL if input is None else None,
        input=input,
    )


def _chat_then_restart(start_host: Callable[..., Host], tmp_path: Path, agent: str) -> tuple[Host, str]:
    store = str(tmp_path / "host-store")
    first = start_host("--store", store, agent=agent)
    done = _cli(tmp_path, "chat", "--url", first.url, "hello")
    assert done.returncode == 0, done.stderr
    session = first.wait_for("session_created")["sessionId"]
    first.wait_for("turn_ended", sessionId=session)
    first.stop()
    second = start_host("--store", store, agent=agent)
    return second, session


def test_a_restarted_host_lists_and_replays_its_sessions(start_host: Callable[..., Host], tmp_path: Path) -> None:
    agent_store = tmp_path / "agent-sessions.json"
    host, session = _chat_then_restart(start_host, tmp_path, f"{REFERENCE_AGENT} --store {agent_store}")
    listed = _cli(tmp_path, "sessions", "--url", host.url)
    assert session in listed.stdout, listed.stdout + listed.stderr
    resumed = _cli(tmp_path, "resume", session, "--url", host.url)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("I am the ACP reference agent") == 1, resumed.stdout
    again = _cli(tmp_path, "resume", session, "--url", host.url, "/slow 3")
    assert again.returncode == 0, again.stderr
    assert "chunk 3." in again.stdout


def test_a_session_the_agent_cannot_resume_is_read_only(start_host: Callable[..., Host], tmp_path: Path) -> None:
    host, session = _chat_then_restart(start_host, tmp_path, REFERENCE_AGENT)  # the agent keeps nothing
    host.wait_for("session_read_only", sessionId=session)
    resumed = _cli(tmp_path, "resume", session, "--url", host.url)
    assert resumed.returncode == 0 and resumed.stdout.count("I am the ACP reference agent") == 1, resumed.stderr
    refused = _cli(tmp_path, "resume", session, "--url", host.url, "hello again")
    assert refused.returncode != 0
    assert "read-only" in refused.stdout + refused.stderr


def test_the_token(start_host: Callable[..., Host], tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-for-the-test\n")
    token_file.chmod(0o600)
    host = start_host("--token-file", str(token_file))
    message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "t", "version": "1"}},
    }
    assert httpx.post(host.url, json=message, timeout=30).status_code == 401
    refused = _cli(tmp_path, "chat", "--url", host.url, "hello")
    assert refused.returncode != 0 and "401" in refused.stdout + refused.stderr
    done = _cli(
        tmp_path, "chat", "--url", host.url, "--header", "Authorization: Bearer s3cret-token-for-the-test", "hello"
    )
    assert done.returncode == 0, done.stderr
    assert "I am the ACP reference agent" in done.stdout
    assert "s3cret" not in host.stderr()

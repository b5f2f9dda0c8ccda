"""Login: every auth method shape typed, ``authenticate``, ``AuthenticationRequired``, and what the CLI says."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import AuthenticationRequired, CapabilityNotSupported
from acp_session.errors import AuthRequired
from tests.protocol.support import chunk, sent, v1_agent, v1_argv

pytestmark = pytest.mark.anyio

METHODS: list[dict[str, Any]] = [
    {"id": "agent-login", "name": "Log in", "description": "in a browser"},
    {"type": "env_var", "id": "api-key", "name": "Use X_KEY", "vars": [{"name": "X_KEY"}, {"name": "Y_KEY"}]},
    {
        "id": "cli-login",
        "name": "Log in with the CLI",
        "_meta": {"terminal-auth": {"command": sys.executable, "args": ["-c", "print('terminal login ran')"]}},
    },
    {"type": "terminal", "id": "tty", "name": "Terminal", "args": ["--login"], "env": {"A": "1"}},
    {"type": "_vendor_sso", "id": "sso", "name": "SSO", "url": "https://example.invalid"},
]
INIT = {"protocolVersion": 1, "agentInfo": {"name": "needs-login", "version": "1"}, "authMethods": METHODS}
REFUSAL = {"code": -32000, "message": "Authentication required", "data": {"reason": "no token"}}


async def test_every_auth_shape_is_typed_and_none_is_lost(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=INIT) as (client, _):
            methods = {m.method_id: m for m in client.auth.login_methods}
    assert [m["id"] for m in METHODS] == list(methods)
    assert methods["agent-login"].kind == "agent" and methods["agent-login"].is_protocol_login
    assert methods["api-key"].kind == "env_var" and methods["api-key"].env_vars == ("X_KEY", "Y_KEY")
    assert methods["cli-login"].login_command == (sys.executable, "-c", "print('terminal login ran')")
    tty = methods["tty"]
    assert tty.kind == "terminal" and not tty.is_protocol_login and tty.terminal_env == {"A": "1"}
    assert tty.terminal_command(["agent", "--acp"]) == ("agent", "--acp", "--login")
    assert methods["sso"].kind == "_vendor_sso" and methods["sso"].raw["url"] == "https://example.invalid"


async def test_a_refused_session_raises_authentication_required_with_the_methods(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=INIT, errors={"session/new": REFUSAL}) as (client, _):
            with pytest.raises(AuthenticationRequired) as info:
                await client.new_session(str(tmp_path))
    error = info.value
    assert isinstance(error, AuthRequired) and error.code == -32000  # still the JSON-RPC error it came as
    assert error.method == "session/new" and error.data == {"reason": "no token"}
    assert [m.method_id for m in error.methods] == [m["id"] for m in METHODS]


async def test_a_refused_prompt_fails_the_turn_with_authentication_required(tmp_path: Path) -> None:
    prompts = [{"error": REFUSAL}, {"updates": [chunk("agent_message_chunk", "ok")]}, {"error": REFUSAL}]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=INIT, prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            with pytest.raises(AuthenticationRequired) as info:
                await conversation.chat_to_completion("hi")
            assert info.value.method == "session/prompt"
            await client.auth.login("agent-login")
            assert (await conversation.chat_to_completion("again")).text == "ok"
            with pytest.raises(AuthenticationRequired):
                await conversation.session.send_prompt("raw")  # the raw handle says the same
    assert [m["params"] for m in sent(log) if m.get("method") == "authenticate"] == [{"methodId": "agent-login"}]


async def test_authenticate_refuses_terminal_and_unknown_methods(tmp_path: Path) -> None:
    """ACP1-014: a terminal method is never passed to ``authenticate``; env_var ones are (v1 agents read the
    variable from their own environment when asked)."""
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=INIT) as (client, log):
            for method_id in ("tty", "sso"):
                with pytest.raises(CapabilityNotSupported):
                    await client.auth.login(method_id)
            with pytest.raises(ValueError, match="not advertised"):
                await client.auth.login("nope")
            await client.auth.login("api-key")
    assert [m["params"]["methodId"] for m in sent(log) if m.get("method") == "authenticate"] == ["api-key"]


def _cli(tmp_path: Path, *args: str, **script: Any) -> subprocess.CompletedProcess[str]:
    agent = shlex.join(v1_argv(tmp_path / "agent.log", **script))
    where = [] if args[0] == "login" else ["--cwd", str(tmp_path)]  # login has no --cwd: the agent runs here
    return subprocess.run(
        [sys.executable, "-m", "acp_session", *args, "--agent", agent, *where],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )


def test_the_cli_says_how_to_log_in_and_exits_8(tmp_path: Path) -> None:
    proc = _cli(tmp_path, "chat", "hi", initialize=INIT, errors={"session/new": REFUSAL})
    assert proc.returncode == 8, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "acp-session: the agent needs a login (session/new was refused)"
    assert "set X_KEY or Y_KEY in the environment" in lines[1]
    assert any("terminal login ran" in line and "(Log in with the CLI)" in line for line in lines)
    assert any("run in a terminal: A=1 " in line and "--login   (Terminal)" in line for line in lines)
    assert any(line.strip().startswith("or run: acp-session login agent-login --agent") for line in lines)
    assert len(lines) <= 6


def test_the_cli_json_error_record(tmp_path: Path) -> None:
    proc = _cli(tmp_path, "chat", "--json", "hi", initialize=INIT, errors={"session/new": REFUSAL})
    assert proc.returncode == 8
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["event"] == "error" and record["error_type"] == "AuthenticationRequired"
    assert record["data"] == {"reason": "no token"}
    assert {m["id"]: m["kind"] for m in record["login_methods"]}["api-key"] == "env_var"


def test_acp_session_login(tmp_path: Path) -> None:
    several = _cli(tmp_path, "login", initialize=INIT)
    assert several.returncode == 2 and "name one" in several.stderr and "agent-login" in several.stderr
    agent = _cli(tmp_path, "login", "agent-login", initialize=INIT)
    assert agent.returncode == 0, agent.stderr
    assert "logged in (Log in)" in agent.stdout + agent.stderr
    log = [json.loads(line) for line in (tmp_path / "agent.log").read_text().splitlines()]
    assert {"methodId": "agent-login"} in [m.get("params") for m in log if m.get("method") == "authenticate"]
    terminal = _cli(tmp_path, "login", "cli-login", initialize=INIT)
    assert terminal.returncode == 0 and "terminal login ran" in terminal.stdout
    missing = _cli(tmp_path, "login", "api-key", initialize=INIT)
    assert missing.returncode == 8 and "set X_KEY or Y_KEY" in missing.stderr

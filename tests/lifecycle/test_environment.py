"""Which environment a spawned agent gets (issue 20, 4): inherit (default), minimal, or an explicit mapping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.transport.environment import agent_environment

# An agent that answers initialize with its own environment in agentInfo._meta, then stays for session/new.
AGENT = r"""
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        info = {"name": "env-agent", "version": "1", "_meta": {"env": dict(os.environ)}}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


async def agent_env(tmp_path: Path, **spawn: object) -> dict[str, str]:
    script = tmp_path / "env_agent.py"
    script.write_text(AGENT)
    with anyio.fail_after(10):
        async with ClientBuilder().spawn([sys.executable, str(script)], **spawn) as client:  # type: ignore[arg-type]
            meta = client.agent.info.meta
    assert isinstance(meta, dict)
    return dict(meta["env"])


@pytest.mark.anyio
async def test_inherit_minimal_and_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_TEST_SECRET", "s3cret")
    monkeypatch.setenv("ACP_TEST_KEY", "k3y")
    monkeypatch.setenv("LC_TIME", "C")
    inherited = await agent_env(tmp_path)
    assert inherited["ACP_TEST_SECRET"] == "s3cret"  # the documented default: everything
    minimal = await agent_env(tmp_path, env_policy="minimal", pass_env=["ACP_TEST_KEY"])
    assert "ACP_TEST_SECRET" not in minimal and minimal["ACP_TEST_KEY"] == "k3y"
    assert minimal["PATH"] == os.environ["PATH"] and minimal["LC_TIME"] == "C"
    assert set(minimal) <= {*os.environ} | {"PATH"}
    explicit = await agent_env(tmp_path, env={"PATH": os.environ["PATH"], "ONLY": "this"})
    assert explicit.get("ONLY") == "this" and "ACP_TEST_SECRET" not in explicit and "HOME" not in explicit


def test_policy_values() -> None:
    assert agent_environment("inherit") is None
    assert agent_environment({"A": "1"}) == {"A": "1"}
    with pytest.raises(ValueError, match="env policy"):
        agent_environment("everything")  # type: ignore[arg-type]


def test_cli_env_minimal_hides_secrets(tmp_path: Path) -> None:
    """``acp-session ... --env minimal --pass-env NAME``: the agent sees the named variable, not the others."""
    seen = tmp_path / "seen.json"
    script = tmp_path / "dump_agent.py"
    script.write_text(f"import json, os\njson.dump(dict(os.environ), open({str(seen)!r}, 'w'))\n")
    env = {**os.environ, "ACP_TEST_SECRET": "s3cret", "ACP_TEST_KEY": "k3y"}
    agent = f"{sys.executable} {script}"
    command = [sys.executable, "-m", "acp_session", "sessions", "--agent", agent, "--cwd", str(tmp_path)]
    proc = subprocess.run(
        [*command, "--env", "minimal", "--pass-env", "ACP_TEST_KEY"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr  # the agent exits without answering
    dumped = json.loads(seen.read_text())
    assert dumped["ACP_TEST_KEY"] == "k3y" and "ACP_TEST_SECRET" not in dumped

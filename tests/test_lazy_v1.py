"""The v1 adapter and the v1 types are loaded only when an agent answers protocol version 1 (issue 31).

Checked in a fresh interpreter, so nothing another test imported counts: ``import acp_session``, and then a
whole v2 session against the reference agent with the default builder (which offers both versions, so the
``initialize`` offer carries v1's fields, built as plain JSON by ``protocol/v1_offer.py``), leave
``acp_session.protocol.v1`` and ``acp_session.schema.v1`` out of ``sys.modules``. A v1 agent loads them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

V1_SCRIPT_AGENT = Path(__file__).parent / "protocol" / "agents" / "v1_script_agent.py"
V1_MODULES = ("acp_session.protocol.v1", "acp_session.schema.v1")

PROBE = """
import sys
import anyio

V1 = {v1!r}

def loaded():
    return sorted(name for name in sys.modules if name in V1 or name.startswith(tuple(v + "." for v in V1)))

import acp_session
print("import", loaded())

from acp_session import ClientBuilder, Conversation

async def main():
    builder = ClientBuilder("lazy-v1", "1.0")
    async with Conversation.spawn({agent!r}, {cwd!r}, builder=builder) as conversation:
        response = await conversation.chat_to_completion({prompt!r})
        print("version", conversation.connection.protocol.version)
        print("tools", len(response.tool_calls), "files", len(response.files))
    print("session", loaded())

anyio.run(main, backend={backend!r})
"""


def probe(tmp_path: Path, agent: list[str], backend: str, prompt: str = "/edit") -> dict[str, str]:
    script = PROBE.format(v1=V1_MODULES, agent=agent, cwd=str(tmp_path), backend=backend, prompt=prompt)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return dict(line.split(" ", 1) for line in run.stdout.splitlines())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_v2_session_never_loads_the_v1_adapter(tmp_path: Path, backend: str) -> None:
    out = probe(tmp_path, [sys.executable, "-m", "acp_conformance.agent"], backend)
    assert out["import"] == "[]"
    assert out["version"] == "2"
    assert out["tools"] == "2 files 2"  # the /edit scenario's tool calls and the files they wrote
    assert out["session"] == "[]"


def test_a_v1_agent_loads_it(tmp_path: Path) -> None:
    """The probe can see the modules: against a v1 agent they are in ``sys.modules`` after the session."""
    script = json.dumps({"prompts": [{"updates": [], "result": {"stopReason": "end_turn"}}]})
    agent = [sys.executable, str(V1_SCRIPT_AGENT), str(tmp_path / "agent.log"), script]
    out = probe(tmp_path, agent, "asyncio", "hello")
    assert out["version"] == "1"
    assert "acp_session.protocol.v1.adapter" in out["session"] and "acp_session.schema.v1" in out["session"]

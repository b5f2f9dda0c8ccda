"""The reference agent's session store (``--store FILE``) shared by agent processes running at once: every
``session/new`` gets an id no other process gave out, and the file ends up listing every session (issue 50).

Real agent processes over real pipes: each is initialized, then all of them are sent their ``session/new``
requests at the same moment, each process's in one write, so their changes of the file overlap.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
PROCESSES = 4
SESSIONS = 25  # per process


class _Agent:
    def __init__(self, process: Process) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages))

    async def answers(self, count: int) -> dict[Any, dict[str, Any]]:
        """The next ``count`` responses by id (notifications skipped)."""
        assert self.process.stdout is not None
        found: dict[Any, dict[str, Any]] = {}
        while len(found) < count:
            while b"\n" not in self.buffer:
                self.buffer += await self.process.stdout.receive()
            line, _, self.buffer = self.buffer.partition(b"\n")
            message = json.loads(line)
            if "id" in message and "method" not in message:
                found[message["id"]] = message
        return found


@pytest.mark.anyio
async def test_concurrent_agent_processes_never_reuse_an_id_nor_lose_a_session(tmp_path: Path) -> None:
    store = tmp_path / "sessions.json"
    cwd = str(tmp_path)
    agents: list[_Agent] = []
    ids: list[str] = []
    initialize = {
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "t", "version": "1"}},
    }
    news = [{"id": n, "method": "session/new", "params": {"cwd": cwd}} for n in range(1, SESSIONS + 1)]

    async def open_sessions(agent: _Agent) -> None:
        await agent.send(*news)
        answers = await agent.answers(SESSIONS)
        for n in range(1, SESSIONS + 1):
            assert "result" in answers[n], answers[n]
            ids.append(answers[n]["result"]["sessionId"])

    with anyio.fail_after(60):
        try:
            for _ in range(PROCESSES):
                process = await anyio.open_process([*AGENT, "--store", str(store)], stderr=None)
                agents.append(_Agent(process))
                await agents[-1].send(initialize)
            for agent in agents:  # every process is up and initialized before any session is opened
                assert "result" in (await agent.answers(1))[0]
            async with anyio.create_task_group() as tg:
                for agent in agents:
                    tg.start_soon(open_sessions, agent)
        finally:
            for agent in agents:
                assert agent.process.stdin is not None
                await agent.process.stdin.aclose()
                await agent.process.wait()
    assert len(ids) == PROCESSES * SESSIONS
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert duplicates == [], f"session ids given out twice: {duplicates}"
    data = json.loads(store.read_text(encoding="utf-8"))
    stored = [s["sessionId"] for s in data["sessions"]]
    assert sorted(stored) == sorted(ids)  # no session lost from the file
    assert data["count"] == PROCESSES * SESSIONS
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind

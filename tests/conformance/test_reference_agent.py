"""The reference agent driven through the client layer, and its command line."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any

import anyio
import pytest

from acp_conformance.agent.scenarios import SCENARIOS
from acp_conformance.agent.server import BROKEN_MODES
from acp_conformance.runner.probe import spawn_probe
from acp_session import ClientBuilder
from acp_session.schema.types import AgentMessageChunk, StateUpdate, UpdateSessionNotification

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


def test_help_lists_scenarios_and_broken_modes() -> None:
    out = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, timeout=30, check=True).stdout
    for name in SCENARIOS:
        assert f"/{name}" in out
    for mode in BROKEN_MODES:
        assert mode in out


@pytest.mark.anyio
async def test_offline_reply_through_the_client_layer() -> None:
    updates: list[UpdateSessionNotification] = []
    idle = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        updates.append(note)
        if isinstance(note.update, StateUpdate) and note.update.state == "idle":
            idle.set()

    with tempfile.TemporaryDirectory() as cwd:
        async with ClientBuilder("test", "1").on_session_update(on_update).spawn(AGENT) as client:
            assert client.agent.info.name == "acp-reference-agent"
            session = await client.new_session(cwd)
            accepted = await session.send_prompt("hello")
            assert accepted.message_id
            with anyio.fail_after(10):
                await idle.wait()
            options = await session.set_config_option("mode", "ask")
            assert any(getattr(o, "current_value", None) == "ask" for o in options)
            await session.close()
    text = "".join(
        n.update.content.text
        for n in updates
        if isinstance(n.update, AgentMessageChunk) and hasattr(n.update.content, "text")
    )
    assert text.startswith("Hello! I am the ACP reference agent")
    idles = [n.update for n in updates if isinstance(n.update, StateUpdate) and n.update.state == "idle"]
    assert idles[-1].stop_reason == "end_turn"


@pytest.mark.anyio
async def test_batches_are_taken_as_the_older_docs_describe() -> None:
    """On stdio a batch is taken apart and its answers come back as one array; [] gets one -32600 with id null;
    a batch of notifications gets no reply at all (ACP-BATCH-201..204; the library alone refuses batches)."""
    notice = {"jsonrpc": "2.0", "method": "_test/notice", "params": {}}

    def request(id: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id, "method": "session/list", "params": {}}

    async with spawn_probe(AGENT, timeout=10) as probe:
        await probe.initialize(2)

        async def send(batch: list[Any], answered: bool = False) -> list[Any]:
            start = probe.mark
            await probe.send_raw(json.dumps(batch).encode())
            if answered:  # the requests run as tasks: their array may come after the barrier's answer
                await probe.wait_for(lambda f: f.raw.startswith(b"["), 10, start)
            await probe.barrier()
            return [json.loads(f.raw) for f in probe.frames[start:] if b"barrier" not in f.raw]

        assert await send([]) == [
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        ]
        assert await send([notice, notice]) == []
        (answer,) = await send([request("a"), notice, 1, request("b")], answered=True)
        assert isinstance(answer, list) and len(answer) == 3
        assert sorted(str(a["id"]) for a in answer) == ["None", "a", "b"]
        assert [a["error"]["code"] for a in answer if a["id"] is None] == [-32600]
        assert all(a["result"] == {"sessions": []} for a in answer if a["id"] is not None)


@pytest.mark.anyio
async def test_a_list_cursor_stays_valid_when_sessions_go_in_between() -> None:
    """A cursor the agent gave out is still a cursor after sessions were deleted (as other clients of one --listen
    server do all the time): past the end it gives an empty page, not -32602 'invalid cursor'."""
    with tempfile.TemporaryDirectory() as cwd:
        async with spawn_probe(AGENT, timeout=10) as probe:
            await probe.initialize(2)
            ids = [await probe.new_session(cwd) for _ in range(22)]
            first = await probe.call_ok("session/list", {"cwd": cwd}, rule="session-list.mdx")
            cursor = first["nextCursor"]
            assert len(first["sessions"]) == 20 and cursor
            for session_id in ids[:5]:
                await probe.call_ok("session/delete", {"sessionId": session_id}, rule="session-delete.mdx")
            rest = await probe.call_ok("session/list", {"cwd": cwd, "cursor": cursor}, rule="session-list.mdx")
            assert rest["sessions"] == [] and "nextCursor" not in rest
            bad = await probe.call("session/list", {"cwd": cwd, "cursor": "page:2"}, rule="session-list.mdx")
            assert bad.error_code == -32602

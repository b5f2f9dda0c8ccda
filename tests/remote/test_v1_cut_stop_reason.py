"""The stop reason of a protocol v1 turn cut by a reconnect (issue 51): v1 says it only in the ``session/prompt``
answer, lost with the cut connection. A ``session/load`` answer that gives it again (``_meta``
``acpSession/lastStopReason``, as ``acp-reference-agent --listen`` does) ends the turn with it; without it the
turn ends with ``STOP_REASON_UNKNOWN``, never ``None``. A small v1 agent over WebSocket that cuts its first
connection mid-turn; the reference agent's own runs are in ``tests/remote_server/test_reconnect_remote.py``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

from acp_session import ClientBuilder
from acp_session.conversation import STOP_REASON_UNKNOWN
from acp_session.protocol.base import LAST_STOP_REASON_META

from .hostile import Request, Served, send, serve, ws_accept, ws_read_text, ws_text

pytestmark = pytest.mark.anyio


def cutting_v1_agent(load_meta: dict[str, Any] | None) -> Any:
    """The first connection's prompt streams "partial" and the socket is cut; a later connection's
    ``session/load`` replays the turn (the whole reply) and answers with ``load_meta`` as ``_meta``."""

    async def handle(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        await send(stream, served, ws_accept(request))

        async def say(message: dict[str, Any]) -> None:
            await send(stream, served, ws_text(json.dumps({"jsonrpc": "2.0", **message}).encode()))

        async def update(session_update: str, text: str) -> None:
            content = {"type": "text", "text": text}
            params = {"sessionId": "s-1", "update": {"sessionUpdate": session_update, "content": content}}
            await say({"method": "session/update", "params": params})

        while True:
            try:
                message = json.loads(await ws_read_text(stream, buffer))
            except ValueError:  # the client's close frame
                return False
            method, rid = message.get("method"), message.get("id")
            if method == "initialize":
                capabilities = {"loadSession": True}
                await say({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": capabilities}})
            elif method == "session/new":
                await say({"id": rid, "result": {"sessionId": "s-1"}})
            elif method == "session/prompt":
                await update("agent_message_chunk", "partial")
                await anyio.sleep(0.2)
                return False  # the cut: the prompt's answer (and its stop reason) never comes
            elif method == "session/load":
                await update("user_message_chunk", "tell me")
                await update("agent_message_chunk", "partial reply")
                result: dict[str, Any] = {} if load_meta is None else {"_meta": load_meta}
                await say({"id": rid, "result": result})
            elif rid is not None:
                await say({"id": rid, "error": {"code": -32601, "message": "Method not found"}})

    return handle


@pytest.mark.parametrize(
    ("load_meta", "stop_reason"),
    [({LAST_STOP_REASON_META: "max_tokens"}, "max_tokens"), (None, STOP_REASON_UNKNOWN), ({}, STOP_REASON_UNKNOWN)],
)
async def test_a_cut_v1_turn_ends_with_the_stop_reason_the_load_gives_or_a_typed_unknown(
    load_meta: dict[str, Any] | None, stop_reason: str
) -> None:
    builder = ClientBuilder("v1-cut", "1.0").protocol_versions(1).reconnect(attempts=3, backoff=0.05)
    async with serve(cutting_v1_agent(load_meta)) as served:
        url = served.url.replace("http://", "ws://")
        async with builder.connect_url(url) as client:
            conversation = await client.start_conversation("/")
            with anyio.fail_after(30):
                response = await conversation.chat("tell me")
            assert client.reconnection.count == 1
    assert response.text == "partial reply"
    assert response.stop_reason == stop_reason

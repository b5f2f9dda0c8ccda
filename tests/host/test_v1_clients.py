"""Clients that offer only protocol version 1, served by ``acp-session serve`` whatever its agent speaks (the
reference agent run with ``--protocol-versions 1``, or as it is, speaking 2: the host keeps the session in the
model's words and says it again in v1's): acp-session's own client (``protocol_versions(1)``) over Streamable HTTP
and WebSocket does a turn, then a new client's ``session/load`` replays it; updates that v1 has no word for never
reach the client; an offer older than 1 is refused with ``-32022``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from acp_session import ClientBuilder, Conversation
from tests.remote_server.raw_client import RawAcp

from .conftest import REFERENCE_AGENT, Host

pytestmark = pytest.mark.anyio

V1_AGENT = f"{REFERENCE_AGENT} --protocol-versions 1"
AGENTS = {1: V1_AGENT, 2: REFERENCE_AGENT}
V1_KINDS = {
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "config_option_update",
    "usage_update",
    "session_info_update",
}


def _v1_client() -> ClientBuilder:
    return ClientBuilder("v1-editor", "1.0").protocol_versions(1)


@pytest.mark.parametrize("agent_version", [1, 2])
@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_v1_client_turn_then_a_load_replays_it(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, agent_version: int, anyio_backend: str
) -> None:
    host = start_host(agent=AGENTS[agent_version], backend=anyio_backend)
    assert host.wait_for("agent_started")["protocolVersion"] == agent_version
    cwd = str(tmp_path)
    with anyio.fail_after(60):
        async with _v1_client().connect_url(host.url_for(profile)) as client:
            assert client.protocol.version == 1
            conversation = await client.start_conversation(cwd)
            reply = await conversation.chat_to_completion("/slow 5")
            assert reply.stop_reason == "end_turn"
            assert reply.text.endswith("chunk 5. ")
            session_id = conversation.session_id
            assert session_id is not None
            first = [m.text for m in conversation.messages()]
        host.wait_for("turn_ended", sessionId=session_id)
        async with _v1_client().connect_url(host.url_for(profile)) as client:
            assert client.protocol.version == 1
            loaded = await Conversation.resume(client, session_id, cwd)
            assert [m.text for m in loaded.messages()] == first
            assert any("chunk 5." in text for text in first) and any("/slow 5" in text for text in first)
            again = await loaded.chat_to_completion("hello")
            assert again.stop_reason == "end_turn" and again.text
    assert host.wait_for("session_attached", sessionId=session_id)["replayed"] > 0


@pytest.mark.parametrize("agent_version", [1, 2])
async def test_the_v1_wire_holds_only_v1_updates(
    start_host: Callable[..., Host], tmp_path: Path, agent_version: int, anyio_backend: str
) -> None:
    """A raw v1 client over HTTP: ``initialize`` answers 1; every update of a turn with a tool call, a plan and a
    permission request has a v1 kind, chunks carry no message id, and the prompt's answer is its stop reason."""
    host = start_host(agent=AGENTS[agent_version], backend=anyio_backend)
    cwd = str(tmp_path)
    async with httpx.AsyncClient() as http, anyio.create_task_group() as tg:
        acp = RawAcp(http, host.url, tg)
        offer = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "raw-v1", "version": "1"}}
        response = await http.post(host.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": offer})
        init = response.json()
        assert init["result"]["protocolVersion"] == 1
        assert init["result"]["agentCapabilities"]["loadSession"] is True
        acp.connection_id = response.headers["acp-connection-id"]
        await acp.open_stream()
        new = await acp.call("session/new", {"cwd": cwd, "mcpServers": []})
        session = new["result"]["sessionId"]
        await acp.open_stream(session)
        for prompt in ("/tool", "/plan", "/permission"):
            params = {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]}
            await acp.send_request("session/prompt", params, session)
            while True:
                message = await acp.next_message(lambda s, m: "id" in m and ("result" in m or "method" in m))
                if message.get("method") == "session/request_permission":
                    params = message["params"]
                    assert set(params) == {"sessionId", "toolCall", "options"} and params["toolCall"]["title"]
                    answer = {"outcome": {"outcome": "selected", "optionId": params["options"][0]["optionId"]}}
                    await acp.post({"jsonrpc": "2.0", "id": message["id"], "result": answer}, session)
                    continue
                assert message["result"] == {"stopReason": "end_turn"}
                break
        updates = [m["params"]["update"] for _, m in acp.seen if m.get("method") == "session/update"]
        kinds = {u["sessionUpdate"] for u in updates}
        assert kinds <= V1_KINDS and {"tool_call", "plan", "agent_message_chunk"} <= kinds
        assert all("messageId" not in u for u in updates)
        tg.cancel_scope.cancel()


async def test_an_offer_older_than_version_1_is_refused(start_host: Callable[..., Host]) -> None:
    host = start_host()
    async with httpx.AsyncClient() as http:
        offer = {"protocolVersion": 0, "clientCapabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
        response = await http.post(host.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": offer})
    error = response.json()["error"]
    assert error["code"] == -32022 and error["data"]["supported"] == [1, 2]

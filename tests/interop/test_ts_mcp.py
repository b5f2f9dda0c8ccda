"""MCP server configs against the official TypeScript SDK 2.4.0's v2 ``agent()`` app (ts_agent.mjs --mcp):
the ``mcpServers`` it received are exactly ours and pass the SDK's own ``assertSupportedMcpServers``; resume sends
them again; a transport it does not advertise is refused here before anything is sent (issue 28)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.errors import InvalidParams
from acp_session.mcp import McpTransportNotSupported, acp_server, http_server, stdio_server

from .conftest import TS_AGENT

pytestmark = pytest.mark.anyio

STDIO = stdio_server("tools", sys.executable, ["-m", "some_server"], {"TOKEN": "t"})
HTTP = http_server("remote", "http://127.0.0.1:9/mcp", {"Authorization": "Bearer x"})


def received(record: Path, method: str, direction: str = "in") -> list[dict[str, Any]]:
    """Params of each ``method`` message the TS agent received (``out``: sent)."""
    lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    return [e["msg"]["params"] for e in lines if e["dir"] == direction and e["msg"].get("method") == method]


async def test_the_sdk_agent_receives_our_mcp_servers(node: str, tmp_path: Path) -> None:
    record = tmp_path / "ts_agent.jsonl"
    argv = [node, str(TS_AGENT), "--record", str(record), "--mcp", "stdio,http"]
    with anyio.fail_after(30):
        async with ClientBuilder().spawn(argv) as client:
            assert client.protocol.mcp_transports == {"stdio", "http"}
            conversation = await client.start_conversation(str(tmp_path), mcp_servers=[STDIO, HTTP])
            assert (await conversation.chat_to_completion("hello")).stop_reason == "end_turn"
            with pytest.raises(McpTransportNotSupported, match=r"session\.mcp\.acp"):
                await client.new_session(str(tmp_path), [acp_server("ours", "srv-1")])
            await conversation.reconnect(client, str(tmp_path), replay_from=None)
    expected = [
        {
            "type": "stdio",
            "name": "tools",
            "command": sys.executable,
            "args": ["-m", "some_server"],
            "env": [{"name": "TOKEN", "value": "t"}],
        },
        {
            "type": "http",
            "name": "remote",
            "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer x"}],
        },
    ]
    [new] = received(record, "session/new")  # the acp server was never sent
    assert new["mcpServers"] == expected
    [resumed] = received(record, "session/resume")
    assert resumed["mcpServers"] == expected


async def test_without_mcp_capabilities_nothing_is_sent(node: str, tmp_path: Path) -> None:
    record = tmp_path / "ts_agent.jsonl"
    with anyio.fail_after(30):
        async with ClientBuilder().spawn([node, str(TS_AGENT), "--record", str(record)]) as client:
            with pytest.raises(McpTransportNotSupported, match=r"session\.mcp\.stdio"):
                await Conversation.open(client, str(tmp_path), mcp_servers=[STDIO])
            assert received(record, "session/new") == []  # refused here, nothing sent
            # Past our check (a raw request), the SDK agent refuses it itself: -32602 naming the transport.
            raw = {"type": "stdio", "name": "x", "command": sys.executable, "args": [], "env": []}
            with pytest.raises(InvalidParams, match="Unsupported MCP server transport stdio"):
                await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": [raw]})
    assert [p["mcpServers"] for p in received(record, "session/new")] == [[raw]]


async def test_the_sdk_agent_calls_our_file_system_over_mcp_over_acp(node: str, tmp_path: Path) -> None:
    """The SDK's McpOverAcpCaller (MCP 2026-07-28 per request over ``mcp/message``) reaches the client's built-in
    server: a read inside the session's directory works, one outside is an MCP tool error, as for a v1 agent."""
    (tmp_path / "notes.txt").write_text("from the client's disk\n")
    record = tmp_path / "ts_agent.jsonl"
    argv = [node, str(TS_AGENT), "--record", str(record), "--mcp", "acp"]
    with anyio.fail_after(30):
        async with Conversation.spawn(argv, tmp_path, builder=ClientBuilder().with_file_system()) as conversation:
            path = json.dumps({"path": str(tmp_path / "notes.txt")})
            inside = await conversation.chat_to_completion(f"/mcp acp-session read_text_file {path}")
            outside = await conversation.chat_to_completion('/mcp acp-session read_text_file {"path": "/etc/hostname"}')
    [new] = received(record, "session/new")
    [builtin] = new["mcpServers"]
    assert builtin["type"] == "acp" and builtin["name"] == "acp-session" and builtin["serverId"]
    result = json.loads(inside.text)["result"]
    assert result["isError"] is False and result["content"][0]["text"] == "from the client's disk\n"
    refused = json.loads(outside.text)["result"]
    assert refused["isError"] is True and "outside the directories" in refused["content"][0]["text"]
    calls = received(record, "mcp/message", "out")  # the agent's requests to the client
    assert [(c["serverId"], c["method"]) for c in calls] == [(builtin["serverId"], "tools/call")] * 2

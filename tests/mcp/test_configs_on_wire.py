"""MCP server configs on the wire, both protocol versions: sent exactly, refused transports raise before
sending, and a resume (``Conversation.resume`` / ``reconnect``) sends them again (issue 28)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder, Conversation
from acp_session.mcp import (
    McpTransportNotSupported,
    acp_server,
    http_server,
    resolve_command,
    sse_server,
    stdio_server,
)
from acp_session.transcript import read_transcript
from tests.client.support import agent_argv, scripted
from tests.client.support import sent as sent_v2
from tests.protocol.support import sent as sent_v1
from tests.protocol.support import v1_agent, v1_argv

pytestmark = pytest.mark.anyio

SH = resolve_command("sh")
STDIO = stdio_server("files", "sh", ["-c", "exec cat"], {"TOKEN": "t"})
HTTP = http_server("remote", "http://127.0.0.1:9/mcp", {"Authorization": "Bearer x"})
SSE = sse_server("legacy", "http://127.0.0.1:9/sse")
ACP = acp_server("builtin", "srv-1")

STDIO_V2 = {
    "type": "stdio",
    "name": "files",
    "command": SH,
    "args": ["-c", "exec cat"],
    "env": [{"name": "TOKEN", "value": "t"}],
}
HTTP_WIRE = {
    "type": "http",
    "name": "remote",
    "url": "http://127.0.0.1:9/mcp",
    "headers": [{"name": "Authorization", "value": "Bearer x"}],
}
V2_CAPS = {"session": {"prompt": {}, "mcp": {"stdio": {}, "http": {}}}}


def params_of(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == method]


def test_a_command_given_by_name_is_resolved_on_path() -> None:
    assert os.path.isabs(STDIO.command) and os.access(STDIO.command, os.X_OK)
    with pytest.raises(ValueError, match="not found on PATH"):
        resolve_command("no-such-command-acp-session-test")


async def test_v2_configs_reach_the_agent_exactly(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with scripted(tmp_path, capabilities=V2_CAPS) as (client, log):
            assert client.protocol.mcp_transports == {"stdio", "http"}
            await client.new_session("/w", mcp_servers=[STDIO, HTTP])
    assert params_of(sent_v2(log), "session/new") == [{"cwd": "/w", "mcpServers": [STDIO_V2, HTTP_WIRE]}]


async def test_v2_refused_transports_raise_before_sending(tmp_path: Path) -> None:
    caps = {"session": {"prompt": {}, "mcp": {"stdio": {}}}}
    with anyio.fail_after(10):
        async with scripted(tmp_path, capabilities=caps) as (client, log):
            for server, capability in ((HTTP, "session.mcp.http"), (ACP, "session.mcp.acp"), (SSE, "session.mcp.sse")):
                with pytest.raises(McpTransportNotSupported) as caught:
                    await client.new_session("/w", mcp_servers=[STDIO, server])
                assert caught.value.capability == capability and caught.value.server == server.name
                assert isinstance(caught.value, CapabilityNotSupported) and capability in str(caught.value)
                with pytest.raises(McpTransportNotSupported):
                    await client.resume_session("s0", "/w", mcp_servers=[server])
        async with scripted(tmp_path, capabilities={"session": {"prompt": {}}}) as (client, _):
            with pytest.raises(McpTransportNotSupported, match=r"session\.mcp\.stdio"):
                await client.new_session("/w", mcp_servers=[STDIO])
    assert [m.get("method") for m in sent_v2(log)] == ["initialize", "initialize"]  # nothing else was sent


async def test_v2_acp_servers_pass_when_advertised(tmp_path: Path) -> None:
    caps = {"session": {"prompt": {}, "mcp": {"acp": {}}}}
    with anyio.fail_after(10):
        async with scripted(tmp_path, capabilities=caps) as (client, log):
            await client.new_session("/w", mcp_servers=[ACP])
    assert params_of(sent_v2(log), "session/new")[0]["mcpServers"] == [
        {"type": "acp", "name": "builtin", "serverId": "srv-1"}
    ]


async def test_v2_conversation_reconnect_and_resume_send_the_servers_again(tmp_path: Path) -> None:
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (first, second, third):
        folder.mkdir()
    with anyio.fail_after(15):
        async with ClientBuilder().spawn(agent_argv(first / "agent.log", capabilities=V2_CAPS)) as client:
            conversation = await client.start_conversation("/w", mcp_servers=[STDIO, HTTP])
            assert conversation.mcp_servers == [STDIO, HTTP]
        async with ClientBuilder().spawn(agent_argv(second / "agent.log", capabilities=V2_CAPS)) as client:
            await conversation.reconnect(client, "/w", replay_from=None)
        async with ClientBuilder().spawn(agent_argv(third / "agent.log", capabilities=V2_CAPS)) as client:
            resumed = await Conversation.resume(client, "s1", "/w", replay_from=None, mcp_servers=[HTTP])
            assert resumed.mcp_servers == [HTTP]
    assert params_of(sent_v2(first / "agent.log"), "session/new")[0]["mcpServers"] == [STDIO_V2, HTTP_WIRE]
    assert params_of(sent_v2(second / "agent.log"), "session/resume") == [
        {"sessionId": "s1", "cwd": "/w", "mcpServers": [STDIO_V2, HTTP_WIRE]}
    ]
    assert params_of(sent_v2(third / "agent.log"), "session/resume")[0]["mcpServers"] == [HTTP_WIRE]


def v1_init(**mcp: bool) -> dict[str, Any]:
    caps: dict[str, Any] = {"loadSession": True, "sessionCapabilities": {"resume": {}}}
    if mcp:
        caps["mcpCapabilities"] = mcp
    return {"protocolVersion": 1, "agentCapabilities": caps, "agentInfo": {"name": "v1", "version": "1"}}


STDIO_V1 = {k: v for k, v in STDIO_V2.items() if k != "type"}  # v1 stdio servers carry no type


async def test_v1_configs_reach_the_agent_in_v1_shape(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=v1_init(http=True, sse=True)) as (client, log):
            assert client.protocol.mcp_transports == {"stdio", "http", "sse"}
            await client.new_session("/w", mcp_servers=[STDIO, HTTP, SSE, stdio_server("bare", SH)])
    assert params_of(sent_v1(log), "session/new") == [
        {
            "cwd": "/w",
            "mcpServers": [
                STDIO_V1,
                HTTP_WIRE,
                {"type": "sse", "name": "legacy", "url": "http://127.0.0.1:9/sse", "headers": []},
                {"name": "bare", "command": SH, "args": [], "env": []},  # v1 requires args and env
            ],
        }
    ]


async def test_v1_refused_transports_raise_before_sending(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=v1_init()) as (client, log):
            assert client.protocol.mcp_transports == {"stdio"}  # every v1 agent takes stdio servers
            for server, flag in ((HTTP, "http"), (SSE, "sse"), (ACP, "acp")):
                with pytest.raises(McpTransportNotSupported) as caught:
                    await client.new_session("/w", mcp_servers=[server])
                assert caught.value.capability == f"agentCapabilities.mcpCapabilities.{flag}"
    # The v2 offer, then the v1 offer once the agent answered 1; no session/new reached the agent
    assert [m.get("method") for m in sent_v1(log)] == ["initialize", "initialize"]


async def test_v1_resume_and_load_send_the_servers_again(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    script = {"initialize": v1_init(http=True)}
    with anyio.fail_after(15):
        async with ClientBuilder().spawn(v1_argv(first / "agent.log", **script)) as client:
            conversation = await client.start_conversation("/w", mcp_servers=[STDIO, HTTP])
            await conversation.reconnect(client, "/w", replay_from=None)  # v1 session/resume
        async with ClientBuilder().spawn(v1_argv(second / "agent.log", **script)) as client:
            await conversation.reconnect(client, "/w")  # with replay: v1 session/load
    log1, log2 = sent_v1(first / "agent.log"), sent_v1(second / "agent.log")
    assert params_of(log1, "session/resume") == [{"sessionId": "s1", "cwd": "/w", "mcpServers": [STDIO_V1, HTTP_WIRE]}]
    assert params_of(log2, "session/load") == [{"sessionId": "s1", "cwd": "/w", "mcpServers": [STDIO_V1, HTTP_WIRE]}]


async def test_two_servers_of_one_name_raise_before_sending(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with scripted(tmp_path, capabilities=V2_CAPS) as (client, log):
            with pytest.raises(ValueError, match="two MCP servers are named 'files'"):
                await client.new_session("/w", mcp_servers=[STDIO, http_server("files", "http://127.0.0.1:9/")])
    assert [m.get("method") for m in sent_v2(log)] == ["initialize"]


async def test_a_fork_sends_its_servers_and_its_conversation_remembers_them(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    agent = [sys.executable, "-m", "acp_conformance.agent", "--preview"]  # serves session/fork
    with anyio.fail_after(20):
        async with ClientBuilder("t", "1").record_transcript(wire).spawn(agent) as client:
            parent = await client.start_conversation(str(tmp_path))
            forked = await parent.fork(str(tmp_path), mcp_servers=[STDIO])
            assert forked.mcp_servers == [STDIO] and parent.mcp_servers == []
    sent = [entry.message for entry in read_transcript(wire) if entry.direction == "out"]
    [fork] = params_of(sent, "session/fork")
    assert fork["mcpServers"] == [STDIO_V2]

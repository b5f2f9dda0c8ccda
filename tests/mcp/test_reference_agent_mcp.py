"""The reference agent's /mcp scenario: it connects to the MCP servers a session was given (a stdio server it
starts, an HTTP server on 127.0.0.1), lists their tools, calls one and reports it as a tool call (issue 28)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.mcp import McpTransportNotSupported, http_server, sse_server, stdio_server
from tests.mcp.support import ECHO_SERVER, REFERENCE, http_echo_server, mcp_calls, mcp_prompt

pytestmark = pytest.mark.anyio


def echo_stdio(name: str = "echo") -> object:
    return stdio_server(name, sys.executable, [ECHO_SERVER, "stdio"], {"MCP_TEST_GREETING": "from the config"})


async def test_mcp_calls_a_stdio_server_the_agent_starts(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with Conversation.spawn(REFERENCE, tmp_path, mcp_servers=[echo_stdio()]) as conversation:
            assert conversation.session.connection.protocol.mcp_transports == {"stdio", "http", "acp"}
            response = await conversation.chat_to_completion(mcp_prompt("echo", "echo", {"text": "hi there"}))
            assert response.stop_reason == "end_turn"
            await conversation.chat_to_completion(mcp_prompt("echo", "whoami", {}))
            [echo, whoami] = mcp_calls(conversation)
    assert echo.status == "completed" and echo.name == "echo"
    assert echo.raw_input == {"server": "echo", "transport": "stdio", "arguments": {"text": "hi there"}}
    assert echo.raw_output["content"] == ["echo: hi there"]
    assert echo.raw_output["tools"] == ["echo", "add", "whoami"]
    assert whoami.raw_output["content"] == ["from the config"]  # the env of the config reached the server


async def test_mcp_calls_an_http_server_on_localhost(tmp_path: Path) -> None:
    with http_echo_server() as url, anyio.fail_after(60):
        async with Conversation.spawn(REFERENCE, tmp_path, mcp_servers=[http_server("web", url)]) as conversation:
            await conversation.chat_to_completion(mcp_prompt("web", "add", {"a": 2, "b": 40}))
            await conversation.chat_to_completion("/mcp")  # no arguments: list every server's tools
            [add, listing] = mcp_calls(conversation)
    assert add.status == "completed" and add.raw_output["content"] == ["42"]
    assert add.raw_input["transport"] == "http"
    assert listing.raw_output == {"tools": ["echo", "add", "whoami"]}


async def test_mcp_servers_are_given_again_on_resume(tmp_path: Path) -> None:
    store = str(tmp_path / "store.json")
    agent = [*REFERENCE, "--store", store]
    with anyio.fail_after(60):
        async with ClientBuilder().spawn(agent) as client:
            first = await client.start_conversation(tmp_path, mcp_servers=[echo_stdio()])
            await first.chat_to_completion("hello")
            session_id = first.session_id
        async with ClientBuilder().spawn(agent) as client:
            assert session_id is not None
            resumed = await Conversation.resume(client, session_id, tmp_path, mcp_servers=[echo_stdio("again")])
            await resumed.chat_to_completion(mcp_prompt("again", "echo", {"text": "back"}))
            [call] = mcp_calls(resumed)[-1:]
    assert call.raw_output["content"] == ["echo: back"]


async def test_an_unreachable_server_fails_its_tool_call_and_sse_is_refused(tmp_path: Path) -> None:
    dead = http_server("dead", "http://127.0.0.1:9/mcp")
    with anyio.fail_after(60):
        async with Conversation.spawn(REFERENCE, tmp_path, mcp_servers=[dead]) as conversation:
            await conversation.chat_to_completion(mcp_prompt("dead", "echo", {"text": "x"}))
            [call] = mcp_calls(conversation)
            assert call.status == "failed"
            with pytest.raises(McpTransportNotSupported, match=r"session\.mcp\.sse"):
                await conversation.session.connection.new_session(tmp_path, [sse_server("old", "http://x")])

"""MCP servers a client gives on ``session/resume`` reach the agent through ``acp-session serve``: the host, which
has the session live on the agent, sends the agent ``session/resume`` with them (the complete set, no replay), so the
reference agent's ``/mcp`` then calls the test MCP server; a client that resumes with none leaves them in place;
over Streamable HTTP and WebSocket, the host on the test's backend."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.mcp import stdio_server
from tests.mcp.support import ECHO_SERVER, mcp_calls, mcp_prompt

from .conftest import Host

pytestmark = pytest.mark.anyio


def _url(host: Host, profile: str) -> str:
    return host.url if profile == "http" else host.url.replace("http://", "ws://")


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_mcp_servers_given_on_resume_reach_the_agent(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = _url(host, profile)
    cwd = str(tmp_path)
    echo = stdio_server("echo", sys.executable, [ECHO_SERVER, "stdio"], {"MCP_TEST_GREETING": "from the resume"})
    with anyio.fail_after(90):
        async with ClientBuilder("first", "1.0").connect_url(url) as client:
            first = await client.start_conversation(cwd)
            session_id = first.session_id
            assert session_id is not None
            none = await first.chat_to_completion("/mcp")
            assert none.text == "This session has no MCP servers."
        async with ClientBuilder("second", "1.0").connect_url(url) as client:
            second = await Conversation.resume(client, session_id, cwd, mcp_servers=[echo])
            reply = await second.chat_to_completion(mcp_prompt("echo", "echo", {"text": "hi there"}))
            assert reply.stop_reason == "end_turn"
            [call] = mcp_calls(second)
            assert call.status == "completed" and call.raw_output["content"] == ["echo: hi there"]
        assert host.wait_for("session_mcp_servers", sessionId=session_id)["servers"] == ["echo"]
        async with ClientBuilder("third", "1.0").connect_url(url) as client:
            third = await Conversation.resume(client, session_id, cwd, replay_from=None)  # gives none
            await third.chat_to_completion(mcp_prompt("echo", "whoami", {}))
            [whoami] = mcp_calls(third)
            assert whoami.status == "completed" and whoami.raw_output["content"] == ["from the resume"]
    # A resume with none changed nothing: one change in all.
    assert len([e for e in host.events if e["event"] == "session_mcp_servers"]) == 1

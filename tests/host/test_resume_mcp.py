"""MCP servers a client gives on ``session/resume`` reach the agent through ``acp-session serve``: the host, which
has the session live on the agent, sends the agent ``session/resume`` with them (the complete set, no replay), so the
reference agent's ``/mcp`` then calls the test MCP server; a client that resumes with none leaves them in place;
a version 1 client's ``session/load`` with ``mcpServers`` does the same; a restarted agent gets each session's
servers back when the host resumes the session on it. Over Streamable HTTP and WebSocket, the host on the test's
backend."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.mcp import stdio_server
from acp_session.schema.types import Notice, UpdateSessionNotification
from tests.mcp.support import ECHO_SERVER, mcp_calls, mcp_prompt

from .conftest import REFERENCE_AGENT, Host

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_mcp_servers_given_on_resume_reach_the_agent(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
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


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_mcp_servers_given_on_a_v1_clients_load_reach_the_agent(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    """A version 1 client (and agent): ``session/load`` with ``mcpServers`` gives the session its servers."""
    host = start_host(agent=f"{REFERENCE_AGENT} --protocol-versions 1", backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    echo = stdio_server("echo", sys.executable, [ECHO_SERVER, "stdio"], {"MCP_TEST_GREETING": "from the load"})
    with anyio.fail_after(90):
        async with ClientBuilder("v1-first", "1.0").protocol_versions(1).connect_url(url) as client:
            assert client.protocol.version == 1
            first = await client.start_conversation(cwd)
            session_id = first.session_id
            assert session_id is not None
            assert (await first.chat_to_completion("/mcp")).text == "This session has no MCP servers."
        async with ClientBuilder("v1-second", "1.0").protocol_versions(1).connect_url(url) as client:
            second = await Conversation.resume(client, session_id, cwd, mcp_servers=[echo])  # v1: session/load
            reply = await second.chat_to_completion(mcp_prompt("echo", "whoami", {}))
            assert reply.stop_reason == "end_turn" and reply.text == "echo.whoami: from the load"
    loaded = [e for e in host.events if e["event"] == "session_attached" and e["replayed"] > 0]
    assert len(loaded) == 1  # the second client's session/load, which replays the history
    assert host.wait_for("session_mcp_servers", sessionId=session_id)["servers"] == ["echo"]


async def test_a_restarted_agent_gets_each_sessions_mcp_servers_back(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    """The agent dies (SIGKILL): the host starts it again and resumes the session with the servers the clients gave
    (the reference agent keeps its sessions in its ``--store`` file, but not their MCP servers)."""
    store = tmp_path / "agent-sessions.json"
    host = start_host(agent=f"{REFERENCE_AGENT} --store {shlex.quote(str(store))}", backend=anyio_backend)
    pid = (await host.event("agent_started"))["pid"]
    cwd = str(tmp_path)
    echo = stdio_server("echo", sys.executable, [ECHO_SERVER, "stdio"], {"MCP_TEST_GREETING": "from session/new"})
    restarted = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        if isinstance(note.update, Notice) and note.update.title.startswith("The agent was restarted"):
            restarted.set()  # sent once the host resumed the session on the new process

    with anyio.fail_after(90):
        builder = ClientBuilder("restart-mcp", "1.0").on_session_update(on_update)
        async with builder.connect_url(host.url) as client:
            conversation = await client.start_conversation(cwd, mcp_servers=[echo])
            ask = mcp_prompt("echo", "whoami", {})
            assert (await conversation.chat_to_completion(ask)).text == "echo.whoami: from session/new"
            os.kill(pid, signal.SIGKILL)
            again = await host.event("agent_started", 2)
            assert again["pid"] != pid
            await restarted.wait()
            reply = await conversation.chat_to_completion(ask)
            assert reply.stop_reason == "end_turn" and reply.text == "echo.whoami: from session/new"
    assert not [e for e in host.events if e["event"] in ("session_read_only", "agent_failed")]

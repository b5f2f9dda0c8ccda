"""Conversation.disconnect() and who owns the connection; connection / conversation_id (asyncio and trio).

A conversation owns its connection only when ``Conversation.spawn`` made it: then ``disconnect()`` (and leaving
the block) closes the session and the connection. Every other conversation borrows its caller's connection:
``disconnect()`` closes the session only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation, SessionClosed
from acp_session.conversation import ChatDone, ChatError, ChatStart, StateChanged
from acp_session.errors import ConnectionClosed, RequestCancelled
from tests.conversation.chat_support import chat_agent, chat_agent_argv
from tests.conversation.test_streams_e2e import stream_agent, stream_agent_argv
from tests.protocol.support import sent_methods, v1_agent

pytestmark = pytest.mark.anyio


def client_methods(tmp_path: Path) -> list[str]:
    """Methods the client sent to the stream agent (its log of every line it read)."""
    lines = (tmp_path / "agent.log").read_text().splitlines()
    return [json.loads(line).get("method", "<answer>") for line in lines if line.strip()]


async def test_a_borrowed_connection_stays_open_for_the_callers_other_sessions(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            assert not conversation.owns_connection
            assert conversation.connection is client
            assert conversation.conversation_id == conversation.session_id == conversation.session.session_id
            steps = conversation.receive_steps()
            await conversation.chat_to_completion("hello")
            await conversation.disconnect()
            assert client_methods(tmp_path).count("session/close") == 1
            assert not client.rpc.closed  # borrowed: left open
            assert [s async for s in steps][-1].event.completed  # type: ignore[attr-defined]
            with pytest.raises(SessionClosed):
                conversation.chat("again")
            with pytest.raises(SessionClosed):
                await conversation.send("again")
            assert [s async for s in conversation.receive_steps()] == []  # ends at once
            await conversation.disconnect()  # idempotent: nothing sent
            assert client_methods(tmp_path).count("session/close") == 1
            assert conversation.is_idle and conversation.connection is client
            await conversation.wait_for_idle()
            # The caller's connection still serves other sessions.
            other = await client.start_conversation("/w")
            assert (await other.chat_to_completion("hello")).text == "ok"


async def test_disconnect_during_a_turn_the_agent_cancels_it_and_a_held_prompt_is_withdrawn(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            running = conversation.chat("busy")
            events: list[Any] = []

            async def read() -> None:
                async for event in running:
                    events.append(event)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                while not any(isinstance(e, ChatStart) for e in events):
                    await anyio.sleep(0.01)
                held = await conversation.send("hello")  # held by the agent behind the busy turn
                await conversation.disconnect()
            done = events[-1]
            assert isinstance(done, ChatDone) and done.response.stop_reason == "cancelled"  # the agent's own end
            with pytest.raises(RequestCancelled):
                await held
            assert conversation.pending_turns == [] and conversation.is_idle
            assert not client.rpc.closed


async def test_turns_the_agent_never_ended_end_with_session_closed(tmp_path: Path) -> None:
    """The chat agent answers session/close without ending the running work: the turn ends locally."""
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            turn = conversation.chat("busy 5")
            await anyio.sleep(0.1)
            await conversation.disconnect()
            with pytest.raises(SessionClosed):
                await turn
            assert conversation.is_idle and conversation.pending_turns == []


async def test_an_owned_connection_is_closed_by_disconnect(tmp_path: Path) -> None:
    with anyio.fail_after(15):
        async with Conversation.spawn(stream_agent_argv(tmp_path), "/w") as conversation:
            assert conversation.owns_connection
            client = conversation.connection
            chunks = conversation.receive_chunks()
            assert (await conversation.chat_to_completion("hello")).text == "ok"
            await conversation.disconnect()
            assert client.rpc.closed
            assert client.rpc.transport.returncode is not None  # type: ignore[attr-defined]  # the agent was shut down
            assert [c.text async for c in chunks] == ["ok"]  # type: ignore[attr-defined]
            with pytest.raises(SessionClosed):
                conversation.chat("again")
            await conversation.disconnect()  # idempotent
        assert client_methods(tmp_path).count("session/close") == 1


async def test_leaving_the_spawn_block_disconnects_even_on_an_error(tmp_path: Path) -> None:
    with anyio.fail_after(15):
        with pytest.raises(KeyError):
            async with Conversation.spawn(stream_agent_argv(tmp_path), "/w") as conversation:
                await conversation.chat_to_completion("hello")
                raise KeyError("boom")
        assert conversation.connection.rpc.closed
        assert client_methods(tmp_path).count("session/close") == 1
        async with Conversation.spawn(stream_agent_argv(tmp_path), "/w", builder=ClientBuilder("x", "2")) as second:
            pass
        assert second.connection.rpc.closed and client_methods(tmp_path).count("session/close") == 2


async def test_a_conversation_moved_by_reconnect_owns_no_connection(tmp_path: Path) -> None:
    """reconnect() onto the caller's connection: the spawned one is closed with its block, the session on the
    caller's connection is left alone (it is the caller's now)."""
    with anyio.fail_after(15):
        async with chat_agent(tmp_path) as client:
            async with Conversation.spawn(chat_agent_argv(tmp_path), "/w") as conversation:
                await conversation.chat_to_completion("stream 1")
                spawned = conversation.connection
                await conversation.reconnect(client, "/w")
                assert not conversation.owns_connection and conversation.connection is client
            assert spawned.rpc.closed and not client.rpc.closed
            response = await conversation.chat_to_completion("stream 2")  # still attached on the caller's
            assert response.text == "w0 w1 " and conversation.turn_count == 2
            await conversation.disconnect()
            assert not client.rpc.closed


async def test_a_lost_connection_is_no_error(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            steps = conversation.receive_steps()
            events = [event async for event in conversation.chat("die")]
            assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, ConnectionClosed)
            with pytest.raises(ConnectionClosed):
                async for _ in steps:
                    pass
            await conversation.disconnect()  # nothing to close: the agent is gone
            with pytest.raises(ConnectionClosed):  # what ended it
                conversation.chat("again")
            assert conversation.is_idle


async def test_a_v1_agent_without_session_close_is_forgotten_locally(tmp_path: Path) -> None:
    prompts = [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}]}] * 2
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            steps = conversation.receive_steps()
            assert (await conversation.chat_to_completion("one")).text == "hi"
            await conversation.disconnect()
            assert "session/close" not in sent_methods(log) and "session/cancel" not in sent_methods(log)
            got = [s async for s in steps]
            assert isinstance(got[-1].event, StateChanged) and got[-1].event.completed
            with pytest.raises(SessionClosed):
                conversation.chat("two")
            other = await client.start_conversation(str(tmp_path))
            assert (await other.chat_to_completion("two")).text == "hi"

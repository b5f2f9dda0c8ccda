"""A subprocess agent killed under a reconnect policy: restarted with the same command, the session resumed.

The reference agent runs with ``--store FILE``, so the restarted process has the session and its finished turns
(it saves at the end of each turn): the turn cut by the kill is gone with the process and ends with ``TurnLost``,
the next turn works, and the history is the agent's, with no duplicate and nothing the agent lost.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.client.reconnect import Reconnected, Reconnecting, ReconnectPolicy
from acp_session.client_errors import ReconnectFailed, SessionLost, TurnLost
from acp_session.conversation import ChatError, ChatText

pytestmark = pytest.mark.anyio


def agent(store: Path | None) -> list[str]:
    argv = [sys.executable, "-m", "acp_conformance.agent"]
    return argv + (["--store", str(store)] if store is not None else [])


def quick(version: int = 2, **changes: Any) -> ClientBuilder:
    """A builder with a fast reconnect policy that speaks only protocol ``version`` (the agent speaks both)."""
    options: dict[str, Any] = {"attempts": 3, "backoff": 0.05, "deadline": 60.0, "idle_timeout": None}
    options.update(changes)
    return ClientBuilder("reconnect-test", "1.0").protocol_versions(version).reconnect(**options)


VERSIONS = pytest.mark.parametrize("version", [1, 2])


def agent_pid(conversation: Conversation) -> int:
    transport: Any = conversation.session.connection.rpc.transport
    return int(getattr(transport, "inner", transport).pid)


async def kill_on_first_text(conversation: Conversation, prompt: str, sig: int = signal.SIGKILL) -> list[Any]:
    """Iterate a turn, killing the agent as soon as the first text arrives; every event of the turn."""
    events: list[Any] = []
    pid = agent_pid(conversation)
    async for event in conversation.chat(prompt):
        events.append(event)
        if isinstance(event, ChatText) and len([e for e in events if isinstance(e, ChatText)]) == 2:
            os.kill(pid, sig)
    return events


def assert_no_duplicates(conversation: Conversation) -> None:
    ids = Counter((m.role, m.message_id) for m in conversation.messages())
    assert [key for key, count in ids.items() if count > 1] == []
    calls = Counter(c.tool_call_id for c in conversation.state.tool_calls.values())
    assert [key for key, count in calls.items() if count > 1] == []


@VERSIONS
async def test_sigkill_mid_turn_restarts_resumes_and_the_next_turn_works(tmp_path: Path, version: int) -> None:
    events_seen: list[Any] = []
    async with quick(version).spawn(agent(tmp_path / "store.json")) as client:
        client.reconnection.on_event(events_seen.append)
        conversation = await client.start_conversation(str(tmp_path))
        first = await conversation.chat_to_completion("hello")
        assert first.stop_reason == "end_turn"
        old_pid = agent_pid(conversation)
        events = await kill_on_first_text(conversation, "/slow 60")
        kinds = [e.kind for e in events]
        assert kinds[0] == "start" and "reconnecting" in kinds and "reconnected" in kinds
        assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, TurnLost)
        assert agent_pid(conversation) != old_pid  # the same command, started again
        second = await conversation.chat_to_completion("/tool")
        assert second.stop_reason == "end_turn" and second.tool_calls
        third = await conversation.chat_to_completion("again")
        assert third.text == "You said: again"
        texts = [(m.role, m.text) for m in conversation.messages()]
        assert texts[0] == ("user", "hello") and texts[1] == ("agent", first.text)
        assert ("user", "/slow 60") not in texts  # the agent lost that turn: so does the history
        assert texts[-2:] == [("user", "again"), ("agent", "You said: again")]
        assert_no_duplicates(conversation)
        assert [type(e) for e in events_seen] == [Reconnecting, Reconnected]
        assert client.reconnection.count == 1 and client.protocol.version == version


@VERSIONS
async def test_chat_to_completion_through_a_kill_ends_with_turn_lost_and_history_is_the_agents(
    tmp_path: Path, version: int
) -> None:
    async with quick(version).spawn(agent(tmp_path / "store.json")) as client:
        conversation = await client.start_conversation(str(tmp_path))
        await conversation.chat_to_completion("one")
        await conversation.chat_to_completion("two")
        pid = agent_pid(conversation)
        turn = conversation.chat("/slow 80")
        with anyio.fail_after(30):
            while not any(m.role == "agent" and m.text for m in conversation.messages()[4:]):
                await anyio.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(60), pytest.raises(TurnLost):
            await turn
        assert [m.text for m in conversation.messages() if m.role == "user"] == ["one", "two"]
        again = await conversation.chat_to_completion("three")
        assert again.text == "You said: three"
        assert [m.text for m in conversation.messages() if m.role == "user"] == ["one", "two", "three"]
        assert_no_duplicates(conversation)


@VERSIONS
async def test_the_agent_lost_the_session_ends_the_turn_with_session_lost(tmp_path: Path, version: int) -> None:
    async with quick(version).spawn(agent(None)) as client:  # memory only: the restarted agent knows no session
        conversation = await client.start_conversation(str(tmp_path))
        events = await kill_on_first_text(conversation, "/slow 60")
        kinds = [e.kind for e in events]
        assert kinds[-2:] == ["session_lost", "error"]
        error = events[-1].error
        assert isinstance(error, SessionLost) and error.session_id == conversation.session_id
        # The connection itself is back: a new conversation works on it.
        other = await client.start_conversation(str(tmp_path))
        assert (await other.chat_to_completion("hi there")).text == "You said: hi there"


FLAKY_AGENT = textwrap.dedent(
    """
    import os, runpy, sys, time
    marker = sys.argv.pop(1)
    mode = sys.argv.pop(1)
    if os.path.exists(marker):
        if mode == "hang":
            time.sleep(3600)
        sys.exit(3)
    open(marker, "w").close()
    sys.argv[0] = "acp-reference-agent"
    runpy.run_module("acp_conformance.agent", run_name="__main__")
    """
)


def flaky_agent(tmp_path: Path, mode: str) -> list[str]:
    """The reference agent the first time; afterwards a process that exits at once (``exit``) or never answers
    (``hang``)."""
    script = tmp_path / "flaky_agent.py"
    script.write_text(FLAKY_AGENT)
    return [sys.executable, str(script), str(tmp_path / "started"), mode]


async def test_every_attempt_failing_ends_the_turn_with_reconnect_failed(tmp_path: Path) -> None:
    async with quick(attempts=3).spawn(flaky_agent(tmp_path, "exit")) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(60):
            events = await kill_on_first_text(conversation, "/slow 60")
        assert [e.attempt for e in events if e.kind == "reconnecting"] == [1, 2, 3]
        error = events[-1].error
        assert isinstance(error, ReconnectFailed) and not error.deadline_reached and error.attempts == 3
        with pytest.raises(ReconnectFailed):
            conversation.chat("anyone there?")


async def test_the_deadline_ends_the_turn_with_a_typed_error_and_no_hang(tmp_path: Path) -> None:
    builder = quick(attempts=50, deadline=2.0, initialize_timeout=30.0)
    async with builder.spawn(flaky_agent(tmp_path, "hang"), grace_period=0.1, terminate_timeout=0.2) as client:
        conversation = await client.start_conversation(str(tmp_path))
        started = anyio.current_time()
        with anyio.fail_after(30):
            events = await kill_on_first_text(conversation, "/slow 60")
        error = events[-1].error
        assert isinstance(error, ReconnectFailed) and error.deadline_reached
        assert anyio.current_time() - started < 20


async def test_a_silent_agent_is_detected_by_the_liveness_probe(tmp_path: Path) -> None:
    builder = quick(idle_timeout=0.5, probe_timeout=0.5)
    async with builder.spawn(agent(tmp_path / "store.json"), grace_period=0.1, terminate_timeout=0.2) as client:
        conversation = await client.start_conversation(str(tmp_path))
        await conversation.chat_to_completion("hello")
        with anyio.fail_after(60):
            events = await kill_on_first_text(conversation, "/slow 60", signal.SIGSTOP)  # alive but silent
        assert "reconnecting" in [e.kind for e in events]
        assert isinstance(events[-1].error, TurnLost)
        assert (await conversation.chat_to_completion("back")).text == "You said: back"


async def test_without_a_policy_a_killed_agent_still_ends_the_turn_with_connection_closed(tmp_path: Path) -> None:
    from acp_session.errors import ConnectionClosed

    async with ClientBuilder("no-reconnect", "1.0").spawn(agent(tmp_path / "store.json")) as client:
        assert client.reconnection.policy is None  # off by default for a subprocess agent
        conversation = await client.start_conversation(str(tmp_path))
        events = await kill_on_first_text(conversation, "/slow 60")
        assert isinstance(events[-1].error, ConnectionClosed)
        assert not isinstance(events[-1].error, ReconnectFailed)


@VERSIONS
async def test_a_bare_session_is_resumed_too_and_its_next_prompt_goes_to_the_new_agent(
    tmp_path: Path, version: int
) -> None:
    async with quick(version).spawn(agent(tmp_path / "store.json")) as client:
        session = await client.new_session(str(tmp_path))
        assert (await session.send_prompt("first")).message_id
        old = client.rpc
        transport: Any = old.transport
        os.kill(int(transport.pid), signal.SIGKILL)
        with anyio.fail_after(30):
            while client.reconnection.count < 1:
                await anyio.sleep(0.02)
        assert client.rpc is not old and not client.rpc.closed
        assert client.session(session.session_id) == session
        assert (await session.send_prompt("second")).message_id


def test_the_policy_is_typed_frozen_and_checked() -> None:
    policy = ReconnectPolicy(attempts=4, backoff=1.0, max_backoff=3.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.attempts = 9  # type: ignore[misc]
    for bad in ({"attempts": 0}, {"jitter": 2.0}, {"deadline": -1.0}, {"idle_timeout": 0.0}):
        with pytest.raises(ValueError):
            ReconnectPolicy(**bad)  # type: ignore[arg-type]
    jittered = ReconnectPolicy(backoff=1.0, jitter=0.5)
    assert all(0.5 <= jittered.delay(1) <= 1.5 for _ in range(50))
    assert ClientBuilder().reconnect_policy() is None
    assert ClientBuilder().reconnect(attempts=2).reconnect_policy() == ReconnectPolicy(attempts=2)

    class RemoteDialer:
        reconnect_by_default = True

    assert ClientBuilder().reconnect_policy(RemoteDialer()) == ReconnectPolicy()  # type: ignore[arg-type]
    assert ClientBuilder().reconnect(False).reconnect_policy(RemoteDialer()) is None  # type: ignore[arg-type]


async def kill_when_the_reply_starts(conversation: Conversation, prompt: str) -> None:
    """Send ``prompt``, kill the agent once its reply has text, and wait for the turn's end (whatever it is)."""
    pid = agent_pid(conversation)
    before = len(conversation.messages())
    turn = conversation.chat(prompt)
    with anyio.fail_after(30):
        while not any(m.role == "agent" and m.text for m in conversation.messages()[before:]):
            await anyio.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(60), pytest.raises((TurnLost, SessionLost)):
        await turn


@VERSIONS
async def test_streams_across_a_lost_turn_get_a_marker_counting_what_the_agent_forgot(
    tmp_path: Path, version: int
) -> None:
    """The restarted agent lost the turn: the streams cannot be told what it did, only that the two entries they
    were shown (its user message, its partial reply) are gone (``StreamReconnected.forgotten``); then the agent's
    idle state, and the next turn live."""
    from acp_session.conversation import StreamReconnected, TextChunk
    from tests.helpers.stream_content import streamed

    async with quick(version).spawn(agent(tmp_path / "store.json")) as client:
        conversation = await client.start_conversation(str(tmp_path))
        await conversation.chat_to_completion("one")

        async def turns() -> None:
            await kill_when_the_reply_starts(conversation, "/slow 80")
            assert (await conversation.chat_to_completion("two")).text == "You said: two"

        reader = await streamed(conversation, turns)
    for items in (reader.step_items, reader.chunk_items):
        markers = [item for item in items if isinstance(item, StreamReconnected)]
        assert markers == [StreamReconnected(1, forgotten=2)]
    after = reader.step_items[reader.step_items.index(markers[0]) + 1 :]
    caught_up = [step for step in after if step.replayed]
    assert [type(step.event).__name__ for step in caught_up] == ["StateChanged"]
    assert caught_up[0].event.state == "idle"
    live = after[len(caught_up) :]
    assert live and not any(step.replayed for step in live)  # then the next turn, live
    texts = [c.text for c in reader.chunk_items if isinstance(c, TextChunk)]
    assert texts[-1] == "You said: two" and not any(c.replayed for c in reader.chunk_items if isinstance(c, TextChunk))


@VERSIONS
async def test_streams_end_with_session_lost_when_the_agent_lost_the_session(tmp_path: Path, version: int) -> None:
    from acp_session.conversation import TextChunk

    async with quick(version).spawn(agent(None)) as client:  # memory only: the restarted agent knows no session
        conversation = await client.start_conversation(str(tmp_path))
        steps, chunks = conversation.receive_steps(), conversation.receive_chunks()
        await kill_when_the_reply_starts(conversation, "/slow 60")
        for stream in (steps, chunks):
            items: list[Any] = []
            with anyio.fail_after(10), pytest.raises(SessionLost):
                async for item in stream:
                    items.append(item)
            assert items  # what was buffered came first
        assert any(isinstance(item, TextChunk) for item in items)

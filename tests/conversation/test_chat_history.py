"""Conversation history, trimming, idle waiting, replay idempotence and reconnect over real pipes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session.conversation import ChatError, ChatText, Conversation, Message
from acp_session.errors import ConnectionClosed
from tests.conversation.chat_support import chat_agent

pytestmark = pytest.mark.anyio

CLIENT_COUNTERS = ("completions", "turn_usage_total", "last_turn_usage")


def agent_view(conversation: Conversation) -> dict[str, Any]:
    """The folded state minus this client's own counters (completions seen live are not replayed)."""
    snapshot = conversation.state.to_snapshot()
    for key in CLIENT_COUNTERS:
        snapshot.pop(key)
    return snapshot


async def test_history_trimming_keeps_turn_indices_right(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w", max_history_size=4)
            for n in range(3):
                await conversation.chat_to_completion(f"stream {n + 1}")
            history = conversation.history()
            assert len(history) == 4 and len(conversation.state.timeline) == 4  # user, thought, agent per turn
            assert [type(e).__name__ for e in history] == ["Message"] * 4
            assert conversation.turn_start_indices == [1]
            assert [m.text for m in conversation.messages() if m.role == "user"] == ["stream 3"]
            assert conversation.turn_count == 3 and conversation.last_response == "w0 w1 w2 "
            conversation.clear_history()
            assert conversation.history() == [] and conversation.turn_count == 0
            await conversation.chat_to_completion("stream 1")
            assert conversation.turn_start_indices == [0] and conversation.turn_count == 1
        unlimited = Conversation(max_history_size=0)
        default = Conversation()
        assert unlimited.max_history_size == 0 and default.max_history_size == 10_000
        with pytest.raises(ValueError):
            Conversation(max_history_size=-1)


async def test_large_limits_trim_in_batches_but_history_shows_exactly_the_limit(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w", max_history_size=16)
            for _ in range(7):
                await conversation.chat_to_completion("stream 1")
            assert len(conversation.history()) == 16
            assert 16 <= len(conversation.state.timeline) <= 18
            starts = conversation.turn_start_indices
            assert all(isinstance(conversation.history()[i], Message) for i in starts)
            assert [conversation.history()[i].role for i in starts] == ["user"] * len(starts)  # type: ignore[union-attr]


async def test_wait_for_idle_follows_the_turn(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            await conversation.wait_for_idle()
            turn = conversation.chat("busy 0.2")
            assert not conversation.is_idle
            await conversation.wait_for_idle()
            assert turn.finished and conversation.state.is_idle


async def test_replay_is_idempotent_and_reconnect_continues(tmp_path: Path) -> None:
    """ACP2-055: resume replays history and then a state snapshot; applying it changes nothing already
    known, and after the agent died a new process's replay brings the conversation to the agent's state."""
    with anyio.fail_after(20):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            session_id = conversation.session_id
            assert session_id is not None
            await conversation.chat_to_completion("tools")
            before = agent_view(conversation)
            await conversation.reconnect(client, "/w")  # same connection: a pure replay
            assert agent_view(conversation) == before
            await conversation.reconnect(client, "/w")
            assert agent_view(conversation) == before and conversation.turn_count == 1
            turn = conversation.chat("slow")
            async for event in turn:
                if isinstance(event, ChatText) and event.text == "working":
                    await conversation.cancel()
            assert turn.response.cancelled
            second_call = list(conversation.state.tool_calls.values())[-1]
            assert second_call.status == "cancelled"  # marked locally; the agent never finished it
            events = [event async for event in conversation.chat("die 5")]
            assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, ConnectionClosed)
            turns_before = conversation.turn_count
        async with chat_agent(tmp_path) as second, chat_agent(tmp_path) as third:
            await conversation.reconnect(second, "/w")
            fresh = await Conversation.resume(third, session_id, "/w")  # what the agent holds, nothing else
            assert agent_view(conversation) == agent_view(fresh)
            assert conversation.state.tool_calls[second_call.tool_call_id].status == "in_progress"  # as reported
            assert conversation.turn_count == turns_before  # replayed messages were already known
            assert fresh.turn_count == turns_before == 3
            response = await conversation.chat_to_completion("stream 2")
            assert response.text == "w0 w1 " and conversation.turn_count == turns_before + 1

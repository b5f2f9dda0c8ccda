"""One name for a session's history (issue 52 item 7): ``history()``, a method returning a new list oldest first,
on ``Conversation``, on its ``SessionState`` (also one ``load_transcript`` folded) and on a ``Subagent``;
``SessionState.timeline`` is the same entries, live, without a copy. Against the reference agent over real
pipes, on asyncio and trio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acp_session import ClientBuilder
from acp_session.conversation import Message, SessionState, ToolCall
from acp_session.schema import AgentMessageChunk, TextContent
from acp_session.transcript import load_transcript

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


async def test_history_is_one_method_on_the_conversation_its_state_a_transcript_and_a_subagent(
    tmp_path: Path,
) -> None:
    record = tmp_path / "wire.jsonl"
    async with ClientBuilder().record_transcript(record).spawn(AGENT) as client:
        conversation = await client.start_conversation(str(tmp_path))
        await conversation.chat_to_completion("/tool")
        await conversation.chat_to_completion("/subagent")
        state = conversation.state
        history = conversation.history()
        assert [type(e) for e in history[:3]] == [Message, ToolCall, Message]
        assert state.history() == history == list(state.timeline)
        for copy in (conversation.history(), state.history()):  # each call a new list: the caller may change it
            copy.clear()
        assert state.history() == history and len(state.timeline) == len(history)
        (child,) = conversation.subagents.values()
        assert child.history() == child.state.history() == list(child.state.timeline) != []
        child.history().clear()
        assert child.history() != []
        live_child = child.history()
    recorded = load_transcript(record)
    assert isinstance(recorded, SessionState)
    assert [(type(e), getattr(e, "text", None)) for e in recorded.history()] == [
        (type(e), getattr(e, "text", None)) for e in history
    ]
    (recorded_child,) = recorded.subagents.values()
    assert len(recorded_child.history()) == len(live_child)


def test_timeline_is_the_live_list_and_history_a_copy() -> None:
    state = SessionState("s")
    timeline = state.timeline
    history = state.history()
    state.apply(AgentMessageChunk(message_id="m1", content=TextContent(text="hi")))
    assert [e.text for e in timeline if isinstance(e, Message)] == ["hi"]  # the same list, grown
    assert history == []  # the copy taken before is unchanged
    assert [e.text for e in state.history() if isinstance(e, Message)] == ["hi"]

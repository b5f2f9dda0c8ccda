"""Subagent (child) sessions (Preview) against the reference agent's ``/subagent`` scenario, over real pipes on
asyncio and trio: the tree (``conversation.subagents``, each child with history, state and usage), the chat
events of a child's start and end, cancelling a child that advertises it, replay on resume, and live state equal
to ``load_transcript`` of the same wire."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder
from acp_session.client.connection import hub_of
from acp_session.conversation import (
    ChatDone,
    ChatEvent,
    ChatSubagentEnd,
    ChatSubagentStart,
    ChatSubagentUpdate,
    Conversation,
    Message,
    SessionMessageEntry,
    Subagent,
    ToolCall,
    ToolCallChanged,
)
from acp_session.schema import unstable as mu
from acp_session.transcript import load_transcript

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


def only_child(conversation: Conversation) -> Subagent:
    (child,) = conversation.subagents.values()
    return child


def check_child_after_one_task(conversation: Conversation, child: Subagent) -> None:
    assert child.parent_session_id == conversation.session_id
    assert (child.title, child.description) == ("Explorer", "Lists the files of the workspace")
    assert child.cancellable and child.meta is not None and "parentToolCallId" in child.meta
    # The parent's tool call links the child (its content names the child session).
    assert child.tool_call_id == child.meta["parentToolCallId"]
    assert conversation.state.subagents_of(child.tool_call_id) == [child]
    history = child.history()
    assert [type(entry) for entry in history] == [SessionMessageEntry, ToolCall, Message]
    task, call, reply = history
    assert isinstance(task, SessionMessageEntry) and task.text == "List the files of the workspace."
    assert task.sender_session_id == conversation.session_id and task.sender_message_id is not None
    assert isinstance(call, ToolCall) and call.status == "completed" and call.title == "Listing files"
    assert isinstance(reply, Message) and reply.text == "Found 2 files."
    assert child.state.state == "idle" and child.state.stop_reason == "end_turn"
    assert isinstance(child.reported_state, mu.StateUpdate) and child.reported_state.state == "idle"
    # The parent's transcript holds both views of the messages between the sessions.
    views = list(conversation.state.session_messages.values())
    assert [(v.recipient_session_id, v.sender_session_id) for v in views] == [
        (child.session_id, None),
        (None, child.session_id),
    ]
    assert views[0].recipient_message_id == task.message_id and views[1].text == "The subagent found 2 files."


async def test_a_subagent_tree_with_history_state_usage_and_chat_events(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            events: list[ChatEvent] = [event async for event in conversation.chat("/subagent")]
        child = only_child(conversation)
        check_child_after_one_task(conversation, child)
        usage = child.usage
        assert usage is not None and (usage.total_tokens, usage.input_tokens, usage.output_tokens) == (30, 20, 10)
        assert child.state.completions == 1
        # The parent's own usage is its own turn's, not the child's.
        done = events[-1]
        assert isinstance(done, ChatDone) and done.response.usage is not None
        assert done.response.usage.total_tokens == 70 and done.response.text == "The subagent found 2 files."
        starts = [e for e in events if isinstance(e, ChatSubagentStart)]
        ends = [e for e in events if isinstance(e, ChatSubagentEnd)]
        assert [s.subagent for s in starts] == [child] and [e.subagent for e in ends] == [child]
        assert ends[0].stop_reason == "end_turn" and ends[0].usage == usage
        updates = [e for e in events if isinstance(e, ChatSubagentUpdate)]
        assert updates and all(u.subagent is child for u in updates)
        assert any(
            isinstance(u.change, ToolCallChanged) and u.change.tool_call.title == "Listing files" for u in updates
        )
        order = [type(e) for e in events if isinstance(e, (ChatSubagentStart, ChatSubagentUpdate, ChatSubagentEnd))]
        assert order[0] is ChatSubagentStart and order[-1] is ChatSubagentEnd
        # The child's updates never leak into the parent's own timeline.
        assert all(not isinstance(e, Message) or e.text != "Found 2 files." for e in conversation.history())
        # A second delegation makes a second child; each keeps its own history.
        with anyio.fail_after(20):
            await conversation.chat_to_completion("/subagent")
        assert len(conversation.subagents) == 2
        assert all(len(c.history()) == 3 for c in conversation.subagents.values())


async def test_cancelling_a_child_that_advertises_it(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            turn = conversation.chat("/subagent slow")
            while not conversation.subagents or not only_child(conversation).state.tool_calls:
                await anyio.sleep(0.01)
            child = only_child(conversation)
            assert child.state.state == "running"
            await conversation.cancel_subagent(child.session_id)
            response = await turn
        assert response.stop_reason == "end_turn" and response.text == "The subagent was cancelled."
        assert child.state.stop_reason == "cancelled"
        (call,) = child.state.tool_calls.values()
        assert call.status == "cancelled"
        assert child.usage is None  # a cancelled child reported no usage
        with pytest.raises(KeyError):
            await conversation.cancel_subagent("no-such-child")


async def test_a_child_without_the_cancel_capability_is_not_cancelled(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            await conversation.chat_to_completion("/subagent")
        child = only_child(conversation)
        child.capabilities = None  # as if the parent had cleared it ...
        hub_of(client).session_track(child.session_id).cancellable = False  # ... which the connection tracks
        with pytest.raises(CapabilityNotSupported, match=r"capabilities\.cancel"):
            await conversation.cancel_subagent(child.session_id)
        with pytest.raises(CapabilityNotSupported, match=r"capabilities\.cancel"):
            await client.session(child.session_id).cancel_active_work()


async def test_replay_on_resume_rebuilds_the_tree(tmp_path: Path) -> None:
    store = tmp_path / "store.json"
    agent = [*AGENT, "--store", str(store)]
    async with ClientBuilder("t", "1").spawn(agent) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            await conversation.chat_to_completion("/subagent")
        session_id = conversation.session_id
        assert session_id is not None
        live = conversation.state
        before = live.to_snapshot()
    # Another agent process: a fresh conversation resumed with replay holds the same tree.
    async with ClientBuilder("t", "1").spawn(agent) as client:
        with anyio.fail_after(20):
            resumed = await Conversation.resume(client, session_id, tmp_path)
        child = only_child(resumed)
        check_child_after_one_task(resumed, child)
        assert child.state.completions == 0  # a replayed idle is never a completion
        # And replaying onto the live state that saw it changes nothing.
        with anyio.fail_after(20):
            await conversation.reconnect(client, tmp_path)
        assert conversation.state.to_snapshot() == before


async def test_live_state_equals_load_transcript_of_the_same_wire(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    seen: list[Any] = []
    builder = ClientBuilder("t", "1").record_transcript(path).on_session_update(seen.append)  # note-by-note path
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(30):
            await conversation.chat_to_completion("/subagent")
            await conversation.chat_to_completion("/turn-usage")
            turn = conversation.chat("/subagent slow")
            while len(conversation.subagents) < 2 or not list(conversation.subagents.values())[1].state.tool_calls:
                await anyio.sleep(0.01)
            await conversation.cancel_subagent(list(conversation.subagents)[1])
            await turn
        live = conversation.state
    loaded = load_transcript(path)
    assert loaded == live
    assert loaded.to_snapshot()["subagents"] == live.to_snapshot()["subagents"]
    assert len(loaded.subagents) == 2
    assert any(n.session_id != live.session_id for n in seen)  # the application saw the children's updates too


async def test_v1_subagents_only_when_asked_and_folded_the_same_way(tmp_path: Path) -> None:
    from tests.protocol.support import chunk, sent, v1_agent

    child = {"sessionId": "child-1", "title": "Helper", "capabilities": {"cancel": {}}}
    prompts = [
        {
            "updates": [
                {"sessionUpdate": "subagent_update", **child},
                chunk("agent_message_chunk", "Delegated."),
            ],
            "result": {"stopReason": "end_turn"},
        }
    ]
    with anyio.fail_after(20):
        async with v1_agent(tmp_path, ClientBuilder("t", "1").with_subagents(), prompts=prompts) as (client, log):
            conversation = await client.start_conversation(tmp_path)
            response = await conversation.chat_to_completion("go")
            assert response.text == "Delegated."
            (subagent,) = conversation.subagents.values()
            assert subagent.session_id == "child-1" and subagent.title == "Helper" and subagent.cancellable
    offer = sent(log)[1]["params"]  # the v1 offer, sent once the agent answered 1 to the v2 one
    assert offer["clientCapabilities"]["subagents"] == {}
    (tmp_path / "plain").mkdir()
    async with v1_agent(tmp_path / "plain") as (client, log2):
        pass
    assert "subagents" not in sent(log2)[1]["params"]["clientCapabilities"]

"""A hostile or unusual v1 agent (scripted, over real pipes) cannot corrupt a session's history (issue 26).

Each test names the issue's item it covers: 1 (a flood of session ids), 3 (v2-only updates from a v1 agent),
4 (one prompt answer ends its own turn only), 8 (``wait_for_idle`` after the agent is killed).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.client.connection import hub_of
from acp_session.conversation import Conversation
from acp_session.conversation.entities import Message, UnknownEntry
from acp_session.errors import AcpError, ConnectionClosed
from acp_session.protocol.v1.adapter import MAX_UNOPENED_SESSIONS, V1Protocol
from acp_session.schema import RequestPermissionRequest
from tests.protocol.support import chunk, sent, text, v1_agent

pytestmark = pytest.mark.anyio

MODES = {
    "modes": {
        "currentModeId": "ask",
        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
    }
}


def said(conversation: Conversation) -> list[tuple[str, str, str]]:
    """(role, message id, text) of every message in history, in order."""
    return [(e.role, e.message_id, e.text) for e in conversation.history() if isinstance(e, Message)]


# -- item 1: a flood of session ids ---------------------------------------------------------------------------


LOADABLE = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
REPLAY = [chunk("user_message_chunk", "before"), chunk("agent_message_chunk", "earlier answer")]


@pytest.mark.parametrize("opened_by", ["session/new", "session/load"])
async def test_a_flood_of_unknown_session_ids_leaves_the_open_session_intact(tmp_path: Path, opened_by: str) -> None:
    """5 000 updates naming sessions nobody opened, between two turns of a session the client created or
    loaded: the session keeps its message ids (turn 2's prompt is a new message, its reply is its own), its modes
    (``set_mode`` still sends v1's ``session/set_mode``), and the records kept for the invented ids stay bounded
    (ACP1-012: ``session/update``)."""
    flood = 5000
    prompts = [
        {"updates": [chunk("agent_message_chunk", "reply one")], "others": flood},
        {"updates": [chunk("agent_message_chunk", "reply two")]},
    ]
    script: dict[str, Any] = {"prompts": prompts, "new": MODES}
    before: list[tuple[str, str]] = []
    if opened_by == "session/load":
        script.update(initialize=LOADABLE, load=REPLAY, load_result=MODES)
        before = [("user", "before"), ("agent", "earlier answer")]
    with anyio.fail_after(30):
        async with v1_agent(tmp_path, **script) as (client, log):
            if opened_by == "session/new":
                conversation = await client.start_conversation(str(tmp_path))
            else:
                conversation = await Conversation.resume(client, "s1", str(tmp_path))
            first = await conversation.chat_to_completion("one")
            while client.unknown_session_updates < flood:  # every invented id was read before turn 2
                await anyio.sleep(0.01)
            protocol = client.protocol
            assert isinstance(protocol, V1Protocol)
            assert protocol.unopened_session_records <= MAX_UNOPENED_SESSIONS
            second = await conversation.chat_to_completion("two")
            await conversation.session.set_mode("code")
    assert (first.text, second.text) == ("reply one", "reply two")
    assert second.stop_reason == "end_turn" and conversation.turn_count == 2 + len(before) // 2
    assert first.message_id != second.message_id
    assert [(role, text) for role, _, text in said(conversation)] == [
        *before,
        ("user", "one"),
        ("agent", "reply one"),
        ("user", "two"),
        ("agent", "reply two"),
    ]
    assert len({message_id for _, message_id, _ in said(conversation)}) == 4 + len(before)
    set_mode = [m for m in sent(log) if m.get("method", "").startswith("session/set_")]
    assert [(m["method"], m["params"]) for m in set_mode] == [
        ("session/set_mode", {"sessionId": "s1", "modeId": "code"})
    ]


# -- item 3: updates only v2 has ----------------------------------------------------------------------------

V2_ONLY = [
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    {"sessionUpdate": "user_message", "messageId": "user-1", "content": [text("not what the user said")]},
    {"sessionUpdate": "agent_message", "messageId": "agent-9", "content": [text("a whole message")]},
    {"sessionUpdate": "agent_thought", "messageId": "thought-9", "content": [text("a whole thought")]},
    {"sessionUpdate": "terminal_update", "terminalId": "term-1", "command": "rm -rf /"},
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "term-1", "data": "out"},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1", "content": text("x")},
]


async def test_updates_only_v2_has_are_ignored_not_folded(tmp_path: Path) -> None:
    """A v1 agent sending ``state_update`` (idle) and ``user_message`` (with the id of the user's prompt) in the
    middle of a turn neither ends the turn early nor rewrites the prompt: v1's turn is its ``session/prompt``
    (ACP1-017: the stop reason comes with the answer) and v1 has neither kind. Each is ignored without ending the
    message being streamed; an update v2 does not know either is still kept raw."""
    vendor = {"sessionUpdate": "_vendor_progress", "percent": 50}
    prompts = [
        {"updates": [chunk("agent_message_chunk", "first "), *V2_ONLY, chunk("agent_message_chunk", "half"), vendor]},
        {"updates": [*V2_ONLY, chunk("agent_message_chunk", "second")]},
    ]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            first = await conversation.chat_to_completion("one")
            second = await conversation.chat_to_completion("two")
            await conversation.wait_for_idle()
            protocol = client.protocol
            assert isinstance(protocol, V1Protocol) and protocol.ignored_updates == 2 * len(V2_ONLY)
    assert (first.text, second.text) == ("first half", "second")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert [(role, text) for role, _, text in said(conversation)] == [
        ("user", "one"),
        ("agent", "first half"),
        ("user", "two"),
        ("agent", "second"),
    ]
    assert conversation.turn_count == 2 and not conversation.state.terminals
    unknown = [e for e in conversation.history() if isinstance(e, UnknownEntry)]
    assert [u.tag for u in unknown] == ["_vendor_progress"]


# -- item 4: each prompt answer ends its own turn only ------------------------------------------------------

PERMISSION = {
    "sessionId": "s1",
    "toolCall": {"toolCallId": "t1", "title": "Run it"},
    "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
}


async def test_an_agent_that_cancels_a_prompt_when_the_next_comes(tmp_path: Path) -> None:
    """Prompt A runs; B is sent; the agent answers A ``cancelled`` (ACP1-017) and later B ``end_turn`` (as
    gemini-cli does). A's turn ends with A's text and stop reason, B's with B's; while B is pending (the agent
    asks a permission in the middle of it) the conversation is not idle, and history is A, its reply, B, its reply."""
    seen: dict[str, Any] = {}
    release = anyio.Event()

    async def on_permission(request: RequestPermissionRequest) -> str:
        seen["idle"] = conversation.is_idle
        seen["a"], seen["b"] = turn_a.status, turn_b.status
        waiter = anyio.Event()

        async def wait() -> None:
            await conversation.wait_for_idle()
            waiter.set()

        hub_of(conversation.session.connection).start_soon(wait)
        await anyio.sleep(0.05)
        seen["waited"] = waiter.is_set()
        await release.wait()
        return "yes"

    prompts = [
        {"updates": [chunk("agent_message_chunk", "A text")], "hold": True, "result": {"stopReason": "cancelled"}},
        {
            "updates": [chunk("agent_message_chunk", "B ")],
            "ask": {"method": "session/request_permission", "params": PERMISSION},
            "after": [chunk("agent_message_chunk", "text")],
        },
    ]
    builder = ClientBuilder().on_request_permission(on_permission)
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, builder, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            turn_a = conversation.chat("A")
            turn_b = conversation.chat("B")
            response_a = await turn_a
            assert not conversation.is_idle and turn_b.status != "finished"
            while "waited" not in seen:
                await anyio.sleep(0.01)
            release.set()
            response_b = await turn_b
            await conversation.wait_for_idle()
    assert (response_a.text, response_a.stop_reason) == ("A text", "cancelled")
    assert (response_b.text, response_b.stop_reason) == ("B text", "end_turn")
    assert seen == {"idle": False, "a": "finished", "b": "started", "waited": False}
    assert [(role, text) for role, _, text in said(conversation)] == [
        ("user", "A"),
        ("agent", "A text"),
        ("user", "B"),
        ("agent", "B text"),
    ]
    assert conversation.turn_count == 2 and conversation.is_idle


async def test_a_later_prompt_answered_first_still_ends_only_its_own_turn(tmp_path: Path) -> None:
    """The agent answers B before A (both ``end_turn``): B's turn starts and ends after A's, with B's stop
    reason; A's turn is not ended by B's answer. (What B's agent streamed while A was unanswered is A's: the
    v1 wire does not say which prompt a chunk belongs to, docs/protocol-versions.md.)"""
    prompts = [
        {"updates": [chunk("agent_message_chunk", "A text")], "hold": True, "result": {"stopReason": "end_turn"}},
        {"updates": [], "held": "after", "result": {"stopReason": "max_tokens"}},
    ]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            turn_a = conversation.chat("A")
            turn_b = conversation.chat("B")
            response_a, response_b = await turn_a, await turn_b
            await conversation.wait_for_idle()
    assert (response_a.text, response_a.stop_reason) == ("A text", "end_turn")
    assert (response_b.text, response_b.stop_reason) == ("", "max_tokens")
    assert [(role, text) for role, _, text in said(conversation)] == [("user", "A"), ("agent", "A text"), ("user", "B")]


async def test_a_held_prompt_refused_never_starts(tmp_path: Path) -> None:
    """An agent that refuses B while A runs (an error answer, before A's): B fails, A goes on and ends with its
    own answer, and B never appears in history."""
    prompts = [
        {"updates": [chunk("agent_message_chunk", "A text")], "hold": True, "result": {"stopReason": "end_turn"}},
        {"held": "after", "error": {"code": -32000, "message": "busy"}},
    ]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            turn_a = conversation.chat("A")
            turn_b = conversation.chat("B")
            with pytest.raises(AcpError, match="busy"):
                await turn_b
            response_a = await turn_a
            await conversation.wait_for_idle()
    assert (response_a.text, response_a.stop_reason) == ("A text", "end_turn")
    assert [(role, text) for role, _, text in said(conversation)] == [("user", "A"), ("agent", "A text")]
    assert conversation.turn_count == 1


# -- item 8: wait_for_idle when the agent is killed ---------------------------------------------------------

KILLS = 10


async def outcome_of_waiting(conversation: Conversation, outcome: list[BaseException | None]) -> None:
    try:
        await conversation.wait_for_idle()
    except ConnectionClosed as exc:
        outcome.append(exc)
    else:
        outcome.append(None)


async def test_wait_for_idle_raises_connection_closed_every_time_the_agent_is_killed(tmp_path: Path) -> None:
    """A v1 agent killed in the middle of a turn: a ``wait_for_idle()`` already waiting and one called afterwards
    both raise ``ConnectionClosed``, and the turn fails with it, every time (the prompt's answer and the connection's
    end are both read from the one closed pipe; which the event loop runs first must not matter)."""
    prompts = [{"updates": [chunk("agent_message_chunk", "working")], "hold": True}]
    for attempt in range(KILLS):
        outcome: list[BaseException | None] = []
        with anyio.fail_after(10):
            async with v1_agent(tmp_path, prompts=prompts) as (client, _):
                conversation = await client.start_conversation(str(tmp_path))
                turn = conversation.chat("go")
                while not any(isinstance(e, Message) and e.text == "working" for e in conversation.history()):
                    await anyio.sleep(0.005)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(outcome_of_waiting, conversation, outcome)
                    await anyio.sleep(0.01)
                    os.kill(client.rpc.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
                with pytest.raises(ConnectionClosed):
                    await conversation.wait_for_idle()
                with pytest.raises(ConnectionClosed):
                    await turn
        assert len(outcome) == 1 and isinstance(outcome[0], ConnectionClosed), (attempt, outcome)

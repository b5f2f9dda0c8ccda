"""The v1 adapter through the public API: turns, updates, modes, sessions, auth and permissions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder
from acp_session.conversation import Conversation
from acp_session.conversation.entities import Message, ToolCall, UnknownEntry
from acp_session.errors import AuthRequired
from acp_session.protocol.v1.convert import V1_DIFF_META
from acp_session.schema import (
    AgentMessageChunk,
    Diff,
    RequestPermissionRequest,
    StateUpdate,
    UpdateSessionNotification,
    UserMessage,
)
from tests.protocol.support import chunk, sent, sent_methods, text, v1_agent

pytestmark = pytest.mark.anyio

TURN = [
    chunk("agent_thought_chunk", "thinking"),
    chunk("agent_message_chunk", "Let me "),
    chunk("agent_message_chunk", "look."),
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.txt", "kind": "edit", "status": "pending"},
    {"sessionUpdate": "usage_update", "used": 10, "size": 100},
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "completed",
        "title": None,
        "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "one\n", "newText": "two\n"}],
    },
    chunk("agent_message_chunk", "Done."),
    {"sessionUpdate": "plan", "entries": [{"content": "edit", "priority": "high", "status": "completed"}]},
    chunk("agent_message_chunk", "Given id.", messageId="given-1"),
]


async def test_a_v1_turn_folds_like_a_v2_turn(tmp_path: Path) -> None:
    """The user message and the turn states are synthesised; chunk runs become messages (ACP1-018)."""
    seen: list[UpdateSessionNotification] = []
    builder = ClientBuilder().on_session_update(seen.append)
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, builder, prompts=[{"updates": TURN, "result": {"stopReason": "end_turn"}}]) as (
            client,
            log,
        ):
            conversation = await client.start_conversation(str(tmp_path))
            response = await conversation.chat_to_completion("hello")
            await conversation.wait_for_idle()
    assert response.stop_reason == "end_turn" and response.message_id == "user-1"
    assert response.text == "Let me look.\n\nDone.\n\nGiven id."  # separate messages: a blank line between
    history = conversation.history()
    kinds = [(type(e).__name__, getattr(e, "role", None)) for e in history]
    assert kinds == [
        ("Message", "user"),
        ("Message", "thought"),
        ("Message", "agent"),
        ("ToolCall", None),
        ("Message", "agent"),
        ("Plan", None),
        ("Message", "agent"),
    ]
    user, thought, first, call, second, plan, third = history
    assert isinstance(user, Message) and user.text == "hello" and user.message_id == "user-1"
    assert isinstance(first, Message) and first.text == "Let me look."
    assert isinstance(third, Message) and third.message_id == "given-1"  # the agent's own id is kept
    assert len({m.message_id for m in (thought, first, second, third) if isinstance(m, Message)}) == 4
    assert isinstance(call, ToolCall) and call.status == "completed" and call.title == "Edit a.txt"  # null: unchanged
    diff = call.content[0]
    assert isinstance(diff, Diff) and diff.changes[0].path == "/w/a.txt"  # type: ignore[union-attr]
    assert diff.patch.text.startswith("diff --git a/w/a.txt b/w/a.txt")  # type: ignore[union-attr]
    assert "-one\n+two\n" in diff.patch.text  # type: ignore[union-attr]
    assert diff.meta[V1_DIFF_META] == {"path": "/w/a.txt", "oldText": "one\n", "newText": "two\n"}  # type: ignore[index]
    assert plan.entries[0].content == "edit"  # type: ignore[union-attr]
    assert conversation.turn_count == 1 and conversation.is_idle
    # The application's handler sees the same model updates, the synthesised ones included, in order.
    updates = [note.update for note in seen]
    assert isinstance(updates[0], UserMessage) and isinstance(updates[1], StateUpdate)
    assert updates[1].state == "running"
    assert isinstance(updates[-1], StateUpdate) and updates[-1].state == "idle"
    assert updates[-1].stop_reason == "end_turn"
    assert sum(isinstance(u, AgentMessageChunk) for u in updates) == 4
    prompt = next(m for m in sent(log) if m.get("method") == "session/prompt")
    assert prompt["params"] == {"sessionId": "s1", "prompt": [text("hello")]}
    new = next(m for m in sent(log) if m.get("method") == "session/new")
    assert new["params"] == {"cwd": str(tmp_path), "mcpServers": []}  # v1 requires mcpServers


async def test_an_error_answer_fails_the_turn_and_the_session_is_idle_again(tmp_path: Path) -> None:
    prompts = [
        {"updates": [chunk("agent_message_chunk", "partial")], "error": {"code": -32000, "message": "log in"}},
        {"updates": [chunk("agent_message_chunk", "ok")], "result": {"stopReason": "end_turn"}},
    ]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            with pytest.raises(AuthRequired):
                await conversation.chat_to_completion("first")
            await conversation.wait_for_idle()
            assert conversation.state.is_idle
            response = await conversation.chat_to_completion("second")
    assert response.text == "ok" and response.stop_reason == "end_turn"
    assert [m.text for m in conversation.messages()] == ["first", "partial", "second", "ok"]


async def test_each_prompt_starts_new_messages(tmp_path: Path) -> None:
    prompts = [{"updates": [chunk("agent_message_chunk", f"reply {n}")]} for n in range(3)]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            replies = [(await conversation.chat_to_completion(f"q{n}")).text for n in range(3)]
    assert replies == ["reply 0", "reply 1", "reply 2"]
    assert [m.role for m in conversation.messages()] == ["user", "agent"] * 3
    assert conversation.turn_count == 3


MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
MODELS = {
    "currentModelId": "small",
    "availableModels": [{"modelId": "small", "name": "S"}, {"modelId": "big", "name": "B"}],
}


def option(options: list[Any], config_id: str) -> Any:
    return next(o for o in options if o.config_id == config_id)


async def test_modes_and_models_are_config_options(tmp_path: Path) -> None:
    prompts = [{"updates": [{"sessionUpdate": "current_mode_update", "currentModeId": "ask"}]}]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, new={"modes": MODES, "models": MODELS}, prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            mode = option(conversation.state.config_options, "mode")
            assert (mode.category, mode.current_value, [o.value for o in mode.options]) == (
                "mode",
                "ask",
                ["ask", "code"],
            )
            assert option(conversation.state.config_options, "model").current_value == "small"
            assert (conversation.state.mode, conversation.state.model) == ("ask", "small")
            assert option(conversation.session.config_options, "mode").current_value == "ask"
            options = await conversation.session.set_mode("code")
            assert option(options, "mode").current_value == "code"
            assert option(conversation.session.config_options, "mode").current_value == "code"
            assert conversation.state.mode == "code"  # the answer is folded, before any update
            options = await conversation.session.set_config_option("model", "big")
            assert option(options, "model").current_value == "big" and option(options, "mode").current_value == "code"
            await conversation.chat_to_completion("go")  # the agent reports the mode back to ask
            assert conversation.state.mode == "ask"
            assert option(conversation.session.config_options, "mode").current_value == "ask"
    calls = [m for m in sent(log) if m.get("method", "").startswith("session/set_")]
    assert [(c["method"], c["params"]) for c in calls] == [
        ("session/set_mode", {"sessionId": "s1", "modeId": "code"}),
        ("session/set_model", {"sessionId": "s1", "modelId": "big"}),
    ]


async def test_agent_config_options_are_renamed_and_set_through_v1(tmp_path: Path) -> None:
    v1_option = {
        "id": "effort",
        "name": "Effort",
        "type": "select",
        "currentValue": "low",
        "options": [
            {"group": "g", "name": "G", "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]}
        ],
    }
    changed = {**v1_option, "currentValue": "high"}
    answers = {"session/set_config_option": {"configOptions": [changed]}}
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, new={"configOptions": [v1_option], "modes": MODES}, answers=answers) as (
            client,
            log,
        ):
            session = await client.new_session(str(tmp_path))
            options = await session.set_config_option("effort", "high")
    assert option(options, "effort").current_value == "high"
    assert option(options, "effort").options[0].group_id == "g"
    assert option(options, "mode").current_value == "ask"  # the synthesised one stays in the complete list
    call = next(m for m in sent(log) if m.get("method") == "session/set_config_option")
    assert call["params"] == {"sessionId": "s1", "configId": "effort", "value": "high"}


async def test_optional_session_methods_follow_the_v1_capabilities(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path) as (client, log):
            session = await client.new_session(str(tmp_path))
            with pytest.raises(CapabilityNotSupported, match=r"sessionCapabilities\.list"):
                [info async for info in client.list_sessions()]
            with pytest.raises(CapabilityNotSupported, match="loadSession"):
                await Conversation.resume(client, "s1", str(tmp_path))
            with pytest.raises(CapabilityNotSupported, match=r"capabilities\.cancel"):
                await session.cancel_tool_call("t1")
            with pytest.raises(CapabilityNotSupported, match="protocol version 2"):
                client.request("tool_call/cancel", {"sessionId": "s1", "toolCallId": "t1"})
            await session.close()  # no session/close in v1 without the capability: closed locally
            await session.close()
    assert "session/close" not in sent_methods(log)


async def test_list_load_and_close_when_advertised(tmp_path: Path) -> None:
    init = {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"list": {}, "close": {}}},
    }
    listing = {"sessions": [{"sessionId": "old", "cwd": str(tmp_path), "title": "Earlier"}]}
    replay = [chunk("user_message_chunk", "before"), chunk("agent_message_chunk", "answer")]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=init, answers={"session/list": listing}, load=replay) as (client, log):
            infos = [info async for info in client.list_sessions()]
            assert [(i.session_id, i.title) for i in infos] == [("old", "Earlier")]
            conversation = await Conversation.resume(client, "old", str(tmp_path))
            assert [(m.role, m.text) for m in conversation.messages()] == [("user", "before"), ("agent", "answer")]
            await conversation.session.close()
    assert sent_methods(log)[2:] == ["session/list", "session/load", "session/close"]  # after v2's and v1's offers
    load = next(m for m in sent(log) if m.get("method") == "session/load")
    assert load["params"] == {"sessionId": "old", "cwd": str(tmp_path), "mcpServers": []}


async def test_permission_requests_get_a_title_and_answer_in_v1_shape(tmp_path: Path) -> None:
    """The v1 request's tool call becomes the subject; the answer goes back as v1 expects (ACP1-025)."""
    asked: list[RequestPermissionRequest] = []

    def allow(request: RequestPermissionRequest) -> str:
        asked.append(request)
        return "yes"

    ask = {
        "method": "session/request_permission",
        "params": {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "t1", "title": "Delete build/", "kind": "delete"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
        },
    }
    prompts = [{"updates": [], "ask": ask, "after": [chunk("agent_message_chunk", "deleted")]}]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, ClientBuilder().on_request_permission(allow), prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            response = await conversation.chat_to_completion("clean")
    assert response.text == "deleted"
    (request,) = asked
    assert request.title == "Delete build/" and request.subject.tool_call.tool_call_id == "t1"  # type: ignore[union-attr]
    answer = next(m for m in sent(log) if m.get("id") == "q1" and "result" in m)
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}


async def test_login_uses_authenticate_and_never_a_terminal_method(tmp_path: Path) -> None:
    """ACP1-014: a terminal auth method is never passed to ``authenticate``."""
    init = {
        "protocolVersion": 1,
        "authMethods": [{"id": "agent-login", "name": "Log in"}, {"id": "tty", "name": "TTY", "type": "terminal"}],
    }
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=init) as (client, log):
            await client.auth.login("agent-login")
            with pytest.raises(CapabilityNotSupported):
                await client.auth.login("tty")
            with pytest.raises(CapabilityNotSupported, match=r"auth\.logout"):
                await client.auth.logout()
    auth = [m for m in sent(log) if m.get("method") == "authenticate"]
    assert [a["params"] for a in auth] == [{"methodId": "agent-login"}]


async def test_unknown_updates_are_kept_and_cancel_is_sent(tmp_path: Path) -> None:
    unknown = {"sessionUpdate": "_vendor_progress", "percent": 50}
    prompts = [{"updates": [unknown, chunk("agent_message_chunk", "hi")], "result": {"stopReason": "cancelled"}}]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            turn = conversation.chat("go")
            await conversation.session.cancel_active_work()
            response = await turn
    assert response.stop_reason == "cancelled"
    unknowns = [e for e in conversation.history() if isinstance(e, UnknownEntry)]
    assert [(u.tag, u.raw["percent"]) for u in unknowns] == [("_vendor_progress", 50)]
    assert "session/cancel" in sent_methods(log)


async def test_a_slow_update_handler_does_not_move_the_answer_ahead_of_the_chunks(tmp_path: Path) -> None:
    """While the application's handler holds the update queue, the prompt answer (and the idle made from it)
    waits behind the updates read before it, so the turn still ends after its last chunk."""
    release = anyio.Event()
    handled = 0

    async def slow(note: UpdateSessionNotification) -> None:
        nonlocal handled
        await release.wait()
        handled += 1

    count = 3000
    prompts = [{"numbered": count}]
    with anyio.fail_after(30):
        async with v1_agent(tmp_path, ClientBuilder().on_session_update(slow), prompts=prompts) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            turn = conversation.chat("go")
            await anyio.sleep(0.5)  # the agent has written everything; our queue is full
            release.set()
            response = await turn
            while handled < count + 3:  # every chunk, the user message and both states reach the handler
                await anyio.sleep(0.01)
    assert response.text == "".join(f"{n:04d}" for n in range(count))


async def test_set_mode_needs_a_mode_option(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path) as (client, _):
            session = await client.new_session(str(tmp_path))
            with pytest.raises(CapabilityNotSupported, match="category 'mode'"):
                await session.set_mode("code")


async def test_a_failing_permission_handler_declines_with_the_cancelled_outcome(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 16 (3): a handler that raises used to answer -32603, which agents take as a failed turn; the
    schema's ``cancelled`` outcome says the client declined (ACP1-025), and the exception is logged here."""

    def broken(request: RequestPermissionRequest) -> str:
        raise RuntimeError("the dialog crashed")

    ask = {
        "method": "session/request_permission",
        "params": {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "t1", "title": "Run it"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
        },
    }
    prompts = [{"updates": [], "ask": ask, "after": [chunk("agent_message_chunk", "skipped")]}]
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, ClientBuilder().on_request_permission(broken), prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            response = await conversation.chat_to_completion("go")
    assert response.text == "skipped"
    answer = next(m for m in sent(log) if m.get("id") == "q1")
    assert answer == {"jsonrpc": "2.0", "id": "q1", "result": {"outcome": {"outcome": "cancelled"}}}
    assert "the dialog crashed" in caplog.text


async def test_an_option_the_agent_never_offered_is_not_an_approval(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 20 (2): a handler's answer naming an unoffered option used to be sent as selected."""
    ask = {
        "method": "session/request_permission",
        "params": {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "t1", "title": "Run it"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
        },
    }
    prompts = [{"updates": [], "ask": ask}]
    builder = ClientBuilder().on_request_permission(lambda request: "allow_always_everything")
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, builder, prompts=prompts) as (client, log):
            conversation = await client.start_conversation(str(tmp_path))
            await conversation.chat_to_completion("go")
    answer = next(m for m in sent(log) if m.get("id") == "q1")
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
    assert "did not offer" in caplog.text and "allow_always_everything" in caplog.text

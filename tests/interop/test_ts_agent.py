"""Our ClientBuilder / Conversation drive an agent written with the official TypeScript SDK's v2 ``agent()`` app.

The agent (ts_agent.mjs) records every message it receives, so each test also checks what arrived of ours.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation
from acp_session.conversation import ChatDone, ChatStart, ChatText, ChatThought, ChatToolBegin, ChatToolEnd
from acp_session.conversation.entities import Message, ToolCall
from acp_session.errors import InvalidParams, RequestCancelled
from acp_session.schema.types import (
    RequestPermissionRequest,
    SessionConfigBoolean,
    SessionConfigOption,
    SessionConfigSelect,
)

from .conftest import TS_AGENT

pytestmark = pytest.mark.anyio

Handler = Callable[[RequestPermissionRequest], Any]


class Recorded:
    """What the TS agent wrote to its record file: {"dir": "in"|"out", "msg": ...} per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, direction: str = "in") -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        return [row["msg"] for row in rows if row["dir"] == direction]

    def requests(self, method: str, direction: str = "in") -> list[dict[str, Any]]:
        return [m for m in self.lines(direction) if m.get("method") == method]

    def response_to(self, request_id: Any, direction: str = "in") -> dict[str, Any]:
        found = [m for m in self.lines(direction) if "method" not in m and m.get("id") == request_id]
        assert len(found) == 1, found
        return found[0]


@asynccontextmanager
async def ts_agent(
    node: str, tmp_path: Path, on_permission: Handler | None = None
) -> AsyncIterator[tuple[ClientConnection, Conversation, Recorded]]:
    record = tmp_path / "ts_agent.jsonl"
    builder = ClientBuilder("acp-session-interop", "1.0")
    if on_permission is not None:
        builder = builder.on_request_permission(on_permission)
    async with builder.spawn([node, str(TS_AGENT), "--record", str(record)]) as client:
        conversation = await client.start_conversation(str(tmp_path))
        yield client, conversation, Recorded(record)


def _values(options: list[SessionConfigOption]) -> dict[str, object]:
    return {o.config_id: o.current_value for o in options if isinstance(o, (SessionConfigSelect, SessionConfigBoolean))}


def _allow(request: RequestPermissionRequest) -> str:
    return "allow-once"


async def test_initialize_and_session(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (client, conversation, recorded):
        assert client.protocol.version == 2
        assert client.agent.info.name == "acp-interop-ts-agent"
        assert conversation.session_id == "ts-sess-1"
    (init,) = recorded.requests("initialize")
    assert init["params"]["protocolVersion"] == 2
    assert init["params"]["info"] == {"name": "acp-session-interop", "version": "1.0"}
    (new,) = recorded.requests("session/new")
    assert new["params"] == {"cwd": str(tmp_path)}


async def test_every_turn_kind_folds_into_history(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path, _allow) as (_, conversation, recorded):
        hello = await conversation.chat_to_completion("hello there")
        assert (hello.text, hello.thinking, hello.stop_reason) == ("You said: hello there", "", "end_turn")
        assert hello.message_id == "msg-user-1"

        thought = await conversation.chat_to_completion("/thought")
        assert (thought.thinking, thought.text, thought.stop_reason) == (
            "Let me think. The answer is 42.",
            "42.",
            "end_turn",
        )

        tool = await conversation.chat_to_completion("/tool")
        assert tool.text == "The file has two lines."
        (call,) = tool.tool_calls
        assert (call.tool_call_id, call.name, call.title, call.kind, call.status) == (
            "tc-1",
            "read_file",
            "Reading notes.txt",
            "read",
            "completed",
        )
        assert [c.content.text for c in call.content] == ["line one", "line two"]  # type: ignore[union-attr]
        assert call.raw_output == {"lines": 2}

        allowed = await conversation.chat_to_completion("/permission")
        assert allowed.text == "Done: build/ was removed."
        assert [(c.tool_call_id, c.status) for c in allowed.tool_calls] == [("tc-2", "completed")]

        stops = [(await conversation.chat_to_completion(p)).stop_reason for p in ("/refuse", "/max_tokens", "/fail")]
        assert stops == ["refusal", "max_tokens", "error"]
        assert conversation.last_chat_response is not None
        assert conversation.last_chat_response.error is not None
        assert conversation.last_chat_response.error.code == -32603

        assert conversation.turn_count == 7
        messages = [(m.role, m.text) for m in conversation.messages(include_thoughts=True)]
        assert messages == [
            ("user", "hello there"),
            ("agent", "You said: hello there"),
            ("user", "/thought"),
            ("thought", "Let me think. The answer is 42."),
            ("agent", "42."),
            ("user", "/tool"),
            ("agent", "The file has two lines."),
            ("user", "/permission"),
            ("agent", "Done: build/ was removed."),
            ("user", "/refuse"),
            ("agent", "I will not do that."),
            ("user", "/max_tokens"),
            ("agent", "This answer is cut off because"),
            ("user", "/fail"),
            ("agent", "Something is about to go wrong."),
        ]
        kinds = [type(e).__name__ for e in conversation.history()]
        assert kinds.count("ToolCall") == 2 and kinds.index("ToolCall") == 6  # after /tool's user message
        tools = [e for e in conversation.history() if isinstance(e, ToolCall)]
        assert [(t.tool_call_id, t.status) for t in tools] == [("tc-1", "completed"), ("tc-2", "completed")]

    # The SDK validates every message it receives against its schema: none of ours was refused.
    assert [m for m in recorded.lines("out") if "error" in m] == []
    # What the agent received of ours: every prompt exactly as sent, and our permission answer.
    prompts = recorded.requests("session/prompt")
    assert [p["params"] for p in prompts] == [
        {"sessionId": "ts-sess-1", "prompt": [{"type": "text", "text": text}]}
        for text in ("hello there", "/thought", "/tool", "/permission", "/refuse", "/max_tokens", "/fail")
    ]
    (asked,) = recorded.requests("session/request_permission", "out")
    answer = recorded.response_to(asked["id"])
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


async def test_streamed_chat_events(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (_, conversation, _recorded):
        events = [event async for event in conversation.chat("/tool")]
        starts = [e for e in events if isinstance(e, ChatStart)]
        assert [e.message_id for e in starts] == ["msg-user-1"]
        assert isinstance(events[0], ChatStart) and isinstance(events[-1], ChatDone)
        begins = [e for e in events if isinstance(e, ChatToolBegin)]
        ends = [e for e in events if isinstance(e, ChatToolEnd)]
        assert [e.tool_call.tool_call_id for e in begins] == ["tc-1"]
        assert [e.status for e in ends] == ["completed"]
        assert events.index(ends[0]) < events.index(next(e for e in events if isinstance(e, ChatText)))
        assert "".join(e.text for e in events if isinstance(e, ChatText)) == "The file has two lines."
        done = events[-1]
        assert isinstance(done, ChatDone) and done.response.stop_reason == "end_turn"

        thoughts = [event async for event in conversation.chat("/thought")]
        assert "".join(e.text for e in thoughts if isinstance(e, ChatThought)) == "Let me think. The answer is 42."


async def test_rejected_permission(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path, lambda request: "reject-once") as (_, conversation, recorded):
        response = await conversation.chat_to_completion("/permission")
        assert response.text == "Permission was not granted, so I did nothing."
        assert [(c.tool_call_id, c.status) for c in response.tool_calls] == [("tc-1", "failed")]
        assert response.stop_reason == "end_turn"
    (asked,) = recorded.requests("session/request_permission", "out")
    assert asked["params"]["subject"] == {"type": "tool_call", "toolCall": {"toolCallId": "tc-1"}}
    assert [o["optionId"] for o in asked["params"]["options"]] == ["allow-once", "reject-once"]
    answer = recorded.response_to(asked["id"])
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "reject-once"}}


async def test_config_options_set_and_errors(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (_, conversation, recorded):
        session = conversation.session
        options = await session.set_config_option("mode", "ask")
        assert _values(options) == {"mode": "ask", "thoughts": False}
        assert (await conversation.chat_to_completion("what time is it")).text == "You asked: what time is it"

        options = await session.set_config_option("thoughts", True)
        assert _values(options) == {"mode": "ask", "thoughts": True}
        reply = await conversation.chat_to_completion("two words")
        assert (reply.thinking, reply.text) == ("The user wrote 2 word(s); ask mode.", "You asked: two words")

        for config_id, value in (("mode", "nonsense"), ("mode", True), ("thoughts", "yes"), ("unknown", "x")):
            with pytest.raises(InvalidParams):
                await session.set_config_option(config_id, value)
        # Nothing changed: the next successful call still reports ask / thoughts on.
        options = await session.set_config_option("mode", "ask")
        assert _values(options) == {"mode": "ask", "thoughts": True}

    sent = [r["params"] for r in recorded.requests("session/set_config_option")]
    assert sent[:2] == [
        {"sessionId": "ts-sess-1", "configId": "mode", "type": "id", "value": "ask"},
        {"sessionId": "ts-sess-1", "configId": "thoughts", "type": "boolean", "value": True},
    ]
    assert [(p["configId"], p["type"], p["value"]) for p in sent[2:6]] == [
        ("mode", "id", "nonsense"),
        ("mode", "boolean", True),
        ("thoughts", "id", "yes"),
        ("unknown", "id", "x"),
    ]


async def test_cancel_with_pending_permission(node: str, tmp_path: Path) -> None:
    asked = anyio.Event()

    async def wait_for_human(request: RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()  # the human never answers; cancelling must resolve it
        raise AssertionError("unreachable")

    async with ts_agent(node, tmp_path, wait_for_human) as (client, conversation, recorded):
        turn = conversation.chat("/permission")
        with anyio.fail_after(10):
            await asked.wait()
            assert len(client.interactions.pending(conversation.session_id)) == 1
            await conversation.cancel()
            response = await turn
        assert response.stop_reason == "cancelled"
        assert [(c.tool_call_id, c.status) for c in response.tool_calls] == [("tc-1", "cancelled")]
        assert client.interactions.pending(conversation.session_id) == []
        tools = [e for e in conversation.history() if isinstance(e, ToolCall)]
        assert [t.status for t in tools] == ["cancelled"]  # the agent's own final update agrees

        # The session is usable afterwards.
        assert (await conversation.chat_to_completion("again")).text == "You said: again"

    (request,) = recorded.requests("session/request_permission", "out")
    (cancel,) = recorded.requests("session/cancel")
    assert cancel["params"] == {"sessionId": "ts-sess-1"}
    # Conversation.cancel() answers the pending request cancelled right after session/cancel, so the SDK agent
    # may see the answer before it aborts; it then has no request left to withdraw with $/cancel_request.
    withdrawn = [m["params"] for m in recorded.requests("$/cancel_request", "out")]
    assert withdrawn in ([], [{"requestId": request["id"]}])
    ours = [m for m in recorded.lines("in") if "method" not in m and m.get("id") == request["id"]]
    assert [m["result"] for m in ours] == [{"outcome": {"outcome": "cancelled"}}]
    updates = [m["params"]["update"] for m in recorded.requests("session/update", "out")]
    states = [(u["state"], u.get("stopReason")) for u in updates if u["sessionUpdate"] == "state_update"]
    # requires_action ends in idle/cancelled without resuming (no running in between).
    assert states[:4] == [("running", None), ("requires_action", None), ("idle", "cancelled"), ("running", None)]


async def test_held_prompts_are_inserted_in_order(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (_, conversation, recorded):
        first = conversation.chat("/slow 6")
        second = conversation.chat("second")
        third = conversation.chat("third")
        with anyio.fail_after(10):
            one, two, three = await first, await second, await third
        assert one.text == "".join(f"chunk {i}. " for i in range(1, 7))
        assert [r.stop_reason for r in (one, two, three)] == ["end_turn"] * 3
        assert (two.text, three.text) == ("You said: second", "You said: third")
        assert [one.message_id, two.message_id, three.message_id] == ["msg-user-1", "msg-user-2", "msg-user-3"]
        roles = [(m.role, m.message_id) for m in conversation.messages()]
        assert [r for r, _ in roles] == ["user", "agent", "user", "agent", "user", "agent"]

    # All three prompts were sent at once (before the first turn ended); the agent answered them in order.
    out = recorded.lines("out")
    answers = [m["id"] for m in out if "method" not in m]
    prompt_ids = [p["id"] for p in recorded.requests("session/prompt")]
    assert [a for a in answers if a in prompt_ids] == prompt_ids
    first_idle = next(
        i
        for i, m in enumerate(out)
        if m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"
    )
    second_answer = next(i for i, m in enumerate(out) if "method" not in m and m["id"] == prompt_ids[1])
    assert first_idle < second_answer  # held until the running turn ended


async def test_cancel_withdraws_held_prompts(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (_, conversation, recorded):
        running = conversation.chat("/slow 40")
        held = conversation.chat("never inserted")
        withdrawn = conversation.session.send_prompt("withdrawn by $/cancel_request")
        with anyio.fail_after(10):
            await anyio.sleep(0.3)
            withdrawn.cancel()
            with pytest.raises(RequestCancelled):
                await withdrawn
            await conversation.cancel()
            response = await running
            assert response.stop_reason == "cancelled"
            with pytest.raises(RequestCancelled):
                await held
        assert [m.text for m in conversation.messages() if m.role == "user"] == ["/slow 40"]
        assert (await conversation.chat_to_completion("after")).text == "You said: after"

    withdrawn_id = recorded.requests("session/prompt")[2]["id"]
    assert [m["params"] for m in recorded.requests("$/cancel_request")] == [{"requestId": withdrawn_id}]
    errors = {m["id"]: m["error"]["code"] for m in recorded.lines("out") if "error" in m}
    prompt_ids = [p["id"] for p in recorded.requests("session/prompt")]
    assert errors == {prompt_ids[1]: -32800, prompt_ids[2]: -32800}


async def test_close_cancels_running_work(node: str, tmp_path: Path) -> None:
    async with ts_agent(node, tmp_path) as (client, conversation, recorded):
        turn = conversation.chat("/slow 40")
        held = conversation.chat("held")
        with anyio.fail_after(10):
            await anyio.sleep(0.2)
            await conversation.session.close()
            response = await turn
            with pytest.raises(RequestCancelled):
                await held
        assert response.stop_reason == "cancelled"
        assert 0 < len(response.text) < len("".join(f"chunk {i}. " for i in range(1, 41)))
        assert isinstance(conversation.history()[0], Message)
        await conversation.session.close()  # idempotent
        # A fresh session on the same connection still works.
        other = await client.start_conversation(str(tmp_path))
        assert (await other.chat_to_completion("hi")).text == "You said: hi"

    closes = recorded.requests("session/close")
    assert closes[0]["params"] == {"sessionId": "ts-sess-1"}
    out = recorded.lines("out")
    close_answer = next(i for i, m in enumerate(out) if "method" not in m and m["id"] == closes[0]["id"])
    idle = [
        i
        for i, m in enumerate(out)
        if m.get("method") == "session/update" and m["params"]["update"].get("stopReason") == "cancelled"
    ]
    assert idle and idle[0] < close_answer  # the cancelled idle update came before the close response


def _initialize_lines(node: str, *versions: int) -> list[dict[str, Any]]:
    lines = [
        {"jsonrpc": "2.0", "id": i, "method": "initialize", "params": {"protocolVersion": v, "info": INFO}}
        for i, v in enumerate(versions, 1)
    ]
    # stdin stays open until every answer is read, so the agent never sees end-of-file mid-exchange.
    with subprocess.Popen([node, str(TS_AGENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in lines]
        proc.stdin.close()
        proc.wait(timeout=10)
    return answers


INFO = {"name": "raw", "version": "1"}


def test_version_negotiation_first_and_repeated(node: str) -> None:
    # A first initialize below 2 reaches the agent's handler (-32022 with the supported versions); a repeated
    # one asking for less than 2 is refused by the SDK itself with -32600 (docs/interop.md, finding I1).
    first, newer, repeated = _initialize_lines(node, 1, 3, 1)
    assert first["error"]["code"] == -32022
    assert first["error"]["data"] == {"requested": 1, "supported": [2]}
    assert newer["result"]["protocolVersion"] == 2
    assert repeated["error"]["code"] == -32600
    assert "repeated initialize" in repeated["error"]["message"]

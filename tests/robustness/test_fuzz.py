"""Hypothesis fuzzer: mutated schema-valid messages and random bytes into one live client connection.

One ``ClientConnection`` (over an in-memory pair, running in a portal thread) lives for the whole run, like an
editor's connection that stays open for hours. Each example writes a few frames as the agent, then a marker
update and a request round trip. Invariants after every example:

- no exception escapes: the connection is still open and nothing was logged at ERROR level (a handler, the
  conversation fold or the rpc layer failing would be);
- no hang: the marker is delivered and the round trip answered within 5 s;
- the conversation state stays consistent: every message, tool call and timeline entry is well formed, the state
  encodes to plain JSON, and replaying the same notifications into a fresh ``SessionState`` gives an equal state.

``ACP_FUZZ_EXAMPLES`` sets the number of examples per backend (default 150; ``make fuzz`` runs 1 000 000).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import msgspec
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_session import ClientBuilder, ClientConnection
from acp_session.conversation import Message, SessionState, ToolCall
from acp_session.schema.types import AgentMessageChunk, UpdateSessionNotification
from acp_session.transport import FrameReader, memory_pair

EXAMPLES = int(os.environ.get("ACP_FUZZ_EXAMPLES", "150"))
PLACEHOLDER = "__session__"  # replaced by a fresh session id per example (generation must not depend on it)

SEEDS: list[dict[str, Any]] = [
    {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hello"}},
    {"sessionUpdate": "user_message_chunk", "messageId": "u1", "content": {"type": "text", "text": "hi"}},
    {"sessionUpdate": "agent_thought_chunk", "messageId": "t1", "content": {"type": "text", "text": "hmm"}},
    {"sessionUpdate": "agent_message", "messageId": "m1", "content": [{"type": "text", "text": "whole"}]},
    {"sessionUpdate": "user_message", "messageId": "u2", "content": [{"type": "text", "text": "q"}]},
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tc1",
        "title": "Read",
        "kind": "read",
        "status": "in_progress",
        "locations": [{"path": "/a"}],
        "content": [{"type": "content", "content": {"type": "text", "text": "x"}}],
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "tc1", "status": "completed", "rawOutput": {"ok": True}},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "tc1", "content": {"type": "text", "text": "out"}},
    {"sessionUpdate": "state_update", "state": "running"},
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    {
        "sessionUpdate": "plan_update",
        "planId": "p1",
        "entries": [{"content": "do", "priority": "high", "status": "pending"}],
    },
    {"sessionUpdate": "usage_update", "used": 10, "size": 100},
    {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "x", "description": "d"}]},
    {"sessionUpdate": "session_info_update", "title": "T"},
    {"sessionUpdate": "terminal_update", "terminalId": "term1", "status": "running"},
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "term1", "data": "ls\n"},
    {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"},
    {"sessionUpdate": "notice", "level": "info", "message": "note"},
]
PERMISSION = {"title": "run?", "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated(draw: st.DrawFn, sid: str) -> bytes:
    kind = draw(st.sampled_from(["update", "update", "update", "permission", "raw"]))
    if kind == "raw":
        return draw(st.binary(max_size=120))
    if kind == "permission":
        body: Any = {"sessionId": sid, **json.loads(json.dumps(PERMISSION))}
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": draw(st.integers(0, 50)),
            "method": "session/request_permission",
        }
    else:
        body = {"sessionId": sid, "update": json.loads(json.dumps(draw(st.sampled_from(SEEDS))))}
        message = {"jsonrpc": "2.0", "method": "session/update"}
    message["params"] = body
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from([message, body, body.get("update", body)]))
        if not isinstance(target, dict) or not target:
            continue
        key = draw(st.sampled_from(sorted(target)))
        op = draw(st.sampled_from(["drop", "replace", "add", "retag"]))
        if op == "drop":
            del target[key]
        elif op == "replace":
            target[key] = draw(json_values)
        elif op == "add":
            target[draw(st.text(max_size=6))] = draw(json_values)
        elif "sessionUpdate" in target:
            target["sessionUpdate"] = draw(st.sampled_from([s["sessionUpdate"] for s in SEEDS] + ["zzz", "_x"]))
    data = json.dumps(message).encode()
    cut = draw(st.sampled_from(["none", "none", "none", "truncate", "splice"]))
    if cut == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif cut == "splice":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(max_size=8)) + data[at:]
    return data


class ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Live:
    """A client connection and the agent end of its transport, driven from the test thread through a portal."""

    def __init__(self, portal: BlockingPortal) -> None:
        self.portal = portal
        self.notes: dict[str, list[UpdateSessionNotification]] = {}
        self.states: dict[str, SessionState] = {}
        self.marker = anyio.Event()
        self.round_trips: dict[Any, anyio.Event] = {}
        self.next_id = 0

    def on_update(self, note: UpdateSessionNotification) -> None:
        update = note.update
        if isinstance(update, AgentMessageChunk) and update.message_id == "__marker__":
            self.marker.set()
            return
        self.notes.setdefault(note.session_id, []).append(note)
        state = self.states.get(note.session_id)
        if state is None:
            state = self.states[note.session_id] = SessionState(note.session_id)
        state.apply_notification(note)

    async def serve(self, *, task_status: Any) -> None:
        """The connection's whole life in one task (task groups must be left by the task that entered them)."""
        client_end, self.agent = memory_pair()
        self.stop = anyio.Event()
        builder = (
            ClientBuilder("fuzz", "1.0")
            .on_session_update(self.on_update)
            .on_request_permission(lambda r: r.options[0].option_id if r.options else None)
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._agent_reader)
            async with builder.connect(client_end) as client:
                self.client: ClientConnection = client
                task_status.started()
                await self.stop.wait()
            tg.cancel_scope.cancel()

    async def _agent_reader(self) -> None:
        reader = FrameReader()
        while True:
            try:
                data = await self.agent.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            for frame in reader.feed(data):
                assert isinstance(frame, bytes)
                message = json.loads(frame)
                method, rid = message.get("method"), message.get("id")
                if method == "initialize":
                    result: Any = {"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}, "capabilities": {}}
                    await self._answer(rid, result)
                elif method == "_fuzz/ping":
                    await self._answer(rid, {"pong": message["params"]["n"]})

    async def _answer(self, rid: Any, result: Any) -> None:
        await self.agent.send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")

    async def run_example(self, sid: str, frames: list[bytes]) -> None:
        self.marker = anyio.Event()
        marker = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "fuzz",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": "__marker__",
                    "content": {"type": "text", "text": "m"},
                },
            },
        }
        # A frame without its newline would swallow the next one: each fuzzed frame is terminated.
        await self.agent.send(b"".join(f + b"\n" for f in frames) + json.dumps(marker).encode() + b"\n")
        self.next_id += 1
        with anyio.fail_after(5):
            await self.marker.wait()
            assert await self.client.request("_fuzz/ping", {"n": self.next_id}) == {"pong": self.next_id}


def check_state(state: SessionState, notes: list[UpdateSessionNotification]) -> None:
    for entry in state.timeline:
        if isinstance(entry, Message):
            assert isinstance(entry.message_id, str) and isinstance(entry.text, str)
        elif isinstance(entry, ToolCall):
            assert isinstance(entry.tool_call_id, str)
            assert isinstance(entry.status, str) and isinstance(entry.kind, str)
            assert isinstance(entry.content, list) and isinstance(entry.locations, list)
    for call in state.tool_calls.values():
        assert call in state.timeline or call.tool_call_id
    msgspec.json.encode(state.to_snapshot())
    replayed = SessionState(state.session_id)
    for note in notes:
        replayed.apply_notification(note)
    assert replayed == state


@contextmanager
def live_connection(backend: str) -> Iterator[tuple[Live, ErrorLog]]:
    errors = ErrorLog()
    logger = logging.getLogger("acp_session")
    logger.addHandler(errors)
    try:
        with start_blocking_portal(backend) as portal:
            live = Live(portal)
            done, _ = portal.start_task(live.serve)
            try:
                yield live, errors
            finally:
                portal.call(live.stop.set)
                done.result(timeout=10)
    finally:
        logger.removeHandler(errors)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_fuzzed_agent_output_keeps_the_connection_consistent(backend: str) -> None:
    counter = iter(range(10**9))
    with live_connection(backend) as (live, errors):

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(data=st.data())
        def example(data: st.DataObject) -> None:
            sid = f"s{next(counter)}"
            drawn = data.draw(st.lists(mutated(PLACEHOLDER), min_size=1, max_size=6))
            frames = [frame.replace(PLACEHOLDER.encode(), sid.encode()) for frame in drawn]
            live.portal.call(live.run_example, sid, frames)
            assert not live.client.rpc.closed
            assert errors.records == [], [r.getMessage() for r in errors.records]
            for session_id in list(live.states):
                state = live.states.pop(session_id)
                check_state(state, live.notes.pop(session_id))

        example()

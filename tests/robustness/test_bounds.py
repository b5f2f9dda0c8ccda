"""What an agent cannot make this client hold without limit (issue 20, 3): session records for session ids it never
opened, and cancellable tool calls or terminals that ended."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Limits
from acp_session.client.connection import hub_of
from acp_session.rpc.reading import FAIR_SHARE_FRAMES
from acp_session.schema import (
    BackgroundToolCall,
    StateUpdate,
    TerminalExitStatus,
    TerminalUpdate,
    ToolCallCapabilities,
    ToolCallUpdated,
    UpdateSessionNotification,
)
from acp_session.session import SessionTrack

# After session/new it names 20 000 sessions nobody opened, then says "done" in the real one.
AGENT = r"""
import json, sys
def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "ids", "version": "1"}, "capabilities": {"session": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    elif msg.get("method") == "session/new":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "real"}})
        chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"}}
        for i in range(20000):
            params = {"sessionId": f"ghost-{i}", "update": chunk}
            write({"jsonrpc": "2.0", "method": "session/update", "params": params})
        done = {**chunk, "content": {"type": "text", "text": "done"}}
        write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "real", "update": done}})
    sys.stdout.flush()
"""


@pytest.mark.anyio
async def test_updates_for_sessions_never_opened_are_counted_not_tracked(tmp_path: Path) -> None:
    script = tmp_path / "ids_agent.py"
    script.write_text(AGENT)
    seen: list[str] = []
    done = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        seen.append(note.session_id)
        if note.session_id == "real":
            done.set()

    with anyio.fail_after(30):
        async with ClientBuilder().on_session_update(on_update).spawn([sys.executable, str(script)]) as client:
            await client.new_session(str(tmp_path))
            await done.wait()
            tracked = len(hub_of(client).session_tracks)
            unknown = client.unknown_session_updates
    assert len(seen) == 20001  # the application's handler still sees every update
    assert tracked <= 17 and unknown >= 20000 - 16  # not 20 001 records: at most the bounded early ones


def note(update: object) -> UpdateSessionNotification:
    return UpdateSessionNotification(session_id="s", update=update)  # type: ignore[arg-type]


def test_cancellable_sets_forget_what_ended() -> None:
    track = SessionTrack("s")
    cancel = ToolCallCapabilities(cancel={})  # type: ignore[arg-type]
    for i in range(1000):
        track.apply(note(ToolCallUpdated(tool_call_id=f"t{i}", capabilities=cancel)))
    track.apply(note(TerminalUpdate(terminal_id="term", capabilities=cancel)))  # type: ignore[arg-type]
    assert len(track.cancellable_tool_calls) == 1000
    track.apply(note(ToolCallUpdated(tool_call_id="t0", status="completed")))
    track.apply(note(TerminalUpdate(terminal_id="term", exit_status=TerminalExitStatus(exit_code=0))))
    assert "t0" not in track.cancellable_tool_calls and not track.cancellable_terminals
    background = [BackgroundToolCall(tool_call_id="t1")]
    track.apply(note(StateUpdate(state="idle", stop_reason="end_turn", background=background)))  # type: ignore[arg-type]
    assert list(track.cancellable_tool_calls) == ["t1"]  # only background work can still be cancelled


def test_cancellable_ids_are_bounded_keeping_the_newest() -> None:
    """An agent advertising cancel on endless tool call ids that never end: at most ``max_cancellable`` are
    remembered (the newest); re-advertising a remembered one does not move it, and ending one frees a slot."""
    track = SessionTrack("s", max_cancellable=100)
    cancel = ToolCallCapabilities(cancel={})  # type: ignore[arg-type]
    for i in range(100_000):
        track.apply(note(ToolCallUpdated(tool_call_id=f"t{i}", status="in_progress", capabilities=cancel)))
    assert list(track.cancellable_tool_calls) == [f"t{i}" for i in range(99_900, 100_000)]
    track.apply(note(ToolCallUpdated(tool_call_id="t99950", capabilities=cancel)))
    assert next(iter(track.cancellable_tool_calls)) == "t99900"
    track.apply(note(ToolCallUpdated(tool_call_id="t99999", status="failed")))
    assert len(track.cancellable_tool_calls) == 99


def test_limits_are_set_on_the_builder_and_checked() -> None:
    builder = ClientBuilder().limits(cancellable=5, early_sessions=2)
    assert builder._limits == Limits(early_sessions=2, early_updates=10_000, cancellable=5)
    assert ClientBuilder()._limits == Limits()
    with pytest.raises(ValueError, match="cancellable"):
        ClientBuilder().limits(cancellable=-1)


@pytest.mark.anyio
async def test_a_connection_applies_its_builder_limits(tmp_path: Path) -> None:
    script = tmp_path / "ids_agent.py"
    script.write_text(AGENT)
    with anyio.fail_after(30):
        async with ClientBuilder().limits(cancellable=3).spawn([sys.executable, str(script)]) as client:
            session = await client.new_session(str(tmp_path))
            assert session.track.max_cancellable == 3 and client.limits.cancellable == 3


# One turn touching 30 000 distinct tool calls (each created and completed), then a reply and the idle.
FLOOD_AGENT = r"""
import json, sys
def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
def update(body):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": body}})
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "flood", "version": "1"}, "capabilities": {"session": {}}}
        write({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s"}})
    elif method == "session/prompt":
        write({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u"}})
        update({"sessionUpdate": "state_update", "state": "running"})
        for i in range(30000):
            update({"sessionUpdate": "tool_call_update", "toolCallId": f"t{i}", "title": "x", "status": "completed"})
        reply = {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "done"}}
        update(reply)
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    sys.stdout.flush()
"""


@pytest.mark.anyio
async def test_a_turn_flooded_with_tool_calls_keeps_no_more_than_the_history(tmp_path: Path) -> None:
    """A turn's response keeps at most ``max_history_size`` steps and tool calls (the newest), like the history;
    the events stay paired and the reply is intact."""
    script = tmp_path / "flood_agent.py"
    script.write_text(FLOOD_AGENT)
    with anyio.fail_after(60):
        async with ClientBuilder().spawn([sys.executable, str(script)]) as client:
            conversation = await client.start_conversation(str(tmp_path), max_history_size=1000)
            begins = ends = 0
            async for event in conversation.chat("go"):
                begins += event.kind == "tool_begin"
                ends += event.kind == "tool_end"
                if event.kind == "done":
                    response = event.response  # type: ignore[attr-defined]
    assert response.text == "done" and response.stop_reason == "end_turn"
    assert len(response.tool_calls) <= 1000 and len(response.steps) <= 1000
    assert response.tool_calls[-1].tool_call_id == "t29999"
    assert begins == ends == 30000
    assert len(conversation.history()) <= 1000


# The same flood, but written as fast as the pipe takes it: the lines are built before the prompt comes.
FAST_FLOOD_AGENT = r"""
import json, sys
def line(obj):
    return json.dumps(obj).encode() + b"\n"
def update(body):
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": body}})
flood = b"".join(
    update({"sessionUpdate": "tool_call_update", "toolCallId": f"t{i}", "title": "x", "status": "completed"})
    for i in range(30000)
)
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "flood", "version": "1"}, "capabilities": {"session": {}}}
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": result}))
    elif method == "session/new":
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s"}}))
    elif method == "session/prompt":
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u"}}))
        out.write(update({"sessionUpdate": "state_update", "state": "running"}))
        out.write(flood)
        out.write(update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
    out.flush()
"""


@pytest.mark.anyio
async def test_a_reader_of_chat_events_runs_while_an_agent_floods(tmp_path: Path) -> None:
    """The connection's reader lets other tasks run after every ``FAIR_SHARE_FRAMES`` frames it read without a
    pause: a reader of the turn's events gets them during a flood, not only once the agent stops writing, so the
    events waiting for it stay few (benchmarks/memory.py row 2i: 54 MiB peak before, 8 MiB after)."""
    script = tmp_path / "fast_flood_agent.py"
    script.write_text(FAST_FLOOD_AGENT)
    with anyio.fail_after(60):
        async with ClientBuilder().spawn([sys.executable, str(script)]) as client:
            conversation = await client.start_conversation(str(tmp_path), max_history_size=1000)
            turn = conversation.chat("go")
            most_waiting = begins = 0
            async for event in turn:
                most_waiting = max(most_waiting, len(turn._queue))
                begins += event.kind == "tool_begin"
    assert begins == 30000
    # Without the reader's pauses all 60 000 begin and end events waited for the first read of them.
    assert most_waiting < 8 * FAIR_SHARE_FRAMES


# While each session/new is in flight, two updates of sessions nobody opened, then the answer.
GHOSTS_AGENT = r"""
import json, sys
def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
opened = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "ghosts", "version": "1"}, "capabilities": {"session": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    elif msg.get("method") == "session/new":
        opened += 1
        chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"}}
        if opened % 2:
            for i in range(2):
                params = {"sessionId": f"ghost-{opened}-{i}", "update": chunk}
                write({"jsonrpc": "2.0", "method": "session/update", "params": params})
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": f"real-{opened}"}})
    sys.stdout.flush()
"""


@pytest.mark.anyio
async def test_tracks_kept_while_a_session_opens_are_dropped_once_it_is_open(tmp_path: Path) -> None:
    """The ghosts' provisional tracks go when the session/new is answered, and sessions opened with none in
    between (where the hub skips its scan of every track) keep theirs."""
    script = tmp_path / "ghosts_agent.py"
    script.write_text(GHOSTS_AGENT)
    with anyio.fail_after(30):
        async with ClientBuilder().spawn([sys.executable, str(script)]) as client:
            hub = hub_of(client)
            for _ in range(6):
                await client.new_session(str(tmp_path))
            tracks = sorted(hub.session_tracks)
            provisional = hub._provisional
    assert tracks == [f"real-{k}" for k in range(1, 7)] and provisional == 0

"""What an agent cannot make this client hold without limit (issue 20, 3): session records for session ids it never
opened, and cancellable tool calls or terminals that ended."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
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
            tracked = len(client._tracks)
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
    assert track.cancellable_tool_calls == {"t1"}  # only background work can still be cancelled

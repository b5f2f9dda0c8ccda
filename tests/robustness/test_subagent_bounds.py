"""An agent announcing endless subagents cannot grow the client (issue 41, 11): a connection tracks at most
``Limits.subagents`` children and a ``Conversation`` tree folds at most as many; past it the oldest finished
child is folded into its parent's ``folded_subagents``, or, while every kept child still runs, a new one is
refused with one warning. The parent's own history is untouched. A hostile scripted v2 agent over real pipes."""

from __future__ import annotations

import gc
import logging
import os
import resource
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Limits
from acp_session.client.connection import hub_of
from acp_session.conversation import Message, SessionState, SubagentChanged, SubagentRefused
from acp_session.schema import unstable as mu

pytestmark = pytest.mark.anyio

CHILDREN = 100_000

# On the first prompt: "hello", then CHILDREN subagent_updates (each child with one message of its own; with
# argv[1] == "idle" each one's state mirrored idle, else never reported), then "after", then the idle end.
AGENT = r"""
import json, sys
idle, children = sys.argv[1] == "idle", int(sys.argv[2])
out = sys.stdout
def write(obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
def update(sid, upd):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": upd}})
def text(mid, value):
    return {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": value}}
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        caps = {"session": {"prompt": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 2, "info": {"name": "kids",
               "version": "1"}, "capabilities": caps}})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "root"}})
    elif method == "session/prompt":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"messageId": "u1"}})
        update("root", {"sessionUpdate": "state_update", "state": "running"})
        update("root", text("m1", "hello"))
        for i in range(children):
            child = {"sessionUpdate": "subagent_update", "sessionId": f"kid-{i}", "title": "Explorer",
                     "capabilities": {"cancel": {}}}
            if idle:
                child["state"] = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            update("root", child)
            update(f"kid-{i}", text("k", f"child {i}"))
        update("root", text("m2", "after"))
        update("root", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    out.flush()
"""


@pytest.mark.parametrize("finished", [True, False], ids=["finished-children-folded", "running-children-refused"])
async def test_a_hundred_thousand_children_stay_within_the_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, finished: bool
) -> None:
    script = tmp_path / "kids_agent.py"
    script.write_text(AGENT)
    limit = Limits().subagents
    argv = [sys.executable, str(script), "idle" if finished else "running", str(CHILDREN)]
    caplog.set_level(logging.WARNING, logger="acp_session.client")
    async with ClientBuilder("t", "1").spawn(argv) as client:
        conversation = await client.start_conversation(tmp_path)
        gc.collect()
        before = resident_bytes()
        with anyio.fail_after(300):
            response = await conversation.chat_to_completion("go")
        grown = resident_bytes() - before
        # Unbounded this was about 3.1 KB a child (+300 MiB); within the bound, 1 024 children cost about 4 MiB.
        assert grown < 48 * 2**20, f"{grown / 2**20:.1f} MiB for {CHILDREN} children"
        assert response.stop_reason == "end_turn" and response.text == "hello\n\nafter"
        # The parent's history is its own, complete.
        history = list(conversation.history())
        assert [type(e) for e in history] == [Message, Message] and [m.text for m in history] == ["hello", "after"]
        hub = hub_of(client)
        children = [sid for sid, track in hub.session_tracks.items() if track.parent == "root"]
        assert len(conversation.subagents) == len(children) == limit
        folded, tracked = conversation.state.folded_subagents, hub.subagent_tracks
        warnings = [r for r in caplog.records if "more subagents than a connection keeps" in r.getMessage()]
        if finished:  # the newest are kept, each with its own history; the older ones are counted
            assert list(conversation.subagents) == children == [f"kid-{i}" for i in range(CHILDREN - limit, CHILDREN)]
            newest = conversation.subagents[f"kid-{CHILDREN - 1}"]
            assert [m.text for m in newest.history() if isinstance(m, Message)] == [f"child {CHILDREN - 1}"]
            assert (folded.count, folded.refused) == (tracked.folded, tracked.refused) == (CHILDREN - limit, 0)
            assert not warnings
        else:  # every kept one still runs: the first are kept, later ones refused, with one warning
            assert list(conversation.subagents) == children == [f"kid-{i}" for i in range(limit)]
            assert (folded.count, folded.refused) == (tracked.folded, tracked.refused) == (0, CHILDREN - limit)
            assert len(warnings) == 1
            assert client.unknown_session_updates >= CHILDREN - limit  # the refused children's own updates


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc``; elsewhere the peak, which only grows)."""
    try:
        with open("/proc/self/statm") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def announce(session_id: str) -> mu.SubagentUpdate:
    return mu.SubagentUpdate(session_id=session_id, title="Explorer")


def test_the_fold_keeps_the_newest_and_sums_what_it_folds() -> None:
    state = SessionState("root")
    state.max_subagents = 3
    state.apply(announce("a"))
    state.apply(announce("b"))
    a = state.subagents["a"]
    a.state.apply(mu.SubagentUpdate(session_id="a1"))  # a grandchild: the tree's third
    assert state.descendant("a1") is not None
    usage = mu.Usage(total_tokens=30, input_tokens=20, output_tokens=10)
    a.state.apply(mu.StateUpdate(state="running"))
    b = state.subagents["b"]
    b.state.apply(mu.StateUpdate(state="running"))
    b.state.apply(mu.StateUpdate(state="idle", stop_reason="end_turn", usage=usage))
    a.state.apply(mu.StateUpdate(state="idle", stop_reason="end_turn", usage=usage))
    event = state.apply(announce("c"))  # b finished first: it goes
    assert isinstance(event, SubagentChanged) and event.created
    assert list(state.subagents) == ["a", "c"] and state.folded_subagents.count == 1
    event = state.apply(announce("d"))  # then a, with its grandchild
    assert isinstance(event, SubagentChanged) and list(state.subagents) == ["c", "d"]
    assert state.descendant("a1") is None and state.descendant("a") is None
    folded = state.folded_subagents
    assert folded.count == 3 and folded.usage is not None and folded.usage.total_tokens == 60
    assert isinstance(state.apply(announce("e")), SubagentChanged)  # room for a third
    event = state.apply(announce("f"))  # c, d and e never finished: f is refused
    assert isinstance(event, SubagentRefused) and event.session_id == "f" and folded.refused == 1
    assert list(state.subagents) == ["c", "d", "e"] and state.descendant("f") is None
    state.subagents["d"].state.apply(mu.StateUpdate(state="idle"))  # d finishes: the next one takes its place
    assert isinstance(state.apply(announce("f")), SubagentChanged)
    assert list(state.subagents) == ["c", "e", "f"] and folded.count == 4

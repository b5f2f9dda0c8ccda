"""Runs of updates delivered in one call (``BatchUpdateListener``) fold exactly like one update at a time.

The connection tracks each run of ``session/update`` notifications that one read brought in and hands
each stretch of a session's updates to its Conversation in one call; the Conversation folds stretches of
chunks of its known messages at once and every other note as ``_on_note`` does. These tests check that both
routes give the same history and the same chat events, in process (property test) and over a real pipe with
two sessions and an application handler.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session import BatchUpdateListener, ClientBuilder, Conversation
from acp_session.conversation.turn import ChatTurn
from acp_session.schema import AgentMessageChunk, TextContent, UpdateSessionNotification

from .wire import chunk, joined_all, state, tool, upsert

ROLE_KINDS = ["agent_message", "agent_thought", "user_message"]
IDS = st.sampled_from(["a", "b"])

OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("chunk"), st.sampled_from(ROLE_KINDS), st.sampled_from(["a", "b"]), st.sampled_from("xyzLAMI")
        ),
        st.tuples(st.just("upsert"), st.sampled_from(ROLE_KINDS), st.sampled_from(["a", "b"]), st.sampled_from("xyz")),
        st.tuples(st.just("state"), st.sampled_from(["running", "idle"]), st.just(""), st.just("")),
        st.tuples(
            st.just("tool"), st.sampled_from(["t1", "t2"]), st.sampled_from(["pending", "completed"]), st.just("")
        ),
        st.tuples(st.just("other-session"), st.just("agent_message"), st.just("a"), st.sampled_from("xyz")),
    ),
    max_size=60,
)


# Chunk contents: short plain text, text long enough to close a joined block (TEXT_BLOCK_SIZE is 1024), and
# blocks that are never joined (annotated text, text with _meta, an image).
BLOCKS: dict[str, Any] = {
    "L": {"type": "text", "text": "L" * 700},
    "A": {"type": "text", "text": "a", "annotations": {"priority": 1}},
    "M": {"type": "text", "text": "m", "_meta": {"k": 1}},
    "I": {"type": "image", "data": "AA==", "mimeType": "image/png"},
}


def notes_of(ops: list[tuple[str, str, str, str]]) -> list[UpdateSessionNotification]:
    notes = []
    for op, a, b, c in ops:
        session_id = "s1"
        if op == "chunk":
            item = chunk(b, BLOCKS.get(c, c), kind=a)
        elif op == "upsert":
            item = upsert(b, [c], kind=a)
        elif op == "state":
            item = state(a, stopReason="end_turn") if a == "idle" else state(a)
        elif op == "tool":
            item = tool(a, status=b)
        else:
            item, session_id = chunk(b, c, kind=a), "s2"
        notes.append(UpdateSessionNotification(session_id=session_id, update=item))
    return notes


def listening(mode: str) -> tuple[Conversation, ChatTurn]:
    conversation = Conversation(max_history_size=0)
    conversation.state.session_id = "s1"
    turn = ChatTurn()
    turn._mode = mode  # type: ignore[assignment]
    conversation._receiver = turn
    return conversation, turn


def snapshot(conversation: Conversation, turn: ChatTurn) -> tuple[Any, ...]:
    history = [msgspec.to_builtins(entry) for entry in conversation.history()]
    events = [
        # A fragment's text, not how it was cut: a run feeds a stretch of chunks as one piece.
        ("text", event.cls.__name__, event.message_id, "".join(event.parts)) if hasattr(event, "parts") else repr(event)
        for event in turn._queue
    ]
    steps = [(type(step).__name__, getattr(step, "message_id", None)) for step in turn._steps.values()]
    return history, events, conversation.state.state, steps


@settings(max_examples=300, deadline=None)
@given(OPS, st.sampled_from(["await", "iterate"]))
def test_a_run_folds_like_each_note_on_its_own(ops: list[tuple[str, str, str, str]], mode: str) -> None:
    notes = notes_of(ops)
    one, one_turn = listening(mode)
    for note in notes:
        if note.session_id == "s1":
            one._on_note(note)

    many, many_turn = listening(mode)
    # What the connection does (ClientConnection._track_runs): each stretch of the session's own updates is
    # handed on in one call; other sessions' updates never reach this listener.
    stretch: list[UpdateSessionNotification] = []
    for note in notes:
        if note.session_id == "s1":
            stretch.append(note)
        elif stretch:
            many._on_notes(stretch)
            stretch = []
    if stretch:
        many._on_notes(stretch)
    assert snapshot(many, many_turn) == snapshot(one, one_turn)


AGENT = r"""
import json, sys
def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
def note(sid, update):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})
def text_chunk(sid, mid, text):
    note(sid, {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": text}})
sessions = 0
prompts = {}
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        write({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "t", "version": "1"},
               "capabilities": {"session": {}}}})
    elif method == "session/new":
        sessions += 1
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s%d" % sessions}})
    elif method == "session/prompt":
        sid = msg["params"]["sessionId"]
        prompts[sid] = rid
        write({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u%d" % rid}})
        note(sid, {"sessionUpdate": "user_message", "messageId": "u%d" % rid, "content": msg["params"]["prompt"]})
        note(sid, {"sessionUpdate": "state_update", "state": "running"})
        if len(prompts) == 2:  # both sessions are listening: one write interleaves their streams
            for i in range(300):
                for s in sorted(prompts):
                    text_chunk(s, "r" + s, "%s%d " % (s, i))
                if i == 150:
                    note("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "look",
                                "status": "completed"})
            for s in sorted(prompts):
                note(s, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    sys.stdout.flush()
"""

pytestmark = pytest.mark.anyio


def expected(session_id: str) -> str:
    return "".join(f"{session_id}{i} " for i in range(300))


async def test_two_conversations_on_one_connection_share_interleaved_runs(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    async with ClientBuilder("t", "1").spawn([sys.executable, str(agent)]) as client:
        first = await client.start_conversation(tmp_path)
        second = await client.start_conversation(tmp_path)
        with anyio.fail_after(10):
            turn_one = first.chat("go")
            events: list[Any] = []

            async def iterate() -> None:
                async for event in turn_one:
                    events.append(event)

            async with anyio.create_task_group() as tg:
                tg.start_soon(iterate)
                response_two = await second.chat_to_completion("go")
    assert response_two.text == expected("s2")
    assert response_two.tool_calls == []
    done = events[-1]
    assert type(done).__name__ == "ChatDone"
    assert done.response.text == expected("s1")
    assert [call.tool_call_id for call in done.response.tool_calls] == ["t1"]
    streamed = "".join(event.text for event in events if type(event).__name__ == "ChatText")
    assert streamed == expected("s1")
    # The 300 chunks were joined into blocks exactly as one-by-one folding joins them.
    blocks = [[block.text for block in m.content] for m in second.messages() if m.role == "agent"]  # type: ignore[union-attr]
    assert blocks == [joined_all([f"s2{i} " for i in range(300)])]
    assert len(blocks[0]) == 2


async def test_an_application_handler_sees_every_update_in_order_even_when_one_call_fails(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    seen: list[tuple[str, str]] = []

    def on_update(note: UpdateSessionNotification) -> None:
        update = note.update
        if type(update) is AgentMessageChunk and type(update.content) is TextContent:
            if update.content.text == "s1100 ":
                raise RuntimeError("a bad handler call loses nothing else")
            seen.append((note.session_id, update.content.text))

    builder = ClientBuilder("t", "1").on_session_update(on_update)
    async with builder.spawn([sys.executable, str(agent)]) as client:
        sessions = [await client.new_session(tmp_path), await client.new_session(tmp_path)]
        for session in sessions:
            await session.send_prompt("go")
        with anyio.fail_after(10):
            while len(seen) < 599:
                await anyio.sleep(0.01)
    for session_id in ("s1", "s2"):
        texts = [text for sid, text in seen if sid == session_id]
        assert "".join(texts) == expected(session_id).replace("s1100 ", "")
    assert json.dumps(seen)  # plain data only


async def test_a_batch_application_handler_takes_each_run_in_one_call_in_order(
    tmp_path: Path, anyio_backend: str
) -> None:
    """An ``on_session_update`` handler that is a ``BatchUpdateListener`` gets every update, in wire order (runs
    in ``many``, lone updates in ``one``), each run after the conversations listening have folded it.

    The turn runs in an interpreter of its own (``python -m tests.conversation.test_batch_delivery BACKEND DIR``):
    in a full run's worker, after other modules' tests, every read once came as a run of one on trio (each update
    through ``one``, in order), so whether a read's run reaches ``many`` is checked where nothing else ran before.
    A run goes to ``many`` only when nothing is queued ahead of it in the reader, so the turn gets three tries."""
    done = await anyio.run_process(
        [sys.executable, "-m", "tests.conversation.test_batch_delivery", anyio_backend, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    runs = json.loads(done.stdout)
    assert runs and max(runs) > 1, runs  # the interleaved stream came in runs, each in one call


async def _batch_turns(tmp_path: Path) -> list[int]:
    """Up to three tries of ``_batch_turn``: the sizes of the runs of the first try that came in runs."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    for _ in range(3):
        runs = await _batch_turn(agent, tmp_path)
        if runs and max(runs) > 1:
            break
    return runs


async def _batch_turn(agent: Path, tmp_path: Path) -> list[int]:
    """Both sessions' turns through a ``BatchUpdateListener``, every update checked: the sizes of the runs."""
    seen: list[tuple[str, str]] = []
    runs: list[int] = []
    conversations: list[Conversation] = []

    def texts(notes: list[UpdateSessionNotification]) -> list[tuple[str, str]]:
        out = []
        for note in notes:
            update = note.update
            if type(update) is AgentMessageChunk and type(update.content) is TextContent:
                out.append((note.session_id, update.content.text))
        return out

    def one(note: UpdateSessionNotification) -> None:
        seen.extend(texts([note]))

    def many(notes: list[UpdateSessionNotification]) -> None:
        runs.append(len(notes))
        got = texts(notes)
        for conversation in conversations:  # the run reached the session's listener first
            mine = "".join(text for sid, text in got if sid == conversation.session_id)
            assert mine in "".join(b.text for m in conversation.messages() for b in getattr(m, "content", ()))
        seen.extend(got)
        if ("s1", "s1100 ") in got:
            raise RuntimeError("a failing run is logged; later runs still come")

    builder = ClientBuilder("t", "1").on_session_update(BatchUpdateListener(one, many))
    async with builder.spawn([sys.executable, str(agent)]) as client:
        conversations += [await client.start_conversation(tmp_path), await client.start_conversation(tmp_path)]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(conversations[0].chat_to_completion, "go")
                second = await conversations[1].chat_to_completion("go")
    assert second.text == expected("s2")
    for session_id in ("s1", "s2"):
        assert "".join(text for sid, text in seen if sid == session_id) == expected(session_id)
    return runs


if __name__ == "__main__":  # the batch test's turn, in an interpreter of its own: BACKEND DIR
    print(json.dumps(anyio.run(_batch_turns, Path(sys.argv[2]), backend=sys.argv[1])))

"""A resume's replay is held to the history bound, as live updates are (issue 51, 7): an endless replay reached
1 007 MiB in 15 s while the same messages live stayed at 66 MiB. A scripted v2 agent over real pipes replays
40 000 messages (each sent twice under its id) and, every 10 000, sends an extension notification on which the
client counts what the conversation holds; both ways a replay arrives are tried: ``Conversation.reconnect`` and
the automatic reconnect after the agent died."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.client_errors import TurnLost
from acp_session.conversation import Message, TextChunk

pytestmark = pytest.mark.anyio

REPLAYED, EVERY, HISTORY = 40_000, 10_000, 1_000
BOUND = HISTORY + HISTORY // 8 + 1  # the bound and its trimming slack (history() hides the slack)

# argv: mode ("resume"; "recover": the first process dies in its first turn; "complete": the replay ends with a
# replay_complete update, then one live update comes before the answer), the marker file it leaves, the count.
AGENT = r"""
import json, os, sys
mode, marker, replayed, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = sys.stdout
def write(obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
def update(upd):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": upd}})
def message(i):
    text = f"replayed {i} " + "x" * 100
    return {"sessionUpdate": "agent_message", "messageId": f"r{i}", "content": [{"type": "text", "text": text}]}
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        caps = {"session": {"prompt": {}, "resume": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 2, "info": {"name": "replayer",
               "version": "1"}, "capabilities": caps}})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s"}})
    elif method == "session/prompt" and mode == "recover" and not os.path.exists(marker):
        open(marker, "w").close()
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"messageId": "u1"}})
        update({"sessionUpdate": "state_update", "state": "running"})
        out.flush()
        os._exit(1)  # dies in its first turn: the client reconnects and resumes with a replay
    elif method == "session/resume":
        for i in range(replayed):
            update(message(i))
            update(message(i))  # the same message again, under its id: merged, not a second entry
            if (i + 1) % every == 0:
                write({"jsonrpc": "2.0", "method": "_probe/replayed", "params": {"n": i + 1}})
        if mode == "complete":
            update({"sessionUpdate": "replay_complete"})
            chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "live", "content": {"type": "text",
                     "text": "after"}}
            update(chunk)
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    out.flush()
"""


def argv(tmp_path: Path, mode: str, replayed: int = REPLAYED) -> list[str]:
    script = tmp_path / "replayer.py"
    script.write_text(AGENT)
    return [sys.executable, str(script), mode, str(tmp_path / "died"), str(replayed), str(EVERY)]


def counting(held: list[int], conversation: list[Conversation]) -> ClientBuilder:
    """A builder whose client counts the conversation's timeline at each ``_probe/replayed`` (after the updates
    before it were folded: notifications are handled in order)."""
    return ClientBuilder("t", "1").on_ext_notification(
        "_probe/replayed", lambda _: held.append(len(conversation[0].state.timeline))
    )


def check_history(conversation: Conversation) -> None:
    history = conversation.history()
    assert [type(e) for e in history] == [Message] * HISTORY
    ids = [e.message_id for e in history if isinstance(e, Message)]
    assert ids == [f"r{i}" for i in range(REPLAYED - HISTORY, REPLAYED)]  # the newest, each once, in order


async def test_an_endless_replay_stays_within_the_history_bound(tmp_path: Path) -> None:
    held: list[int] = []
    conversation: list[Conversation] = []
    builder = counting(held, conversation)
    with anyio.fail_after(120):
        async with builder.spawn(argv(tmp_path, "resume")) as first, builder.spawn(argv(tmp_path, "resume")) as second:
            conversation.append(await first.start_conversation(tmp_path, max_history_size=HISTORY))
            await conversation[0].reconnect(second, tmp_path)  # session/resume, replaying onto the state
            assert len(held) == REPLAYED // EVERY
            assert max(held) <= BOUND, held  # 10 000, 20 000, ... before
            check_history(conversation[0])


async def test_the_replay_after_an_automatic_reconnect_stays_within_the_bound(tmp_path: Path) -> None:
    held: list[int] = []
    conversation: list[Conversation] = []
    policy: dict[str, Any] = {"attempts": 3, "backoff": 0.05, "deadline": 120.0, "idle_timeout": None}
    builder = counting(held, conversation).reconnect(**policy)
    with anyio.fail_after(120):
        async with builder.spawn(argv(tmp_path, "recover")) as client:
            conversation.append(await client.start_conversation(tmp_path, max_history_size=HISTORY))
            with pytest.raises(TurnLost):  # its user message is not in the agent's history
                await conversation[0].chat_to_completion("go")
            assert len(held) == REPLAYED // EVERY
            assert max(held) <= BOUND, held
            check_history(conversation[0])


async def test_a_replay_complete_update_ends_the_replay_before_the_answer(tmp_path: Path) -> None:
    """The v2 RFD "session-replay-complete": a ``replay_complete`` update after the last replayed one (an unknown
    variant in the pinned schema). It ends the replay: it is not kept in history, and what follows it before the
    resume's answer is live (the chunk streams get it, ``receive_steps()`` does not mark it replayed)."""
    with anyio.fail_after(60):
        builder = ClientBuilder("t", "1")
        replayer = argv(tmp_path, "complete", replayed=3)
        async with builder.spawn(replayer) as first, builder.spawn(replayer) as second:
            conversation = await first.start_conversation(tmp_path)
            steps, chunks = conversation.receive_steps(), conversation.receive_chunks()
            await conversation.reconnect(second, tmp_path)
            got = await buffered(steps)
            texts = [c.text for c in await buffered(chunks) if isinstance(c, TextChunk)]
    assert [(type(s.event).__name__, s.replayed) for s in got] == [
        *[("MessageChanged", True)] * 6,
        ("ReplayCompleted", False),
        ("MessageChanged", False),
    ]
    assert got[6].event.ended  # a ReplayCompleted that ended a replay
    assert texts == ["after"]  # the replayed messages are not news to a chunk stream; the live one is
    history = conversation.history()
    assert [e.message_id for e in history if isinstance(e, Message)] == ["r0", "r1", "r2", "live"]
    assert len(history) == 4  # no raw entry for the replay_complete


async def buffered(stream: Any) -> list[Any]:
    """What the stream holds now, without waiting."""
    out: list[Any] = []
    with anyio.move_on_after(0):
        async for item in stream:
            out.append(item)
    return out

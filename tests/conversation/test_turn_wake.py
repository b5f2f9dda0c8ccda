"""A turn's reader waits between fragments: woken once per fragment on either backend, and a reader cancelled
while it waits leaves nothing behind that a later fragment trips on (the wait is a bare future on asyncio)."""

from __future__ import annotations

import anyio
import pytest

from acp_session.conversation import ChatText, ChatTurn, Conversation
from acp_session.schema import UpdateSessionNotification
from tests.conversation.wire import chunk, state

pytestmark = pytest.mark.anyio


def started() -> tuple[Conversation, ChatTurn]:
    conversation = Conversation(max_history_size=0)
    conversation.state.session_id = "s1"
    turn = ChatTurn()
    conversation._start(turn, "u1")
    return conversation, turn


def feed(conversation: Conversation, *updates: object) -> None:
    for update in updates:
        conversation._on_note(UpdateSessionNotification(session_id="s1", update=update))


async def test_a_waiting_reader_is_woken_by_each_fragment() -> None:
    conversation, turn = started()
    feed(conversation, state("running"))
    seen: list[str] = []
    got = anyio.Event()

    async def read() -> None:
        async for event in turn:
            if isinstance(event, ChatText):
                seen.append(event.text)
                got.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            for text in ("one ", "two ", "three"):
                await anyio.wait_all_tasks_blocked()  # the reader waits before each fragment
                got = anyio.Event()
                feed(conversation, chunk("a1", text))
                await got.wait()
            feed(conversation, state("idle", stopReason="end_turn"))
    assert seen == ["one ", "two ", "three"]
    assert turn.finished


async def test_a_reader_cancelled_while_waiting_leaves_the_turn_usable() -> None:
    conversation, turn = started()
    feed(conversation, state("running"), chunk("a1", "before "))
    events = aiter(turn)
    with anyio.fail_after(5):
        first = await anext(events)
        while not isinstance(first, ChatText):
            first = await anext(events)
        assert first.text == "before "
        with anyio.move_on_after(0.05) as scope:
            await anext(events)  # nothing queued: waits, then is cancelled
        assert scope.cancelled_caught
    # The cancelled wait is not completed again: no error reaches the fold, and the turn goes on to its end.
    feed(conversation, chunk("a1", "after"), state("idle", stopReason="end_turn"))
    assert turn.finished
    assert turn.response.text == "before after"
    assert turn.response.stop_reason == "end_turn"

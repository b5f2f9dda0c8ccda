"""The batching inbox between the remote streams and the rpc layer, and the HTTP profile's no-decode shortcut for
streamed updates: a reader's whole read goes over at once, the reader waits at the limit, closing drains first;
only messages that cannot matter to routing skip its decode."""

from __future__ import annotations

import anyio
import pytest

from acp_session.transport.remote.http import _routes_nothing
from acp_session.transport.remote.inbox import BatchInbox
from acp_session.transport.remote.routing import read_head

pytestmark = pytest.mark.anyio


async def test_a_read_goes_over_at_once_and_the_writer_waits_at_the_limit() -> None:
    inbox = BatchInbox[int](4)
    progress: list[str] = []

    async def writer() -> None:
        await inbox.put_all([1, 2, 3, 4, 5])  # one read: past the limit, then it waits
        progress.append("first read queued")
        await inbox.put_all([6])
        progress.append("second read queued")

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.wait_all_tasks_blocked()
        assert progress == []  # waiting for room: its next read does not happen
        assert await inbox.take() == [1, 2, 3, 4, 5]
        await anyio.wait_all_tasks_blocked()
        assert progress == ["first read queued", "second read queued"]
        assert await inbox.take() == [6]


async def test_closing_drains_what_was_queued_then_ends_and_frees_a_waiting_writer() -> None:
    inbox = BatchInbox[str](1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(inbox.put_all, ["a", "b"])
        await anyio.wait_all_tasks_blocked()
        inbox.put_nowait("own answer")  # the transport's own message never waits, even past the limit
        inbox.close()
    assert await inbox.take() == ["a", "b", "own answer"]
    with pytest.raises(anyio.EndOfStream):
        await inbox.take()
    inbox.put_nowait("late")  # nobody reads any more: dropped
    await inbox.put_all(["late"])
    with pytest.raises(anyio.EndOfStream):
        await inbox.take()


async def test_a_waiting_reader_wakes_for_the_first_item() -> None:
    inbox = BatchInbox[int](8)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            got: list[list[int]] = []

            async def reader() -> None:
                got.append(await inbox.take())

            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            inbox.put_nowait(7)
    assert got == [[7]]


@pytest.mark.parametrize(
    "message",
    [
        b'{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s"}}',
        b'{"jsonrpc":"2.0","\\u0069d":3,"result":{"sessionId":"s"}}',  # the key spelled with an escape
    ],
)
def test_messages_that_matter_to_routing_are_decoded(message: bytes) -> None:
    head = read_head(message)
    assert head is not None and head.key is not None
    assert not _routes_nothing(message)


def test_a_streamed_update_skips_the_decode() -> None:
    update = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"said \\"id\\""}}}}'
    )
    assert _routes_nothing(update)
    head = read_head(update)
    assert head is not None and head.key is None
    # A subagent's announcement is nothing to routing either: the client says which children it follows.
    announcement = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"p","update":'
        b'{"sessionUpdate":"subagent_update","sessionId":"child"}}}'
    )
    assert _routes_nothing(announcement)

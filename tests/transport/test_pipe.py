"""The direct pipe ends: whole frames under cancellation, reads after idle periods, closing a waiting reader."""

from __future__ import annotations

import os
import time

import anyio
import pytest

from acp_session.transport.pipe import PipeReader, open_pipe, open_stdin_pipe

pytestmark = pytest.mark.anyio


def drain(fd: int) -> bytes:
    out = b""
    while True:
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return out
        if not data:
            return out
        out += data


async def test_a_send_cancelled_on_a_full_pipe_finishes_its_frame_before_the_next() -> None:
    writer, read_fd = open_stdin_pipe()
    os.set_blocking(read_fd, False)
    try:
        first = b"A" * (4 << 20) + b"\n"  # bigger than any pipe buffer: the send must wait
        with anyio.move_on_after(0.1) as scope:
            await writer.send(first)
        assert scope.cancelled_caught
        got = drain(read_fd)
        assert 0 < len(got) < len(first)
        second = b"B" * 10 + b"\n"
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.send, second)
            while len(got) < len(first) + len(second):
                got += drain(read_fd)
                await anyio.sleep(0.001)
        assert got == first + second  # the cut frame was completed first, nothing was lost or doubled
    finally:
        await writer.aclose()
        os.close(read_fd)


async def test_a_send_to_a_closed_reader_is_a_broken_resource() -> None:
    writer, read_fd = open_stdin_pipe()
    os.close(read_fd)
    with pytest.raises(anyio.BrokenResourceError):
        await writer.send(b"x\n")
    await writer.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await writer.send(b"x\n")


async def receive_while_written(reader: PipeReader, write_fd: int, data: bytes) -> bytes:
    """A receive that has to wait (on asyncio the pipe gets registered with the loop), answered by a write."""
    got: list[bytes] = []

    async def receive() -> None:
        got.append(await reader.receive())

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.sleep(0.02)
        os.write(write_fd, data)
    return got[0]


async def test_data_that_arrives_while_nobody_reads_is_read_later() -> None:
    reader, write_fd = open_pipe()
    try:
        os.write(write_fd, b"one\n")
        assert await reader.receive() == b"one\n"
        assert await receive_while_written(reader, write_fd, b"two\n") == b"two\n"
        os.write(write_fd, b"three\n")  # nobody is waiting now: the loop must neither spin nor lose it
        await anyio.sleep(0.05)
        assert await reader.receive() == b"three\n"
        os.close(write_fd)
        write_fd = -1
        with pytest.raises(anyio.EndOfStream):
            await reader.receive()
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        await reader.aclose()


async def test_closing_the_reader_wakes_a_waiting_receive() -> None:
    reader, write_fd = open_pipe()
    try:
        with anyio.fail_after(2):
            async with anyio.create_task_group() as tg:

                async def receive() -> None:
                    with pytest.raises(anyio.ClosedResourceError):
                        await reader.receive()

                tg.start_soon(receive)
                await anyio.sleep(0.02)
                await reader.aclose()
    finally:
        os.close(write_fd)


async def test_a_second_concurrent_receive_is_refused() -> None:
    reader, write_fd = open_pipe()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader.receive)
            await anyio.sleep(0.02)
            with pytest.raises(anyio.BusyResourceError):
                await reader.receive()
            os.write(write_fd, b"x\n")
    finally:
        os.close(write_fd)
        await reader.aclose()


async def test_unread_data_does_not_keep_the_event_loop_busy() -> None:
    """The read end stays registered between reads; data nobody reads must not make the loop spin."""
    reader, write_fd = open_pipe()
    try:
        assert await receive_while_written(reader, write_fd, b"first\n") == b"first\n"
        os.write(write_fd, b"unread\n")
        before = time.process_time()
        await anyio.sleep(0.3)  # nobody receives meanwhile
        busy = time.process_time() - before
        assert busy < 0.15, f"the loop used {busy:.2f} s of CPU while idle"
        assert await reader.receive() == b"unread\n"
    finally:
        os.close(write_fd)
        await reader.aclose()


async def test_poll_ready_reads_on_demand_like_the_readiness_callback(anyio_backend_name: str) -> None:
    """``poll_ready`` (busy polling) works only while a receive waits with a consumer, on asyncio: what the
    consumer takes stays away from the receive, what it declines (and the end of the stream) wakes it."""
    reader, write_fd = open_pipe()
    taken: list[bytes] = []
    reader.set_ready_consumer(lambda data: data.startswith(b"mine") and not taken.append(data))
    assert reader.poll_ready() is None  # nobody is receiving
    received: list[bytes] = []

    async def receive() -> None:
        try:
            while True:
                received.append(await reader.receive())
        except anyio.EndOfStream:
            received.append(b"EOF")

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.sleep(0.01)
        if anyio_backend_name != "asyncio":
            assert reader.poll_ready() is None  # other backends have no readiness callback to stand in for
            os.close(write_fd)
            return
        assert reader.poll_ready() is False  # waiting, nothing there yet
        os.write(write_fd, b"mine 1\n")
        assert reader.poll_ready() is True and taken == [b"mine 1\n"] and received == []
        os.write(write_fd, b"theirs\n")
        assert reader.poll_ready() is True
        assert reader.poll_ready() is None  # the receive has been handed the data and is about to run
        await anyio.sleep(0.01)
        assert received == [b"theirs\n"]
        os.close(write_fd)
        await anyio.sleep(0.01)
        if received[-1:] != [b"EOF"]:
            assert reader.poll_ready() is True  # the end of the stream is handed to the receive too
    assert received == [b"theirs\n", b"EOF"]
    await reader.aclose()

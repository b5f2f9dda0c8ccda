"""Deadlines over every step of reaching a remote agent (issue 51): the WebSocket upgrade within ``connect_timeout``
however slowly its headers come, on the first dial and on a reconnect's; ``initialize`` within
``initialize_timeout`` on both profiles, even when the transport's own ``response_timeout`` is longer."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

from acp_session import ClientBuilder
from acp_session.client_errors import ReconnectFailed
from acp_session.errors import InitializeTimeout
from acp_session.transport.remote import RemoteLimits, RemoteTransportError

from .hostile import Request, Served, initialize_answer, send, serve, ws_accept, ws_read_text, ws_text

pytestmark = pytest.mark.anyio

PATIENT = RemoteLimits(connect_timeout=2.0, response_timeout=600.0)
"""A short dial, and a transport that would wait ten minutes between two reads of an answer."""


async def dribble(stream: ByteStream, served: Served, status_line: bytes) -> None:
    """A status line, then one header byte every 0.2 s, never the end of the headers (h11 takes ~28 h of it)."""
    await send(stream, served, status_line)
    while True:
        await anyio.sleep(0.2)
        await send(stream, served, b"x")


async def test_a_dribbled_websocket_upgrade_ends_within_connect_timeout() -> None:
    async def upgrade(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        await dribble(stream, served, b"HTTP/1.1 101 Switching Protocols\r\n")
        return False

    async with serve(upgrade) as served:
        url = served.url.replace("http://", "ws://")
        with anyio.fail_after(20), pytest.raises(RemoteTransportError) as failed:
            async with ClientBuilder().connect_url(url, limits=PATIENT):
                pass
    assert "did not finish within 2 s" in str(failed.value)


async def test_a_redial_whose_upgrade_dribbles_ends_within_connect_timeout() -> None:
    """The first dial works and drops; each re-dial's upgrade dribbles: every attempt ends at ``connect_timeout``,
    so the policy gives up after its attempts, long before its deadline."""

    async def once_then_dribble(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        if len(served.requests) > 1:
            await dribble(stream, served, b"HTTP/1.1 101 Switching Protocols\r\n")
        await send(stream, served, ws_accept(request))
        initialize = Request("WS", {}, await ws_read_text(stream, buffer))
        await send(stream, served, ws_text(initialize_answer(initialize).partition(b"\r\n\r\n")[2]))
        return False  # and the socket closes: a drop

    builder = ClientBuilder().reconnect(attempts=2, backoff=0.05, deadline=600)
    async with serve(once_then_dribble) as served:
        url = served.url.replace("http://", "ws://")
        async with builder.connect_url(url, limits=PATIENT) as client:
            with anyio.fail_after(30):
                failure = await client.wait_closed()
    assert isinstance(failure, ReconnectFailed) and failure.attempts == 2 and not failure.deadline_reached
    assert isinstance(failure.cause, RemoteTransportError) and "did not finish within 2 s" in str(failure.cause)
    assert len(served.requests) == 3


def silent_initialize(scheme: str, dribbled: bool) -> Any:
    async def handle(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        if scheme == "ws":
            await send(stream, served, ws_accept(request))
            await ws_read_text(stream, buffer)  # initialize, never answered
        elif dribbled:
            await dribble(stream, served, b"HTTP/1.1 200 OK\r\n")
        await anyio.sleep_forever()
        return False

    return handle


@pytest.mark.parametrize(("scheme", "dribbled"), [("http", False), ("http", True), ("ws", False)])
async def test_initialize_timeout_bounds_a_silent_or_dribbling_initialize(scheme: str, dribbled: bool) -> None:
    """The ``initialize`` POST's answer is its body: the POST may last as long as the transport allows
    (``response_timeout``, ten minutes here), but ``initialize_timeout`` ends the wait."""
    async with serve(silent_initialize(scheme, dribbled)) as served:
        url = served.url.replace("http://", f"{scheme}://")
        with anyio.fail_after(20), pytest.raises(InitializeTimeout) as failed:
            async with ClientBuilder().connect_url(url, limits=PATIENT, initialize_timeout=2):
                pass
    assert failed.value.timeout == 2

"""The named contracts around the rpc layer: ``TypedDecoder`` (codec to rpc) and ``RequestLink`` (request to
connection)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
import pytest

from acp_session import codec
from acp_session.errors import InvalidResponse, RequestTimeout
from acp_session.rpc import PendingRequest
from acp_session.rpc.handlers import TypedDecoder, accepts_buffer, result_decoders, typed_decoder_of
from acp_session.rpc.messages import RequestId
from acp_session.transport.backend import Flag, Waiter, current_backend

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: int


def test_codec_decoders_are_typed_decoders_and_plain_functions_are_not() -> None:
    decode = codec.decoder(Point)
    assert isinstance(decode, TypedDecoder)
    assert typed_decoder_of(decode) is decode.msgspec_decoder
    assert result_decoders(decode) == (decode.msgspec_decoder.decode, True)
    bound = msgspec.json.Decoder(Point).decode
    assert not isinstance(bound, TypedDecoder) and typed_decoder_of(bound) is bound.__self__  # type: ignore[attr-defined]
    assert result_decoders(bound) == (None, True)

    def plain(data: bytes) -> Any:
        return data

    assert not isinstance(plain, TypedDecoder) and typed_decoder_of(plain) is None
    assert result_decoders(plain) == (None, False) and not accepts_buffer(plain)
    assert result_decoders(bytes) == (None, False)


class StubLink:
    """The whole ``RequestLink`` a request needs: nothing of a Connection."""

    def __init__(self) -> None:
        backend = current_backend()
        self.new_waiter: Callable[[], Waiter] | None = backend.new_waiter
        self.new_flag: Callable[[], Flag] = backend.new_flag
        self.calls: list[str] = []
        self.cancelled: list[RequestId] = []

    def before_wait(self, handle: PendingRequest[Any]) -> Awaitable[None] | None:
        self.calls.append("before_wait")
        return None

    def send_cancel(self, id: RequestId) -> None:
        self.cancelled.append(id)

    def expire(self, handle: PendingRequest[Any]) -> None:
        self.calls.append("expire")
        handle._timed_out()


async def test_a_pending_request_needs_only_its_link() -> None:
    link = StubLink()
    handle: PendingRequest[Point] = PendingRequest(link, 7, "m", msgspec.json.Decoder(Point).decode, None)
    results: list[Point] = []

    async def wait() -> None:
        results.append(await handle)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        tg.start_soon(wait)
        await anyio.sleep(0.01)
        handle.cancel()
        handle.cancel()
        handle._resolve(msgspec.Raw(b'{"x": 1}'), None)
    assert results == [Point(1), Point(1)] and link.cancelled == [7] and link.calls == ["before_wait"] * 2

    bad: PendingRequest[Point] = PendingRequest(link, 8, "m", codec.decoder(Point), None)
    bad._resolve(msgspec.Raw(b'{"x": "no"}'), None)
    with pytest.raises(InvalidResponse):
        await bad

    slow: PendingRequest[Point] = PendingRequest(link, 9, "m", codec.decoder(Point), 0.01)
    with pytest.raises(RequestTimeout):
        await slow
    assert link.calls[-1] == "expire" and slow.timed_out

"""A byte transport that sees the stdio wire line by line: what the client sent before the agent's ``Connection``
reads it, and what the agent writes before it reaches the client.

The reference agent's batches (``batches``) and its broken variants (``faults``) are such filters: each line can
be passed on, changed, held back, or answered here without the agent ever seeing it. Lines are bytes without their
newline; a filter that answers writes whole lines of its own with ``reply``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from acp_session.transport import Transport
from acp_session.transport.base import DEFAULT_RECEIVE_SIZE, PeerExit
from acp_session.transport.lines import STREAM_END

__all__ = ["LineFilter", "dumps", "loads"]


def dumps(message: Any) -> bytes:
    """One message as a compact JSON line body (no newline)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def loads(line: bytes) -> Any:
    """The JSON value of a line, or None when it is none."""
    try:
        return json.loads(line)
    except ValueError:
        return None


class LineFilter:
    """A ``Transport`` over ``inner`` whose subclasses decide what becomes of each line (``incoming``, ``outgoing``)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self._in = b""
        self._out = b""
        self._lock = anyio.Lock()

    # -- the hooks ---------------------------------------------------------------------------------------

    async def incoming(self, line: bytes) -> list[bytes]:
        """A line the client sent: the lines the agent reads instead (none to swallow it)."""
        return [line]

    def outgoing(self, line: bytes) -> list[bytes]:
        """A line the agent wrote: the lines the client gets instead."""
        return [line]

    def passes(self, data: bytes) -> bool:
        """These whole lines from the client need no look: ``receive`` passes them on untouched."""
        return False

    def idle(self) -> bool:
        """Nothing the agent writes needs a look now: ``send`` passes whole lines through untouched."""
        return False

    async def reply(self, *messages: Any) -> None:
        """Write messages of this filter's own to the client, one line each (raw ``bytes`` are written as they are)."""
        data = b"".join((m if isinstance(m, bytes) else dumps(m)) + b"\n" for m in messages)
        async with self._lock:
            await self.inner.send(data)

    # -- Transport -----------------------------------------------------------------------------------------

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        while True:
            try:
                data = await self.inner.receive(max_bytes)
            except STREAM_END:
                if self._in:  # an unfinished last line goes on as it is
                    rest, self._in = self._in, b""
                    return rest
                raise
            if not self._in and data.endswith(b"\n") and self.passes(data):
                return data
            *lines, self._in = (self._in + data).split(b"\n")
            passed: list[bytes] = []
            for line in lines:
                passed += await self.incoming(line)
            if passed:
                return b"".join(line + b"\n" for line in passed)

    async def send(self, item: bytes) -> None:
        if not self._out and item.endswith(b"\n") and self.idle():
            data = item
        else:
            *lines, self._out = (self._out + item).split(b"\n")
            data = b"".join(out + b"\n" for line in lines for out in self.outgoing(line))
        if data:
            async with self._lock:
                await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def peer_exit(self) -> PeerExit:
        return await self.inner.peer_exit()

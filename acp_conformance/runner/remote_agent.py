"""A remote agent as the probe sees an agent process: bytes in and out, one newline-ended line per message.

``acp-conformance --url`` runs the agent checks through acp-session's own remote transports (the
``RemoteDialer`` that ``ClientBuilder.connect_url`` uses), so each check sees the same messages it would over
stdio; the HTTP (which stream, which status) is the transport's business, and ``checks_remote`` judges it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from acp_session.transport import FrameTransport
from acp_session.transport.remote import RemoteDialer

from .probe import Probe, read_into_probe

__all__ = ["RemoteAgent", "connect_probe"]


class RemoteAgent:
    """Adapts a ``FrameTransport`` to the probe's byte-stream interface (there is no exit code or stderr)."""

    returncode: int | None = None

    def __init__(self, transport: FrameTransport) -> None:
        self.transport = transport
        self.stderr_tail: list[str] = []
        self._pending = b""

    async def receive(self) -> bytes:
        frames = await self.transport.receive_frames()  # EndOfStream once the connection is gone
        return b"".join(
            (frame if isinstance(frame, bytes) else getattr(frame, "data", b"")) + b"\n" for frame in frames
        )

    async def send(self, data: bytes) -> None:
        """Lines to messages: a partial line waits for its end, as on a pipe; blank lines are dropped."""
        data = self._pending + data
        *lines, self._pending = data.split(b"\n")
        frames = [line.rstrip(b"\r") for line in lines if line.strip()]
        if frames:
            await self.transport.send_frames(frames)


@asynccontextmanager
async def connect_probe(dialer: RemoteDialer, *, timeout: float, startup_timeout: float = 20.0) -> AsyncIterator[Probe]:
    """A new connection to the remote agent, read into a ``Probe``; closed (DELETE / close frame) on exit."""
    async with AsyncExitStack() as stack:
        transport = await stack.enter_async_context(dialer.open())
        probe = await read_into_probe(stack, RemoteAgent(transport), timeout, startup_timeout)
        try:
            yield probe
        finally:
            assert probe.tg is not None
            probe.tg.cancel_scope.cancel()

"""A remote agent as the probe sees an agent process: bytes in and out, one newline-ended line per message.

``acp-conformance --url`` runs the agent checks through acp-session's own remote transports (the
``RemoteDialer`` that ``ClientBuilder.connect_url`` uses), so each check sees the same messages it would over
stdio; the HTTP (which stream, which status) is the transport's business, and ``checks_remote`` judges it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio

from acp_session.transport import FrameTransport
from acp_session.transport.remote import (
    RemoteCertificateError,
    RemoteDialer,
    RemoteProtocolError,
    RemoteTransportError,
)

from .probe import Fail, Probe, read_into_probe

__all__ = ["ConnectionLost", "RemoteAgent", "connect_probe", "connection_lost", "unreachable"]


class ConnectionLost(Fail):
    """The remote connection ended under a check; ``failure`` is the transport's typed reason (where the pipe
    of a process would say the agent exited)."""

    def __init__(self, rule: str, failure: BaseException) -> None:
        super().__init__(rule, f"the connection ended: {failure}")
        self.failure = failure


def connection_lost(agent: object) -> ConnectionLost | None:
    """Why ``agent``'s remote connection ended, when it did (None: it did not, or it is not remote). Over HTTP the
    ``initialize`` POST is sent in the background, so its failure (the network, TLS, a refusal) shows here, not
    as an error of the send."""
    if not isinstance(agent, RemoteAgent):
        return None
    failure = getattr(agent.transport, "failure", None)
    return None if failure is None else ConnectionLost(agent.rule, failure)


def unreachable(error: BaseException) -> str | None:
    """Why the agent could not be reached at all (the network, TLS), or None: ``error`` is something the server
    said (an HTTP status, a broken rule), which the checks judge. A certificate failure says how to trust it."""
    failure = error.failure if isinstance(error, ConnectionLost) else error
    if not isinstance(failure, RemoteTransportError) or isinstance(failure, RemoteProtocolError):
        return None
    hint = ""
    if isinstance(failure, RemoteCertificateError):
        hint = " (the server's certificate is not trusted: --ca-file PATH trusts its CA, --insecure skips the check)"
    return f"could not connect to the agent: {failure}{hint}"


class RemoteAgent:
    """Adapts a ``FrameTransport`` to the probe's byte-stream interface (there is no exit code or stderr)."""

    returncode: int | None = None

    def __init__(self, transport: FrameTransport, rule: str) -> None:
        self.transport = transport
        self.rule = rule  # what a lost connection fails: ACP-HTTP or ACP-WS
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
            try:
                await self.transport.send_frames(frames)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                failure = getattr(self.transport, "failure", None)
                if failure is None:
                    raise  # closed by us: the probe says so as for a pipe
                raise ConnectionLost(self.rule, failure) from None


@asynccontextmanager
async def connect_probe(dialer: RemoteDialer, *, timeout: float, startup_timeout: float = 20.0) -> AsyncIterator[Probe]:
    """A new connection to the remote agent, read into a ``Probe``; closed (DELETE / close frame) on exit."""
    async with AsyncExitStack() as stack:
        transport = await stack.enter_async_context(dialer.open())
        rule = "ACP-HTTP" if dialer.profile == "http" else "ACP-WS"
        probe = await read_into_probe(stack, RemoteAgent(transport, rule), timeout, startup_timeout)
        try:
            yield probe
        finally:
            assert probe.tg is not None
            probe.tg.cancel_scope.cancel()

"""A remote agent as the probe sees an agent process: bytes in and out, one newline-ended line per message.

``acp-conformance --url`` runs the agent checks through acp-session's own remote transports (the
``RemoteDialer`` that ``ClientBuilder.connect_url`` uses), so each check sees the same messages it would over
stdio; the HTTP (which stream, which status) is the transport's business, and ``checks_remote`` judges it.

What the checks keep of a connection is bounded, so a server cannot make the runner's memory grow with
connections x messages: each message is at most ``RUNNER_LIMITS.max_message`` (a larger one is skipped by the
transport), the messages kept come to at most ``MAX_KEPT_BYTES``, and of the agent's own messages
(notifications, its requests, answers to nothing that was asked, lines that are not JSON-RPC) only the first
``MAX_OWN_MESSAGES`` are kept. Past that the agent's own messages are counted (its requests among them answered
with an error), an answer to the runner's request becomes an error answer saying why (so the check waiting for
it fails with that, not a timeout), and a failed check's report says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import msgspec

from acp_session.errors import RemoteHttpError
from acp_session.transport import FrameTransport
from acp_session.transport.framing import expand_blocks
from acp_session.transport.remote import (
    RemoteCertificateError,
    RemoteDialer,
    RemoteLimits,
    RemoteProtocolError,
    RemoteTransportError,
)

from .probe import Fail, Probe, read_into_probe

__all__ = [
    "MAX_KEPT_BYTES",
    "MAX_OWN_MESSAGES",
    "RUNNER_LIMITS",
    "ConnectionLost",
    "RemoteAgent",
    "connect_probe",
    "connection_lost",
    "refused_unknown_session",
    "unreachable",
]

MAX_OWN_MESSAGES = 2048
"""Messages of the agent's own that one connection passes to the checks (the reference agent sends about a hundred
over the whole run)."""
MAX_KEPT_BYTES = 8 * 1024 * 1024
"""Bytes of messages one connection passes to the checks, answers included."""
RUNNER_LIMITS = RemoteLimits(max_message=4 * 1024 * 1024, inbox_frames=64)
"""The remote transport's bounds for ``acp-conformance --url``: a message over 4 MiB is skipped (the check waiting
for it fails), not held."""
_REFUSAL = -32603


class _Peek(msgspec.Struct):
    """The two fields that tell an answer from the agent's own messages."""

    id: Any = None
    method: Any = None


_PEEK = msgspec.json.Decoder(_Peek)


def _peek(data: bytes) -> _Peek | None:
    try:
        return _PEEK.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


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


def refused_unknown_session(agent: object) -> bool:
    """Whether ``agent``'s remote connection was ended by an HTTP 404: a Streamable HTTP server refusing a request
    that names a session it does not know (``Acp-Session-Id``) before its agent could answer it (the official
    Python SDK 1.0's server does; the request's answer is then not observable, and the transport ends)."""
    lost = connection_lost(agent)
    data = getattr(lost.failure, "data", None) if lost is not None else None
    return isinstance(data, dict) and RemoteHttpError.describes(data) and data["status"] == 404


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
        self._pending = b""
        self._asked: set[Any] = set()  # ids of the runner's requests not answered yet
        self.own = 0
        """Messages of the agent's own so far (kept or not)."""
        self.kept_bytes = 0
        self.dropped = 0
        """Messages of the agent's own past the bounds: counted, not kept."""
        self.trimmed = 0
        """Answers past ``MAX_KEPT_BYTES``: replaced by an error answer."""

    @property
    def stderr_tail(self) -> list[str]:
        """A remote agent has no stderr; what a failed check's report shows instead, when messages were dropped."""
        if not (self.dropped or self.trimmed):
            return []
        return [
            f"(acp-conformance) this connection keeps {MAX_OWN_MESSAGES} messages of the agent's own and "
            f"{MAX_KEPT_BYTES} bytes in all: {self.dropped} more of its own were counted, not kept (its requests "
            f"among them answered with an error), and {self.trimmed} answers became errors"
        ]

    async def receive(self) -> bytes:
        while True:
            frames = await self.transport.receive_frames()  # EndOfStream once the connection is gone
            kept: list[bytes] = []
            refused: list[bytes] = []
            for frame in expand_blocks(frames):  # a read's block of messages, one each (and routed: split_block)
                data = self._kept(frame if isinstance(frame, bytes) else getattr(frame, "data", b""), refused)
                if data is not None:
                    kept.append(data + b"\n")
            if refused:
                with anyio.move_on_after(5):
                    await self.transport.send_frames(refused)
            if kept:
                return b"".join(kept)

    def _kept(self, data: bytes, refused: list[bytes]) -> bytes | None:
        """What of a received message reaches the checks (see the module's docstring): it, an error answer in its
        place, or nothing (then an agent's request gets an error answer in ``refused``)."""
        peek = _peek(data)
        request_id = peek.id if peek is not None and isinstance(peek.id, (int, str)) else None
        method = peek.method if peek is not None and isinstance(peek.method, str) else None
        room = self.kept_bytes + len(data) <= MAX_KEPT_BYTES
        if method is None and request_id is not None and _key(request_id) in self._asked:
            self._asked.discard(_key(request_id))
            if room:
                self.kept_bytes += len(data)
                return data
            self.trimmed += 1
            why = f"(acp-conformance) an answer of {len(data)} bytes, past the {MAX_KEPT_BYTES} bytes kept"
            return _error(request_id, why)
        self.own += 1
        if self.own <= MAX_OWN_MESSAGES and room:
            self.kept_bytes += len(data)
            return data
        self.dropped += 1
        if method is not None and request_id is not None:
            refused.append(_error(request_id, f"acp-conformance keeps {MAX_OWN_MESSAGES} messages of the agent's own"))
        return None

    async def send(self, data: bytes) -> None:
        """Lines to messages: a partial line waits for its end, as on a pipe; blank lines are dropped."""
        data = self._pending + data
        *lines, self._pending = data.split(b"\n")
        frames = [line.rstrip(b"\r") for line in lines if line.strip()]
        for frame in frames:
            peek = _peek(frame)
            if peek is not None and isinstance(peek.method, str) and isinstance(peek.id, (int, str)):
                self._asked.add(_key(peek.id))  # its answer always reaches the checks
        if frames:
            try:
                await self.transport.send_frames(frames)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                failure = getattr(self.transport, "failure", None)
                if failure is None:
                    raise  # closed by us: the probe says so as for a pipe
                raise ConnectionLost(self.rule, failure) from None


def _error(request_id: int | str, message: str) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": _REFUSAL, "message": message}})


def _key(request_id: Any) -> Any:
    """An id as a set key that keeps 1 and "1" (and true) apart."""
    return (type(request_id).__name__, request_id)


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

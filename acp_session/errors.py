"""Exception hierarchy for acp-session.

Everything is rooted in jsonrpc-base's ``JSONRPCError`` so code written against jsonrpc-base
(``except ProtocolError`` / ``except TransportError``) also catches our errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from jsonrpc_base import JSONRPCError, ProtocolError, TransportError

__all__ = [
    "AcpError",
    "AuthRequired",
    "ConnectionClosed",
    "InitializeTimeout",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "InvalidResponse",
    "MessageTooLarge",
    "MethodNotFound",
    "ParseError",
    "RequestCancelled",
    "RemoteHttpError",
    "RequestTimeout",
    "ResourceNotFound",
    "RpcError",
    "UnsupportedProtocolVersion",
]


class AcpError(JSONRPCError):
    """Root of every error raised by acp-session."""


class RpcError(AcpError, ProtocolError):
    """A JSON-RPC error object, received from the peer or to be sent to it.

    ``args`` is ``(code, message, data)`` like jsonrpc-base's own ``ProtocolError``. A handler that
    raises an ``RpcError`` answers with exactly this code, message and data: it is the only way
    exception text reaches the peer.
    """

    default_code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"
    _by_code: ClassVar[dict[int, type[RpcError]]] = {}

    def __init__(self, code: int | None = None, message: str | None = None, data: Any = None) -> None:
        self.code: int = self.default_code if code is None else code
        self.message: str = self.default_message if message is None else message
        self.data: Any = data
        super().__init__(self.code, self.message, self.data)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "default_code" in cls.__dict__:
            RpcError._by_code.setdefault(cls.default_code, cls)

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        return text if self.data is None else f"{text} (data: {self.data!r})"

    @classmethod
    def from_error(cls, code: int, message: str, data: Any = None) -> RpcError:
        """Build the most specific subclass for ``code`` (a plain ``RpcError`` for unknown codes)."""
        if code == InternalError.default_code and RemoteHttpError.describes(data):
            return RemoteHttpError(code, message, data)
        return RpcError._by_code.get(code, RpcError)(code, message, data)


class ParseError(RpcError):
    default_code = -32700
    default_message = "Parse error"


class InvalidRequest(RpcError):
    default_code = -32600
    default_message = "Invalid request"


class MethodNotFound(RpcError):
    default_code = -32601
    default_message = "Method not found"


class InvalidParams(RpcError):
    default_code = -32602
    default_message = "Invalid params"


class InternalError(RpcError):
    default_code = -32603
    default_message = "Internal error"


class RemoteHttpError(InternalError):
    """A remote transport's HTTP request failed with this status: the request it carried failed with it.

    The HTTP profile answers such a request itself (the server never saw it, or refused it), as the official
    SDKs do: code -32603 with ``data`` ``{"status", "body", "transport": "http"}``; ``body`` is the server's
    text, at most 8 KiB, with any credential the client sent taken out. 409 means the request's session was
    detached (``session/load`` or ``session/resume`` attaches it again); a status that ends the whole
    connection (401, 403, 404, 410) is raised by ``ClientBuilder.connect_url`` when it happens at ``initialize``.
    """

    @staticmethod
    def describes(data: Any) -> bool:
        return isinstance(data, dict) and data.get("transport") == "http" and isinstance(data.get("status"), int)

    @property
    def status(self) -> int:
        return int(self.data["status"]) if self.describes(self.data) else 0

    @property
    def body(self) -> str:
        body = self.data.get("body") if isinstance(self.data, dict) else None
        return body if isinstance(body, str) else ""


class RequestCancelled(RpcError):
    default_code = -32800
    default_message = "Request cancelled"


class AuthRequired(RpcError):
    default_code = -32000
    default_message = "Authentication required"


class ResourceNotFound(RpcError):
    default_code = -32002
    default_message = "Resource not found"


class UnsupportedProtocolVersion(RpcError):
    default_code = -32022
    default_message = "Unsupported protocol version"


class InvalidResponse(AcpError, ProtocolError):
    """The peer answered, but its result did not decode into the expected type."""


class RequestTimeout(AcpError, TimeoutError):
    """No answer arrived within the per-request timeout (``$/cancel_request`` was sent)."""


class InitializeTimeout(RequestTimeout):
    """The agent did not answer ``initialize`` in time (``ClientBuilder.connect/spawn(initialize_timeout=...)``).

    ``agent`` is the agent's command line when it was spawned (else None), ``timeout`` the limit in seconds and
    ``stderr_tail`` the last lines the agent wrote on stderr; ``str()`` shows the last few of them.
    """

    def __init__(self, timeout: float, *, agent: str | None = None, stderr_tail: Sequence[str] = ()) -> None:
        self.timeout = timeout
        self.agent = agent
        self.stderr_tail: tuple[str, ...] = tuple(stderr_tail)
        who = f"the agent `{agent}`" if agent else "the agent"
        text = f"{who} did not answer initialize within {timeout:g} s"
        if self.stderr_tail:
            shown = [line if len(line) <= 200 else line[:199] + "\u2026" for line in self.stderr_tail[-3:]]
            text += "; last stderr lines: " + " | ".join(shown)
        super().__init__(text)


class ConnectionClosed(AcpError, TransportError):
    """The peer's stream ended or the connection was closed while a request was pending.

    For subprocess agents ``exit_code`` and ``stderr_tail`` (the last stderr lines) say why.
    """

    def __init__(
        self, reason: str = "connection closed", *, exit_code: int | None = None, stderr_tail: Sequence[str] = ()
    ) -> None:
        self.reason = reason
        self.exit_code = exit_code
        self.stderr_tail: tuple[str, ...] = tuple(stderr_tail)
        from .transport.exits import exit_words  # a lower layer's words, imported on use (errors is the base)

        said = exit_code is None or reason == exit_words(exit_code)  # the reason already says how it ended
        text = reason if said else f"{reason} (exit code {exit_code})"
        if self.stderr_tail:
            text += "; last stderr lines: " + " | ".join(self.stderr_tail[-5:])
        super().__init__(text)


class MessageTooLarge(AcpError, TransportError):
    """A frame exceeded the size limit. Incoming (``outgoing`` false): it was skipped and the connection kept
    working. Outgoing: the message was refused before anything was sent (a peer with the same limit would
    have skipped it and never answered)."""

    def __init__(self, size: int, limit: int, *, outgoing: bool = False) -> None:
        self.size = size
        self.limit = limit
        self.outgoing = outgoing
        if outgoing:
            message = f"message of {size} bytes exceeds the {limit}-byte frame limit; it was not sent"
        else:
            message = f"frame of at least {size} bytes exceeds the {limit}-byte limit"
        super().__init__(message)

"""The typed errors of serving: a configuration the server refuses, and the missing ``serve`` extra."""

from __future__ import annotations

from ..errors import AcpError

__all__ = ["ServeExtraMissing", "ServerConfigError"]


class ServerConfigError(AcpError, ValueError):
    """A server configuration that is refused before anything listens: a bad address, a non-loopback address
    without a token, a token file others can read, half a TLS pair, an origin that is no origin. The message says
    what to change (and never shows a token)."""


class ServeExtraMissing(AcpError, ImportError):
    """hypercorn, which does the server's HTTP work, is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "serving needs the 'serve' extra (hypercorn is not installed): pip install 'acp-session[serve]'"
        )

"""The typed errors of the remote transports (``RemoteHttpError`` itself lives in ``acp_session.errors``, where
the rpc layer builds it from an error answer)."""

from __future__ import annotations

from jsonrpc_base import TransportError

from ...errors import AcpError, RemoteHttpError

__all__ = [
    "RemoteCertificateError",
    "RemoteExtraMissing",
    "RemoteHttpError",
    "RemoteProtocolError",
    "RemoteTransportError",
]


class RemoteExtraMissing(AcpError, ImportError):
    """The libraries of the remote transports are not installed."""

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"remote agents need the 'remote' extra ({missing} is not installed): pip install 'acp-session[remote]'"
        )


class RemoteTransportError(AcpError, TransportError):
    """The remote transport ended: the network failed, the server refused the connection, or it broke the rules.
    ``ClientBuilder.connect_url`` raises it when that happens before ``initialize`` is answered; afterwards the
    pending requests fail with ``ConnectionClosed``, whose reason is this error's text."""


class RemoteProtocolError(RemoteTransportError):
    """The server broke the transport's rules (a missing header, an oversized event, a wrong content type...)."""


class RemoteCertificateError(RemoteTransportError):
    """The server's TLS certificate was not trusted (an unknown CA, a wrong host name, expired): its own type so
    that a caller can say how to trust it (``ca_file=``, the CLI's ``--ca-file``) instead of only that it failed."""

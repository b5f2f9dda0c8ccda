"""``RemoteDialer``: everything needed to open a connection to a remote agent again and again (URL, headers,
cookie jar, TLS, HTTP version, limits), so a reconnect policy reopens the same endpoint with the same cookies."""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from http.cookiejar import CookieJar
from typing import Literal
from urllib.parse import urlsplit

from ..base import FrameTransport
from .cookies import new_cookie_jar
from .headers import check_headers
from .limits import DEFAULT_REMOTE_LIMITS, RemoteLimits
from .redact import Redactor, redact_url

__all__ = ["HttpVersion", "Profile", "RemoteDialer", "resolve_ca_file"]

Profile = Literal["http", "websocket"]
HttpVersion = Literal["auto", "1.1", "2"]

_SCHEMES: dict[str, tuple[Profile, str]] = {
    "http": ("http", "http"),
    "https": ("http", "https"),
    "ws": ("websocket", "http"),
    "wss": ("websocket", "https"),
}


class RemoteDialer:
    """Opens transports to one remote endpoint: ``http(s)://`` for Streamable HTTP, ``ws(s)://`` for WebSocket.

    Every transport it opens shares its cookie jar (``cookies``), so the cookies a server set on one connection
    go back on the next. TLS certificates are verified unless ``insecure=True``; ``ca_file`` (a PEM file, trusted
    instead of the default CAs; checked here, so a wrong path is a ``ValueError`` now, not a failed connection
    later) or ``ssl_context`` trust a private CA. ``http_version``: ``"auto"`` (HTTP/1.1, over TLS too),
    ``"1.1"``, or ``"2"`` (over TLS by ALPN; over plain ``http://`` with prior knowledge, h2c). ``"auto"`` does
    not offer HTTP/2 because httpcore 1.0's HTTP/2 makes a response whose data has arrived wait while another
    stream's reader waits on the socket: with idle event streams open, a POST's answer sits until the next
    keep-alive (seconds). See docs/remote.md.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        cookies: CookieJar | None = None,
        insecure: bool = False,
        ca_file: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        http_version: HttpVersion = "auto",
        limits: RemoteLimits = DEFAULT_REMOTE_LIMITS,
    ) -> None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES or not parts.hostname:
            raise ValueError(f"a remote agent's URL is http(s):// or ws(s):// with a host (got {redact_url(url)!r})")
        if http_version not in ("auto", "1.1", "2"):
            raise ValueError(f"http_version must be 'auto', '1.1' or '2' (got {http_version!r})")
        if ca_file is not None and ssl_context is None:
            _check_ca_file(ca_file)
        self.url = url
        self.profile: Profile = _SCHEMES[scheme][0]
        self.request_url = _SCHEMES[scheme][1] + url[len(scheme) :]
        """The URL of the HTTP requests (``ws://`` becomes ``http://``: the upgrade is an HTTP GET)."""
        self.headers = check_headers(headers)
        self.cookies = cookies if cookies is not None else new_cookie_jar()
        self.insecure = insecure
        self.ca_file = ca_file
        self.ssl_context = ssl_context
        self.http_version: HttpVersion = http_version
        self.limits = limits
        self.redact = Redactor(url, self.headers)
        """Takes this endpoint's credentials out of a text (error messages, logs)."""
        self.display_url = redact_url(url)
        """The URL without credentials, for messages."""

    def __repr__(self) -> str:
        return f"RemoteDialer({self.display_url!r}, profile={self.profile!r})"

    @property
    def name(self) -> str:
        """What error messages call the agent."""
        return self.display_url

    def ssl_verify(self) -> bool | ssl.SSLContext:
        if self.ssl_context is not None:
            return self.ssl_context
        if self.insecure:
            return False
        if self.ca_file is not None:
            return ssl.create_default_context(cafile=self.ca_file)
        return True

    def http_versions(self) -> tuple[bool, bool]:
        """(HTTP/1.1, HTTP/2) for the HTTP profile's client."""
        if self.http_version == "1.1":
            return True, False
        if self.http_version == "2":
            return False, True
        return True, False  # "auto": see the class docstring

    @asynccontextmanager
    async def open(self) -> AsyncIterator[FrameTransport]:
        """A new connection: a ``FrameTransport`` that ``initialize`` is sent over first; closed on exit
        (``DELETE`` for HTTP, a close frame for WebSocket)."""
        if self.profile == "websocket":
            from .websocket import open_websocket

            async with open_websocket(self) as transport:
                yield transport
        else:
            from .http import open_http

            async with open_http(self) as http_transport:
                yield http_transport


def _check_ca_file(path: str) -> None:
    """ValueError unless ``ssl`` can load ``path`` as PEM certificates."""
    try:
        ssl.create_default_context(cafile=path)
    except FileNotFoundError:
        raise ValueError(f"the CA file {path!r} does not exist") from None
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"the CA file {path!r} is not a PEM certificate file ({exc})") from None


def resolve_ca_file(given: str | None, *, insecure: bool = False) -> str | None:
    """The CA file a command line's ``--url`` trusts: its ``--ca-file``, else ``$SSL_CERT_FILE`` (which OpenSSL's
    own tools and curl honour; the dialer itself reads no environment); None with ``--insecure``."""
    if insecure:
        return None
    return given or os.environ.get("SSL_CERT_FILE") or None

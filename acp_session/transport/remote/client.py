"""The HTTP client of a remote connection (``httpx``): TLS, HTTP versions, timeouts, cookies, custom headers,
and redirects kept to the server's own origin."""

from __future__ import annotations

import errno
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from .errors import RemoteCertificateError, RemoteExtraMissing, RemoteProtocolError, RemoteTransportError

if TYPE_CHECKING:
    import httpx

    from .dialer import RemoteDialer

__all__ = [
    "RemoteClients",
    "describe",
    "descriptors_exhausted",
    "import_httpx",
    "make_client",
    "read_bounded",
    "transport_error",
]


def import_httpx() -> Any:
    """``httpx``, or ``RemoteExtraMissing`` naming the extra."""
    try:
        import httpx
    except ImportError:
        raise RemoteExtraMissing("httpx") from None
    return httpx


def make_client(
    dialer: RemoteDialer, *, http1: bool, http2: bool, streams: int, verify: bool | ssl.SSLContext | None = None
) -> httpx.AsyncClient:
    """A client for ``dialer``'s server; ``streams`` long-lived responses may be open at once (one connection
    each on HTTP/1.1), besides the short requests. ``verify``: a TLS setting to share (``dialer``'s otherwise)."""
    httpx = import_httpx()
    if http2:
        try:
            import h2  # noqa: F401 - httpx needs it for HTTP/2
        except ImportError:
            raise RemoteExtraMissing("h2") from None
    limits = dialer.limits
    timeout = httpx.Timeout(
        connect=limits.connect_timeout,
        read=limits.response_timeout,
        write=limits.response_timeout,
        pool=limits.connect_timeout,
    )
    origin = _origin(httpx.URL(dialer.request_url))
    display = dialer.display_url

    async def same_origin(request: Any) -> None:
        if _origin(request.url) != origin:
            raise RemoteProtocolError(f"the server at {display} redirected to another origin; not followed")

    return httpx.AsyncClient(  # type: ignore[no-any-return]
        headers=list(dialer.headers),
        cookies=dialer.cookies,  # the jar itself (httpx uses a CookieJar in place), shared with reconnects
        verify=dialer.ssl_verify() if verify is None else verify,
        http1=http1,
        http2=http2,
        timeout=timeout,
        follow_redirects=True,
        max_redirects=5,
        event_hooks={"request": [same_origin]},
        trust_env=False,  # no proxy or .netrc credentials picked up from the environment behind the caller's back
        limits=httpx.Limits(max_connections=streams + 8, max_keepalive_connections=8),
    )


class RemoteClients:
    """The HTTP clients of one remote connection: ``messages`` for its POSTs and its DELETE, and for each event
    stream the client ``for_stream`` gives.

    Over HTTP/2 an event stream gets a client, so a connection, of its own. This works around httpcore 1.0's
    HTTP/2 connection (``AsyncHTTP2Connection._receive_events``): the tasks reading its streams take turns on one
    lock, first come first served, and a task whose frames another task has already read still waits for its
    turn, while a task ahead of it with nothing to read yet holds the lock in a socket read until the server
    sends anything at all. With three readers on one connection (the connection's stream, a session's, a POST
    waiting for its 202) a POST's answer or a session's event then waited for the next keep-alive (the reference
    agent's, 15 s; forever from a server that sends none). With one or two readers a task's frames are never left
    behind so: the other reader releasing the lock hands it to the waiting task. ``messages`` has at most two
    (one POST at a time, under the transport's send lock, and the closing DELETE); a stream's connection has
    one. Over HTTP/1.1 every stream has a connection of its own anyway, from the shared pool.
    """

    def __init__(self, dialer: RemoteDialer, *, http1: bool, http2: bool, streams: int) -> None:
        httpx = import_httpx()
        verify = dialer.ssl_verify()
        if not isinstance(verify, ssl.SSLContext):
            # Loading the CA bundle costs tens of milliseconds: once per connection, not once per stream.
            verify = httpx.create_ssl_context(verify=verify, trust_env=False)
        self._dialer = dialer
        self._versions = http1, http2
        self._verify: ssl.SSLContext = verify
        self.own_connections = http2
        """Whether each event stream has a client of its own (HTTP/2 may be used)."""
        self.messages = make_client(dialer, http1=http1, http2=http2, streams=1 if http2 else streams, verify=verify)

    @asynccontextmanager
    async def for_stream(self) -> AsyncIterator[httpx.AsyncClient]:
        """The client to read one event stream with, for as long as it is read."""
        if not self.own_connections:
            yield self.messages
            return
        http1, http2 = self._versions
        client = make_client(self._dialer, http1=http1, http2=http2, streams=1, verify=self._verify)
        try:
            yield client
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    scheme = url.scheme
    port = url.port or (443 if scheme == "https" else 80)
    return scheme, url.host, port


async def read_bounded(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body; True when it had more (the rest is not read)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limit:
            parts.append(chunk[: limit - (size - len(chunk))])
            return b"".join(parts), True
        parts.append(chunk)
    return b"".join(parts), False


def describe(error: BaseException) -> str:
    """The error's text, or its cause's (httpx's ``ConnectError`` often has none of its own: the TLS or socket
    error under it says what happened). Running out of file descriptors is named, wherever it is in the chain:
    anyio's "All connection attempts failed" hides it as the cause of the cause."""
    exhausted = descriptors_exhausted(error)
    if exhausted is not None:
        return exhausted
    seen: BaseException | None = error
    for _ in range(4):
        if seen is None:
            break
        text = str(seen).strip()
        if text:
            return text if seen is error else f"{type(error).__name__}: {text}"
        seen = seen.__cause__ or seen.__context__
    return type(error).__name__


def descriptors_exhausted(error: BaseException) -> str | None:
    """What to say when ``error`` (or an error under it: causes, contexts, an exception group's members) is EMFILE
    or ENFILE, the process or the system out of file descriptors; None otherwise."""
    stack: list[BaseException] = [error]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > 32:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            name = "EMFILE" if current.errno == errno.EMFILE else "ENFILE"
            whose = "this process" if name == "EMFILE" else "the system"
            return f"too many open files ({name}: {whose} reached its limit of file descriptors{_nofile()})"
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        members = getattr(current, "exceptions", None)  # an exception group (a backport's on Python 3.10)
        if isinstance(members, (list, tuple)):
            stack.extend(e for e in members if isinstance(e, BaseException))
    return None


def _nofile() -> str:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return ""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return f", ulimit -n {soft}" if soft != resource.RLIM_INFINITY else ""


def transport_error(error: BaseException, text: str) -> RemoteTransportError:
    """``text`` as a ``RemoteTransportError``, or as a ``RemoteCertificateError`` when ``error`` (or what it wraps:
    httpx wraps httpcore's error, which wraps the ``ssl`` one) is a failed certificate verification."""
    seen: BaseException | None = error
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError):
            return RemoteCertificateError(text)
        seen = seen.__cause__ or seen.__context__
    return RemoteTransportError(text)

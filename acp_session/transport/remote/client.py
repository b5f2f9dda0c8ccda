"""The HTTP client of a remote connection (``httpx``): TLS, HTTP versions, timeouts, cookies, custom headers,
and redirects kept to the server's own origin."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

from .errors import RemoteCertificateError, RemoteExtraMissing, RemoteProtocolError, RemoteTransportError

if TYPE_CHECKING:
    import httpx

    from .dialer import RemoteDialer

__all__ = ["describe", "import_httpx", "make_client", "read_bounded", "transport_error"]


def import_httpx() -> Any:
    """``httpx``, or ``RemoteExtraMissing`` naming the extra."""
    try:
        import httpx
    except ImportError:
        raise RemoteExtraMissing("httpx") from None
    return httpx


def make_client(dialer: RemoteDialer, *, http1: bool, http2: bool, streams: int) -> httpx.AsyncClient:
    """A client for ``dialer``'s server; ``streams`` long-lived responses may be open at once (one connection
    each on HTTP/1.1), besides the short requests."""
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
        verify=dialer.ssl_verify(),
        http1=http1,
        http2=http2,
        timeout=timeout,
        follow_redirects=True,
        max_redirects=5,
        event_hooks={"request": [same_origin]},
        trust_env=False,  # no proxy or .netrc credentials picked up from the environment behind the caller's back
        limits=httpx.Limits(max_connections=streams + 8, max_keepalive_connections=8),
    )


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
    error under it says what happened)."""
    seen: BaseException | None = error
    for _ in range(4):
        if seen is None:
            break
        text = str(seen).strip()
        if text:
            return text if seen is error else f"{type(error).__name__}: {text}"
        seen = seen.__cause__ or seen.__context__
    return type(error).__name__


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

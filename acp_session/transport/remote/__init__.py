"""Remote agents: ACP over Streamable HTTP (``http(s)://``, HTTP/1.1 and HTTP/2) and WebSocket (``ws(s)://``),
as ``FrameTransport``s that ``acp_session.rpc.Connection`` uses like any other (``docs/remote.md``).

``RemoteDialer`` holds what a connection needs (URL, headers, the cookie jar, TLS, limits) and opens a new
transport each time (``ClientBuilder.connect_url`` uses one). The libraries come with the ``remote`` extra;
nothing here imports them until a transport is opened, and then ``RemoteExtraMissing`` names the extra.
"""

from ...errors import RemoteHttpError
from .cookies import BoundedCookieJar, cookie_names, new_cookie_jar
from .dialer import HttpVersion, Profile, RemoteDialer, resolve_ca_file
from .errors import RemoteCertificateError, RemoteExtraMissing, RemoteProtocolError, RemoteTransportError
from .headers import parse_header
from .limits import DEFAULT_REMOTE_LIMITS, RemoteLimits
from .redact import redact_url

__all__ = [
    "DEFAULT_REMOTE_LIMITS",
    "BoundedCookieJar",
    "HttpVersion",
    "Profile",
    "RemoteCertificateError",
    "RemoteDialer",
    "RemoteExtraMissing",
    "RemoteHttpError",
    "RemoteLimits",
    "RemoteProtocolError",
    "RemoteTransportError",
    "cookie_names",
    "new_cookie_jar",
    "parse_header",
    "redact_url",
    "resolve_ca_file",
]

"""Serving ACP: any endpoint over Streamable HTTP (HTTP/1.1 and HTTP/2) and WebSocket, the server side of
``acp_session.transport.remote`` (``docs/serve.md``).

The application gives a ``ConnectionHandler``; per client connection the server calls it with an
``IncomingConnection``, whose ``transport`` carries the client's messages (an ``acp_session.rpc.Connection`` runs on
it as on any transport) and which says who the client is. The HTTP profile's rules (status codes, ``Acp-Session-Id``,
each message routed to its session's event stream by ``sessionId``), browser origins, the bearer token, TLS and the
caps on what clients make the server hold are the server's. ``open_server`` / ``serve`` run it in the caller's event
loop (asyncio or trio) with hypercorn, from the ``serve`` extra; nothing here imports hypercorn until then.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .app import COOKIE_NAME, ENDPOINT, AcpAsgiApp
    from .auth import BearerToken, check_token, generate_token, read_token_file
    from .connection import ConnectionHandler, IncomingConnection, Profile
    from .driver import GRACEFUL_SECONDS, Server, open_server, serve
    from .errors import ServeExtraMissing, ServerConfigError
    from .hooks import ServerHooks
    from .limits import DEFAULT_LIMITS, ServerLimits
    from .options import ServerOptions, limits_from_flags, options_from_flags, parse_address
    from .origins import OriginPolicy, is_loopback_host

# Each export's module, imported on first use (acp_session/_lazy.py).
_EXPORTS = {
    ".app": ("COOKIE_NAME", "ENDPOINT", "AcpAsgiApp"),
    ".auth": ("BearerToken", "check_token", "generate_token", "read_token_file"),
    ".connection": ("ConnectionHandler", "IncomingConnection", "Profile"),
    ".driver": ("GRACEFUL_SECONDS", "Server", "open_server", "serve"),
    ".errors": ("ServeExtraMissing", "ServerConfigError"),
    ".hooks": ("ServerHooks",),
    ".limits": ("DEFAULT_LIMITS", "ServerLimits"),
    ".options": ("ServerOptions", "limits_from_flags", "options_from_flags", "parse_address"),
    ".origins": ("OriginPolicy", "is_loopback_host"),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "COOKIE_NAME",
    "DEFAULT_LIMITS",
    "ENDPOINT",
    "GRACEFUL_SECONDS",
    "AcpAsgiApp",
    "BearerToken",
    "ConnectionHandler",
    "IncomingConnection",
    "OriginPolicy",
    "Profile",
    "ServeExtraMissing",
    "Server",
    "ServerConfigError",
    "ServerHooks",
    "ServerLimits",
    "ServerOptions",
    "check_token",
    "generate_token",
    "is_loopback_host",
    "open_server",
    "limits_from_flags",
    "options_from_flags",
    "parse_address",
    "read_token_file",
    "serve",
]

"""What a server is told before it listens (``ServerOptions``), checked as a whole when it is made.

Safe by default: loopback (``127.0.0.1``) unless told otherwise, and an address beyond loopback only with a token
(``auth``), since anyone who can reach it could otherwise drive the agent. Browser origins are refused unless
allowed (``origins``), and the caps of ``limits`` apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .auth import check_token, read_token_file
from .errors import ServerConfigError
from .hooks import ServerHooks
from .limits import DEFAULT_LIMITS, ServerLimits
from .origins import OriginPolicy, is_loopback_host

__all__ = ["ServerOptions", "limits_from_flags", "options_from_flags", "parse_address"]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) into its parts; ``ServerConfigError`` with a clear message
    otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ServerConfigError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:0), not {text!r}")
    return host, int(port)


@dataclass(frozen=True)
class ServerOptions:
    """Where and how a server listens (``open_server``, ``serve``). ``ServerConfigError`` when the whole does
    not hold: a port out of range, half a TLS pair, an origin that is no origin, a bad token, or a host beyond
    loopback without a token."""

    host: str = "127.0.0.1"
    """The address to listen on: an IP literal or a name (``localhost``); beyond loopback needs ``token``."""
    port: int = 0
    """The port; 0 picks a free one (``Server.port`` and ``Server.url`` say which)."""
    token: str | None = field(default=None, repr=False)
    """Every request must carry ``Authorization: Bearer TOKEN`` (else ``401``); required beyond loopback."""
    tls_cert: str | None = None
    """A PEM certificate (chain) file: serve HTTPS, HTTP/2 or HTTP/1.1 chosen by ALPN; goes with ``tls_key``."""
    tls_key: str | None = None
    """The PEM private key of ``tls_cert``."""
    allow_origins: tuple[str, ...] = ()
    """Browser origins allowed besides the loopback ones on a loopback server (``*``: any; see ``origins``)."""
    require_cookie: bool = False
    """Refuse (``400``) a request that does not return its connection's affinity cookie."""
    limits: ServerLimits = DEFAULT_LIMITS
    """The caps on what clients can make the server hold."""
    hooks: ServerHooks = field(default_factory=ServerHooks, repr=False, compare=False)
    """Where a test server departs from the profile's rules (``ServerHooks``); the default follows them."""

    def __post_init__(self) -> None:
        if not self.host:
            raise ServerConfigError("the host to listen on is empty")
        if not 0 <= self.port <= 65535:
            raise ServerConfigError(f"the port must be 0-65535, not {self.port}")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ServerConfigError("--tls-cert and --tls-key go together")
        if self.token is not None:
            check_token(self.token)
        elif not is_loopback_host(self.host):
            raise ServerConfigError(
                f"listening on {self.host}, beyond loopback, needs a token (--token-file): anyone who can reach "
                "the address could drive the agent"
            )
        try:
            self.origin_policy()
        except ValueError as exc:
            raise ServerConfigError(str(exc)) from None

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    def origin_policy(self) -> OriginPolicy:
        """The origins this server accepts (``OriginPolicy.for_listening``)."""
        return OriginPolicy.for_listening(self.host, self.allow_origins)


def limits_from_flags(flags: Any) -> ServerLimits:
    """``ServerLimits`` from a command line's ``--max-connections``, ``--max-pending``, ``--pending-timeout`` and
    ``--max-buffered-bytes`` (parsed: ``flags.max_connections``, ...)."""
    return ServerLimits(flags.max_connections, flags.max_pending, flags.pending_timeout, flags.max_buffered_bytes)


def options_from_flags(flags: Any, **extra: Any) -> ServerOptions:
    """``ServerOptions`` from the flags that ``acp-session serve`` and ``acp-reference-agent --listen`` share
    (parsed: ``flags.listen``, ``token_file``, ``tls_cert``, ``tls_key``, ``allow_origin`` and the limits'),
    with ``extra`` for the other fields; ``ServerConfigError`` names what to change."""
    host, port = parse_address(flags.listen)
    return ServerOptions(
        host,
        port,
        token=read_token_file(flags.token_file) if flags.token_file else None,
        tls_cert=flags.tls_cert,
        tls_key=flags.tls_key,
        allow_origins=tuple(flags.allow_origin),
        limits=limits_from_flags(flags),
        **extra,
    )

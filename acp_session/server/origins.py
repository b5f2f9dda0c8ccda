"""Which browser origins may talk to the server (``ServerOptions.allow_origins``, the command lines'
``--allow-origin``).

A browser sends ``Origin`` on cross-site requests and on every WebSocket upgrade, and it will send them to a
loopback server too (a page of any site can try ``http://127.0.0.1:PORT/acp``, and DNS rebinding makes a foreign
name resolve to loopback). So a request whose ``Origin`` is not allowed is refused with 403 before anything else
happens. Allowed: no ``Origin`` at all (non-browser clients send none), the loopback origins when the server
listens on loopback (``localhost``, ``127.0.0.0/8``, ``::1``, any port), and what ``--allow-origin`` names
(``*``: any).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["OriginPolicy", "is_loopback_host", "normalize_origin"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an IP literal, IPv6 with or without brackets) is this machine's loopback."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normalize_origin(text: str) -> str | None:
    """``scheme://host[:port]`` lower-cased, the scheme's default port left out; ``null`` stays ``null``; None when
    ``text`` is no origin (a path, a query, user info, no host, a bad port)."""
    text = text.strip()
    if text.lower() == "null":
        return "null"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if not parts.scheme or not host or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        shown += f":{port}"
    return f"{scheme}://{shown}"


@dataclass(frozen=True)
class OriginPolicy:
    """The origins a server accepts: ``allowed`` (normalized, see ``normalize_origin``), ``any_origin``
    (``--allow-origin '*'``), and ``loopback`` (the server listens on loopback, so loopback pages are its own)."""

    allowed: frozenset[str] = field(default_factory=frozenset)
    any_origin: bool = False
    loopback: bool = False

    @classmethod
    def for_listening(cls, host: str, allow: Iterable[str] = ()) -> OriginPolicy:
        """The policy of a server listening on ``host`` with these ``--allow-origin`` values; ValueError for one
        that is not an origin."""
        allowed: set[str] = set()
        any_origin = False
        for text in allow:
            if text.strip() == "*":
                any_origin = True
                continue
            origin = normalize_origin(text)
            if origin is None:
                raise ValueError(f"--allow-origin wants an origin like https://app.example:8443, or '*' (not {text!r})")
            allowed.add(origin)
        return cls(frozenset(allowed), any_origin, is_loopback_host(host))

    def allows(self, origin: str | None) -> bool:
        if origin is None or self.any_origin:
            return True
        normalized = normalize_origin(origin)
        if normalized is None:
            return False
        if normalized in self.allowed:
            return True
        if not self.loopback or normalized == "null":
            return False
        parts = urlsplit(normalized)
        return parts.scheme in _DEFAULT_PORTS and is_loopback_host(parts.hostname or "")

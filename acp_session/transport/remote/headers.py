"""Custom request headers of a remote connection: parsed from "Name: value", checked, and kept apart from the
headers the transport itself owns."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["CONNECTION_ID", "RESERVED", "SESSION_ID", "check_headers", "parse_header"]

CONNECTION_ID = "Acp-Connection-Id"
SESSION_ID = "Acp-Session-Id"

RESERVED = frozenset(
    name.lower()
    for name in (
        CONNECTION_ID,
        SESSION_ID,
        "Accept",
        "Accept-Encoding",
        "Connection",
        "Content-Length",
        "Content-Type",
        "Host",
        "Sec-WebSocket-Key",
        "Sec-WebSocket-Version",
        "Transfer-Encoding",
        "Upgrade",
    )
)
"""Headers the transport sets itself; a custom one of these names would break the profile."""

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` (the CLI's ``--header``) as a checked pair."""
    name, colon, value = text.partition(":")
    if not colon:
        raise ValueError(f"a header is 'Name: value' (got {name.strip()[:40]!r} without a colon)")
    return _checked(name.strip(), value.strip())


def check_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> tuple[tuple[str, str], ...]:
    """The custom headers, checked: valid names, no line breaks in values, none the transport owns."""
    if headers is None:
        return ()
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return tuple(_checked(name, value) for name, value in pairs)


def _checked(name: str, value: str) -> tuple[str, str]:
    if not _TOKEN.match(name):
        raise ValueError(f"invalid header name {name[:40]!r}")
    if name.lower() in RESERVED:
        raise ValueError(f"the header {name} is set by the transport itself")
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"the value of header {name} has a line break")
    return name, value

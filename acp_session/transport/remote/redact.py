"""Keeping credentials out of logs, error messages and transcripts: URL user info and the values of the
headers that carry secrets are never shown, and a server that echoes them back gets them taken out."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["SECRET_HEADERS", "Redactor", "redact_url"]

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
_HIDDEN = "[redacted]"


def redact_url(url: str) -> str:
    """``url`` without user name and password (``https://[redacted]@host/acp``)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{_HIDDEN}@{host}", parts.path, parts.query, parts.fragment))


class Redactor:
    """Takes the secrets of one connection out of any text: header values of ``SECRET_HEADERS`` (and the token
    of an ``Authorization: Bearer X``) and the URL's password."""

    __slots__ = ("_secrets",)

    def __init__(self, url: str, headers: Iterable[tuple[str, str]]) -> None:
        secrets: set[str] = set()
        for name, value in headers:
            if name.lower() in SECRET_HEADERS and value:
                secrets.add(value)
                scheme, _, token = value.partition(" ")
                if token and scheme.isalpha():
                    secrets.add(token.strip())
        parts = urlsplit(url)
        for secret in (parts.password, parts.username):
            if secret:
                secrets.add(secret)
        if parts.username is not None or parts.password is not None:  # sent as Basic authentication
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            secrets.add(base64.b64encode(pair.encode()).decode())
        # Longest first: a token inside a longer value is replaced after the value itself.
        self._secrets = tuple(sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, _HIDDEN)
        return text

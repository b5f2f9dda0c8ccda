"""Keeping credentials out of logs, error messages, transcripts and traces: URL user info and the values of the
headers that carry secrets are never shown, and a server that echoes them back gets them taken out. Text that
is not ours (an agent's tool titles, which may quote a command line) gets what looks like a credential taken out
by its shape (``redact_secrets``): the same headers and URL user info, auth schemes, ``*_TOKEN=...`` and the
prefixes of well-known token formats."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["SECRET_HEADERS", "Redactor", "redact_secrets", "redact_url"]

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


_HEADER_NAMES = "|".join(sorted((re.escape(name) for name in SECRET_HEADERS), key=len, reverse=True))
_SHAPES = re.compile(
    "|".join(
        (
            # A secret header as text, its whole value: "Authorization: Bearer X", "-H 'x-api-key: X'", "Cookie: a; b".
            rf"(?P<header>\b(?:{_HEADER_NAMES})\b\s*[:=]\s*)[^\r\n'\"]+",
            # An auth scheme and its token anywhere ("bearer X" in a message, a curl command line).
            r"(?P<scheme>\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{8,}",
            # NAME=value and name: value where the name says it holds a secret (GITHUB_TOKEN, api_key, password).
            r"(?P<named>\b[\w.-]*(?:api[_-]?key|token|secret|passw(?:or)?d|pwd|credentials?|auth)\b[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"'&,;]{4,}",
            # Well-known token formats, by their prefixes; JSON Web Tokens; private keys.
            r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,})",
            r"\b(?:xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
        )
    ),
    re.IGNORECASE,
)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/@'\"<>]+@", re.IGNORECASE)


def _hide(match: re.Match[str]) -> str:
    kept = match.group("header") or match.group("scheme") or match.group("named") or ""
    return kept + _HIDDEN


def redact_secrets(text: str) -> str:
    """``text`` with what looks like a credential replaced by ``[redacted]`` (the header's or the variable's name
    and the auth scheme are kept, so the text still says what was there). By shape only: a secret that looks
    like nothing in particular (a bare random string) stays; ``Redactor`` takes out the ones a connection knows."""
    return _SHAPES.sub(_hide, _URL.sub(_hide_user_info, text))


def _hide_user_info(match: re.Match[str]) -> str:
    """``scheme://user:password@`` as ``redact_url`` shows it (given a stand-in host, taken off again)."""
    return redact_url(match.group(0) + "h").removesuffix("h")

"""The server's bearer token: who may call it at all (docs/serve.md, "Token").

With a token every request, the WebSocket upgrade included, must carry ``Authorization: Bearer TOKEN``; any other
gets ``401`` before it has any effect. The comparison takes the same time whatever the guess (both sides are hashed,
then compared with ``hmac.compare_digest``, so neither the content nor the length leaks), and the token is never
logged, shown in a ``repr`` or handed to the application. A token file must be readable by its owner only: a token
others can read is no secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from collections.abc import Iterable

from .errors import ServerConfigError

__all__ = ["MAX_TOKEN_FILE_BYTES", "BearerToken", "check_token", "generate_token", "read_token_file"]

MAX_TOKEN_FILE_BYTES = 4096
"""A token file larger than this is refused (a token is a line of text)."""

_TOKEN = re.compile(r"[\x21-\x7e]+")  # visible ASCII: what an HTTP header carries as it is


def check_token(token: str) -> str:
    """``token`` if it can be sent in an ``Authorization`` header (visible ASCII, no spaces); else
    ``ServerConfigError`` (which does not show it)."""
    if not token:
        raise ServerConfigError("the token is empty")
    if not _TOKEN.fullmatch(token):
        raise ServerConfigError("the token must be visible ASCII characters only (no spaces or line breaks)")
    return token


def generate_token() -> str:
    """A new random token (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in the file at ``path`` (surrounding whitespace and the final line break dropped).

    ``ServerConfigError`` when the file cannot be read, is not a regular file, is larger than
    ``MAX_TOKEN_FILE_BYTES``, holds no valid token, or (on POSIX) grants any permission to its group or to others
    (``chmod 600`` it): the mode is read from the opened file, so it cannot change between the check and the read.
    """
    shown = os.fspath(path)
    try:
        fd = os.open(shown, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    except OSError as exc:
        raise ServerConfigError(f"cannot read the token file {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ServerConfigError(f"the token file {shown} is not a regular file")
        if os.name == "posix" and info.st_mode & 0o077:
            raise ServerConfigError(
                f"the token file {shown} is open to others (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"make it readable by its owner only: chmod 600 {shown}"
            )
        data = b""
        while len(data) <= MAX_TOKEN_FILE_BYTES and (chunk := os.read(fd, MAX_TOKEN_FILE_BYTES + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise ServerConfigError(f"the token file {shown} is larger than {MAX_TOKEN_FILE_BYTES} bytes")
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ServerConfigError(f"the token file {shown} is not ASCII text") from None
    try:
        return check_token(text)
    except ServerConfigError as exc:
        raise ServerConfigError(f"the token file {shown}: {exc}") from None


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


class BearerToken:
    """A server's token, ready to check requests' ``Authorization`` headers against (never shown)."""

    __slots__ = ("_digest",)

    def __init__(self, token: str) -> None:
        self._digest = _digest(check_token(token).encode("ascii"))

    def __repr__(self) -> str:
        return "BearerToken(<hidden>)"

    def allows(self, authorization: Iterable[bytes]) -> bool:
        """Whether the request's ``Authorization`` headers (their raw values) are exactly one ``Bearer`` with
        this token (the scheme's case does not matter)."""
        values = list(authorization)
        if len(values) != 1:
            return False
        scheme, _, credentials = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(_digest(credentials.strip()), self._digest)

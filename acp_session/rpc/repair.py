"""Lone UTF-16 surrogate escapes: the one repair made to a frame that does not decode (issue 26, 5).

JSON text may spell a character outside the Basic Multilingual Plane as two escapes, ``\\ud83d\\ude00``.
A sender that cuts a string inside such a pair (Node's ``JSON.stringify`` of ``text.slice(0, n)``) writes
one of them alone; that is not a Unicode character, and msgspec, which decodes to UTF-8 strings, rejects the
whole message. Rather than lose the message (a streamed chunk) or answer a request with ``-32700`` and id
null (the sender then waits forever), each lone escape is replaced with ``\\ufffd``, the replacement
character, which is also what the sender's own UTF-8 encoder writes for it. Escapes that form a pair, and
text that merely looks like an escape (``\\\\ud83d``, an escaped backslash), are left alone.

Only tried when the decode already failed and the frame contains ``\\uD``: nothing on the hot path.
"""

from __future__ import annotations

import re

__all__ = ["repair_lone_surrogates"]

# Left to right: an escaped backslash (skipped whole, so what follows is plain text), a high surrogate escape
# with an optional low one after it, or a low one alone.
_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_ESCAPES = re.compile(rb"\\\\|" + _HIGH + rb"(" + _LOW + rb")?|" + _LOW)
_REPLACEMENT = rb"\ufffd"


def _fix(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if text == b"\\\\" or match.group(1) is not None:
        return text  # an escaped backslash, or a complete pair
    return _REPLACEMENT


def repair_lone_surrogates(frame: bytes) -> bytes | None:
    """``frame`` with each lone surrogate escape replaced by ``\\ufffd``; None when it has none."""
    if b"\\ud" not in frame and b"\\uD" not in frame:
        return None
    fixed = _ESCAPES.sub(_fix, frame)
    return None if fixed == frame else fixed

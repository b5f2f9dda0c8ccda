"""Text from an agent made safe to show on a terminal, or to print as one JSON line.

An agent (or a registry, a config file) controls every string the CLI shows: a title, a tool call's kind, an
option's name, an error message. A terminal executes what such a string may hold: escape sequences (CSI cursor
movement and erasing, OSC 52 clipboard writes, OSC 0 window titles, DCS), C0 and C1 controls (U+009B is an 8-bit
CSI), carriage returns and backspaces that overwrite what was shown, bidi overrides and isolates (U+202E shows a
file name backwards) and other invisible format characters. ``terminal_safe`` removes all of them; newlines and
tabs are kept only where the field may hold several lines. ``json_safe`` escapes the same characters inside one
JSON line (as ``\\uXXXX``) so the data is unchanged while a terminal showing the line executes nothing.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["json_safe", "terminal_safe"]

# Escape sequences, 7-bit (ESC ...) and 8-bit (C1 introducers), removed whole: CSI with its parameters; OSC, DCS,
# SOS, PM and APC up to their terminator (BEL or ST) or the end of the text; any other ESC with its intermediates.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_INTRODUCERS = re.compile(r"[\x1b\x90\x98\x9b\x9d\x9e\x9f]")

# The ranges holding every character of categories Cc, Cf, Zl, Zp and Cs (a test checks them against this
# Python's ``unicodedata``), a little wider where a block may grow; each match is judged by its category (once,
# then cached), so text without them is copied by the regex engine alone.
SUSPECT_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u089f\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff0-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001345f\U0001bca0-\U0001bcaf\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
_SUSPECT_ONE_LINE = re.compile(f"[\t\n{SUSPECT_RANGES}]")
_SUSPECT_LINES = re.compile(f"[{SUSPECT_RANGES}]")

_JOINERS = frozenset("\u200c\u200d")
"""Format characters kept: the zero-width (non-)joiner shapes Persian, Indic scripts and emoji, and moves nothing."""

_LINE_BREAKS = frozenset("\n\r\u2028\u2029")

_verdicts: dict[tuple[str, bool], str] = {}


def _verdict(char: str, lines: bool) -> str:
    """What ``char`` (in ``SUSPECT_RANGES``, a tab or a newline) becomes: itself, a newline or a space, nothing,
    or U+FFFD."""
    key = (char, lines)
    found = _verdicts.get(key)
    if found is not None:
        return found
    category = unicodedata.category(char)
    if char in _LINE_BREAKS:
        found = "\n" if lines else " "
    elif char == "\t":
        found = "\t" if lines else " "
    elif category == "Cs":  # a lone surrogate (undecodable bytes): cannot even be encoded
        found = "\ufffd"
    elif category == "Cc" or (category == "Cf" and char not in _JOINERS):
        found = ""
    else:
        found = char
    if len(_verdicts) < 65536:
        _verdicts[key] = found
    return found


def _one_line(match: re.Match[str]) -> str:
    return _verdict(match.group(), False)


def _lines(match: re.Match[str]) -> str:
    return _verdict(match.group(), True)


def terminal_safe(text: str, *, newlines: bool = False) -> str:
    """``text`` with nothing a terminal would execute: no escape sequence, no C0 or C1 control, no bidi override
    or isolate, no other invisible format character (the zero-width joiners stay).

    ``newlines``: the field may hold several lines, so newlines and tabs are kept (``\\r\\n``, a lone ``\\r`` and
    U+2028/U+2029 become ``\\n``); else every line break and tab becomes a space, so a one-line field (a title, a
    name, a status) cannot draw a line of its own.
    """
    if _INTRODUCERS.search(text):
        text = _SEQUENCES.sub("", text)
    if newlines:
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        return _SUSPECT_LINES.sub(_lines, text)
    return _SUSPECT_ONE_LINE.sub(_one_line, text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _SUSPECT_LINES.match(char) or _verdict(char, True) == char:
        return char
    code = ord(char)
    if code > 0xFFFF:  # a JSON escape holds one UTF-16 unit: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


_NOT_ASCII = re.compile(r"[^\x00-\x7e]")  # (DEL too)


def json_safe(line: str) -> str:
    """One JSON text (from ``json.dumps(..., ensure_ascii=False)``, which already escapes C0 controls) with every
    other character ``terminal_safe`` removes written as a ``\\uXXXX`` escape: the same data once parsed."""
    return line if line.isascii() and "\x7f" not in line else _NOT_ASCII.sub(_json_escape, line)

"""The shape of a ``config.toml``, checked before ``tomllib`` reads it: nesting deeper than ``MAX_DEPTH`` overflows
its recursion (a traceback), and a dotted key of many parts costs memory quadratic in their number (12 000 parts:
860 MiB), so both are counted first in one linear pass over the text and refused in one line.

The pass knows only what it needs of TOML: strings (basic, literal, and their multi-line forms, whose brackets and
dots are text), comments, brackets and dot-separated runs of words. Whatever it cannot follow (a string left open)
it leaves to ``tomllib``, which reports the position.
"""

from __future__ import annotations

import re

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_KEY_PARTS", "shape_problem"]

MAX_BYTES = 1 << 20
"""A config file larger than this (1 MiB) is refused unread: a real one is a few kilobytes."""

MAX_DEPTH = 32
"""Arrays and inline tables nested deeper than this are refused (a real config nests 3 or 4 levels)."""

MAX_KEY_PARTS = 32
"""A dotted key of more parts than this (``a.b.c...``) is refused (the deepest real one has 6)."""

_WORD = re.compile(r"[A-Za-z0-9_+\-:]+")


def _string_end(text: str, start: int) -> int:
    """Where the string opening at ``start`` ends (just after its closing quote), or -1 if it never does."""
    quote = text[start]
    if text.startswith(quote * 3, start):
        at = start + 3
        while True:
            close = text.find(quote * 3, at)
            if close < 0:
                return -1
            if quote == '"' and _escaped(text, close):
                at = close + 1
                continue
            end = close + 3
            while end < len(text) and end - close < 5 and text[end] == quote:  # up to two quotes of content
                end += 1
            return end
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    at = start + 1
    while True:
        close = text.find(quote, at, line_end)
        if close < 0:
            return -1
        if quote == '"' and _escaped(text, close):
            at = close + 1
            continue
        return close + 1


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def shape_problem(text: str) -> str | None:
    """Why ``text`` is too deep or has too long a dotted key for a config file, or None."""
    depth = parts = 0
    after_dot = False
    at, size = 0, len(text)
    while at < size:
        char = text[at]
        if char in " \t":
            at += 1
            continue
        if char == "#":
            end = text.find("\n", at)
            at = size if end < 0 else end
            continue
        if char == ".":
            after_dot = True
            at += 1
            continue
        if char in "\"'":
            end = _string_end(text, at)
            if end < 0:
                return None  # tomllib says where the string is left open
            at = end
        else:
            word = _WORD.match(text, at)
            if word is None:  # a bracket, '=', ',', a line break: the end of any dotted run
                if char in "[{":
                    depth += 1
                    if depth > MAX_DEPTH:
                        return f"nested deeper than {MAX_DEPTH} levels (line {text.count(chr(10), 0, at) + 1})"
                elif char in "]}":
                    depth = max(depth - 1, 0)
                parts, after_dot = 0, False
                at += 1
                continue
            at = word.end()
        parts = parts + 1 if after_dot else 1
        after_dot = False
        if parts > MAX_KEY_PARTS:
            return f"a dotted key of more than {MAX_KEY_PARTS} parts (line {text.count(chr(10), 0, at) + 1})"
    return None

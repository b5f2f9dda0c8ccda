"""Which line of a failed check's transcript the failure is about, so a report can show it highlighted, with a few
lines around it, instead of opening on whatever came first (often a long ``session/new`` answer).

A check that knows the line says so (``Fail(..., offending=line)``). Otherwise the line is guessed from the
failure message, which usually quotes what it objects to (a line, a value, a method): the subject's line that
shares the most ten-character pieces with the message, ignoring spaces and quotes (so ``'x'`` in a Python repr
and ``"x"`` in JSON match); ties go to the later line. With nothing in common, the subject's last line: a wait
that ended without what it waited for ends there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .frames import WireLine

__all__ = ["focus", "locate", "transcript_for"]

_PIECE = 10  # characters per piece compared
_SCAN = 8000  # characters of a line compared (its head: the JSON-RPC envelope and the fields that matter)
_IGNORED = re.compile(r"[\s'\"\\]+")


def _pieces(text: str) -> set[str]:
    flat = _IGNORED.sub("", text)
    return {flat[i : i + _PIECE] for i in range(max(0, len(flat) - _PIECE + 1))}


def focus(message: str, lines: Sequence[tuple[str, str]], subject: str) -> int | None:
    """The index in ``lines`` ((direction, text) pairs) of the line ``message`` is about; ``subject`` is the
    direction of the lines the check judges ("received" in agent mode, "sent" in client mode). None without
    lines."""
    if not lines:
        return None
    wanted = _pieces(message[:_SCAN])
    best, best_score = None, 0
    for index, (direction, text) in enumerate(lines):
        if direction != subject:
            continue
        score = len(wanted & _pieces(text[:_SCAN]))
        if score and score >= best_score:
            best, best_score = index, score
    if best is not None:
        return best
    theirs = [index for index, (direction, _) in enumerate(lines) if direction == subject]
    return theirs[-1] if theirs else len(lines) - 1


def locate(text: str, lines: Sequence[str], start: int) -> int | None:
    """The index of ``text`` among ``lines`` (a check's named offending line): its last occurrence at or after
    ``start`` (the check's own traffic), else its last one before (what the agent wrote earlier, e.g. while
    starting). None when it is not there."""
    found = [index for index, line in enumerate(lines) if line == text]
    if not found:
        return None
    own = [index for index in found if index >= start]
    return own[-1] if own else found[-1]


def transcript_for(
    wire: Sequence[WireLine], start: int, limit: int, message: str, named: bytes | str | None = None
) -> tuple[list[WireLine], int | None]:
    """A failed check's transcript (its own traffic from ``start`` on, the last ``limit`` lines) and the index of
    the offending line in it: ``named`` (the line the check named) wherever it is, put first when the agent wrote
    it before the check began; else the line ``message`` is about (``focus``)."""
    lines = list(wire[start:][-limit:])
    first = len(wire) - len(lines)
    if named is not None:
        text = WireLine.of("received", 0.0, named.encode() if isinstance(named, str) else named).line
        received = [w.line if w.direction == "received" else None for w in wire]
        at = locate(text, [line or "" for line in received], first) if text else None
        if at is not None and received[at] is not None:
            if at < first:
                return [wire[at], *lines], 0
            return lines, at - first
    return lines, focus(message, [(w.direction, w.line) for w in lines], "received")

"""The one place the CLI writes to a terminal: every string handed to ``Screen`` is made safe (``safe_text``)
before it is written, and the only escapes written are the CLI's own styles and the erase-line of its status
line, given as ``Style`` values, never inside text. A new field shown through it cannot forget the cleaning.
The agent's Markdown goes through it as well: cleaned, then rendered by rich without hyperlinks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, NewType, TextIO

from .safe_text import terminal_safe

if TYPE_CHECKING:
    from .markdown import MarkdownStream

__all__ = ["BOLD", "CYAN", "DIM", "GREEN", "RED", "RESET", "YELLOW", "Screen", "Span", "Style", "Styled", "say"]

Style = NewType("Style", str)
"""One SGR escape of the CLI's own (bold, dim, a colour): the only escapes that reach a terminal with text."""

RESET = "\x1b[0m"
BOLD = Style("\x1b[1m")
DIM = Style("\x1b[2m")
RED = Style("\x1b[31m")
GREEN = Style("\x1b[32m")
YELLOW = Style("\x1b[33m")
CYAN = Style("\x1b[36m")
_STYLES = frozenset({BOLD, DIM, RED, GREEN, YELLOW, CYAN})

ERASE_LINE = "\r\x1b[K"


class Styled(NamedTuple):
    """Text shown in ``styles`` (on a colour terminal; plain otherwise)."""

    text: str
    styles: tuple[Style, ...] = ()


Span = str | Styled


class Screen:
    """Writes cleaned text to ``stream``; ``color``: whether the styles are written; ``before_write`` is called
    before anything is written (the CLI erases its status line there)."""

    def __init__(self, stream: TextIO, *, color: bool = False, before_write: Callable[[], None] = lambda: None) -> None:
        self.stream = stream
        self.color = color
        self.before_write = before_write
        self._markdown: MarkdownStream | None = None

    def text(self, *spans: Span, newlines: bool = False) -> str:
        """The spans cleaned (``newlines``: they may hold line breaks and tabs) and styled, as one string."""
        parts = []
        for span in spans:
            if isinstance(span, Styled):
                text = terminal_safe(span.text, newlines=newlines)
                styles = [style for style in span.styles if style]
                if any(style not in _STYLES for style in styles):
                    raise ValueError(f"not one of the CLI's styles: {styles!r}")
                parts.append("".join(styles) + text + RESET if self.color and styles and text else text)
            else:
                parts.append(terminal_safe(span, newlines=newlines))
        return "".join(parts)

    def write(self, *spans: Span, newlines: bool = False, end: str = "") -> str:
        """Write the spans (see ``text``) and then ``end`` (``"\\n"`` or nothing); return what was written."""
        if end not in ("", "\n"):
            raise ValueError(f"end must be a newline or nothing, not {end!r}")
        written = self.text(*spans, newlines=newlines) + end
        if written:
            self.before_write()
            self.stream.write(written)
            self.stream.flush()
        return written

    def line(self, *spans: Span, newlines: bool = False) -> str:
        """The spans and a newline."""
        return self.write(*spans, newlines=newlines, end="\n")

    def erase_line(self) -> None:
        """Move to the start of the line and erase it (the status line, a progress line)."""
        self.before_write()
        self.stream.write(ERASE_LINE)
        self.stream.flush()

    # -- Markdown ------------------------------------------------------------------------------------

    @property
    def markdown_active(self) -> bool:
        """A Markdown message is being rendered (part of it may be drawn in a live region)."""
        return self._markdown is not None and self._markdown.active

    def markdown(self, text: str) -> None:
        """Render more of the agent's Markdown message (cleaned first; rich writes the styles)."""
        if self._markdown is None:
            from .markdown import MarkdownStream

            self._markdown = MarkdownStream(self.stream)
        self.before_write()
        self._markdown.feed(terminal_safe(text, newlines=True))

    def end_markdown(self) -> None:
        """Print the rest of the Markdown message; the cursor ends at the start of a line."""
        if self._markdown is not None and self._markdown.active:
            self.before_write()
            self._markdown.end()


def say(text: str, stream: TextIO | None = None) -> None:
    """A message of the CLI's own, whose lines may quote the agent (an error, a login hint), on ``stream``
    (default: stderr at the time); each line is cleaned on its own."""
    screen = Screen(stream if stream is not None else sys.stderr)
    for line in text.split("\n"):
        screen.line(line)

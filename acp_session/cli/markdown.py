"""The agent's Markdown rendered on a terminal as it streams, with rich (the ``cli`` extra).

Finished blocks (text up to a blank line outside a code fence) are printed once, rendered: headings, lists,
emphasis, code blocks with syntax highlighting. The block still arriving is shown in a small live region that is
redrawn as text comes in and replaced by its final rendering when the message ends (or anything else is
printed). Without a terminal, with ``--json`` or ``NO_COLOR`` the CLI prints the text as it comes instead.

A single line break stays a line break (an agent's lines, a poem, an address), as a chat shows them, instead of
being joined into one paragraph line as CommonMark prints it.

Links are shown as ``text (target)``, never as a terminal hyperlink (OSC 8) whose target cannot be seen; a link
whose text is its target (``<https://...>``) is shown once, as plain text. The text arrives cleaned (``Screen``).
"""

from __future__ import annotations

import re
import time
from typing import Any, TextIO

__all__ = ["MarkdownStream", "keep_line_breaks", "markdown_available", "split_blocks", "unlink_shown_targets"]

_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


def markdown_available() -> bool:
    """Whether rich can be imported (the ``cli`` extra is installed)."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def split_blocks(text: str) -> tuple[str, str]:
    """``(finished, rest)``: ``finished`` ends at the last blank line that is outside a code fence."""
    cut = 0
    for match in re.finditer(r"\n[ \t]*\n", text):
        end = match.end()
        if len(_FENCE.findall(text, 0, end)) % 2 == 0:
            cut = end
    return text[:cut], text[cut:]


def unlink_shown_targets(tokens: list[Any]) -> None:
    """Drop the link marks (markdown-it tokens, in place) of each link whose text already shows its target, so
    rich prints it once instead of ``target (target)``; every other link keeps its ``(target)``."""
    for token in tokens:
        children = token.children
        if not children:
            continue
        kept: list[Any] = []
        index = 0
        while index < len(children):
            child = children[index]
            if child.type == "link_open":
                close = next((j for j in range(index + 1, len(children)) if children[j].type == "link_close"), None)
                if close is not None:
                    inner = children[index + 1 : close]
                    shown = "".join(t.content for t in inner if t.type in ("text", "code_inline"))
                    target = str(child.attrs.get("href", ""))
                    if child.markup == "autolink" or shown in (target, target.removeprefix("mailto:")):
                        kept.extend(inner)
                        index = close + 1
                        continue
            kept.append(child)
            index += 1
        token.children = kept


def keep_line_breaks(tokens: list[Any]) -> None:
    """Make each soft line break (markdown-it tokens, in place) a hard one, so rich keeps the agent's lines."""
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"


class MarkdownStream:
    """One agent message being rendered; ``feed`` text as it arrives, ``end`` when something else comes."""

    REFRESH = 0.08
    """Seconds between redraws of the live block (text arriving faster is drawn together)."""

    def __init__(self, out: TextIO, *, code_theme: str = "monokai") -> None:
        from rich.console import Console

        self.console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=False)
        self.code_theme = code_theme
        self._pending = ""
        self._printed = False
        self._live: Any = None
        self._drawn = 0.0

    @property
    def active(self) -> bool:
        return bool(self._pending) or self._live is not None

    def _markdown(self, text: str) -> Any:
        from rich.markdown import Markdown

        document = Markdown(text, code_theme=self.code_theme, hyperlinks=False)  # no OSC 8: targets shown
        unlink_shown_targets(document.parsed)
        keep_line_breaks(document.parsed)
        return document

    def _print_block(self, text: str) -> None:
        if not text.strip():
            return
        if self._printed:
            self.console.print()
        self.console.print(self._markdown(text))
        self._printed = True

    def feed(self, text: str) -> None:
        self._pending += text
        finished, self._pending = split_blocks(self._pending)
        if finished:
            self._stop_live()
            self._print_block(finished)
        if self._pending.strip():
            now = time.monotonic()
            if self._live is None:
                from rich.live import Live

                self._live = Live(
                    console=self.console,
                    auto_refresh=False,
                    transient=True,
                    redirect_stdout=False,
                    redirect_stderr=False,
                    vertical_overflow="crop",
                )
                self._live.start()
                self._drawn = 0.0
            if now - self._drawn >= self.REFRESH:
                self._drawn = now
                self._live.update(self._markdown(self._pending), refresh=True)

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def end(self) -> None:
        """Print what is left, rendered; the cursor ends at the start of a line."""
        self._stop_live()
        rest, self._pending = self._pending, ""
        self._print_block(rest)
        self._printed = False

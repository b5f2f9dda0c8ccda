"""``acp-session view TRANSCRIPT [--out FILE.html] [--open]``: a recorded transcript (``chat --record FILE``,
``ClientBuilder.record_transcript``) as one self-contained web page (``acp_session.pages.session_view``).

The page is written as the transcript is read (memory a small multiple of its text, not of its decoded messages),
into a temporary file beside ``--out`` that replaces it only when complete; a transcript of at least
``PROGRESS_FROM`` bytes shows a progress line on stderr when that is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import webbrowser
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ..pages.session_view import write_transcript_page
from .screen import Screen

__all__ = ["PROGRESS_FROM", "main"]

PROGRESS_FROM = 16 << 20
"""Transcripts from this size (16 MiB) get a progress line (on a terminal)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-session view",
        description="Show a recorded session transcript (acp-session chat --record FILE) as one web page: the "
        "turns as a timeline, filters by kind, a search box and the raw wire messages. The page fetches "
        "nothing and works from file://.",
    )
    parser.add_argument("transcript", metavar="TRANSCRIPT", help="the transcript file (JSON lines)")
    parser.add_argument("--out", metavar="FILE.html", help="where to write the page (default: TRANSCRIPT.html)")
    parser.add_argument("--open", action="store_true", help="open the page in the default web browser")
    return parser


class _ProgressLine:
    """``acp-session view: reading session.jsonl 45% (96 of 213 MiB)`` on stderr, redrawn at most 10 times a
    second; nothing unless stderr is a terminal and the transcript is large."""

    def __init__(self, name: str, size: int) -> None:
        self.screen = Screen(sys.stderr)
        self.name = name
        self.shown = False
        self.next = 0.0
        self.enabled = size >= PROGRESS_FROM and sys.stderr.isatty()

    def __call__(self, doing: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or now < self.next or total <= 0:
            return
        self.next = now + 0.1
        amount = f"{done >> 20} of {total >> 20} MiB" if doing == "reading" else f"{done} of {total} items"
        self.screen.erase_line()
        self.screen.write(f"acp-session view: {doing} {self.name} {100 * done // total}% ({amount})")
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.screen.erase_line()


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    source = Path(args.transcript)
    out = Path(args.out) if args.out else source.with_name(source.name + ".html")
    try:
        size = source.stat().st_size
    except OSError as exc:
        print(f"acp-session view: cannot read {source}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    progress = _ProgressLine(source.name, size)
    try:
        page = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed or removed below
            prefix=f".{out.name}.", suffix=".tmp", dir=out.parent, delete=False
        )
    except OSError as exc:
        print(f"acp-session view: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        with page:
            write_transcript_page(source, page, spill_dir=out.parent, progress=progress)
        os.chmod(page.name, 0o644 & ~_umask())
        os.replace(page.name, out)
    except OSError as exc:
        failed = f"cannot read {source}" if exc.filename == str(source) else f"cannot write {out}"
        return _fail(f"{failed}: {exc.strerror or exc}", page.name, progress)
    except (msgspec.DecodeError, KeyError, TypeError) as exc:
        detail = f"no {exc.args[0]!r} field" if isinstance(exc, KeyError) and exc.args else str(exc)
        return _fail(f"{source} is not a transcript (JSON lines with t, dir, msg): {detail}", page.name, progress)
    except Exception as exc:  # a bug: one line, not a traceback (ACP_SESSION_DEBUG=1 shows it)
        if os.environ.get("ACP_SESSION_DEBUG"):
            raise
        problem = f"cannot show {source}: {exc!r} (ACP_SESSION_DEBUG=1 shows the traceback)"
        return _fail(problem, page.name, progress)
    progress.clear()
    print(out)
    if args.open and not _opened(out):
        print(
            f"acp-session view: found no web browser to open {out} (set BROWSER, or open it yourself)", file=sys.stderr
        )
        return 1
    return 0


def _opened(page: Path) -> bool:
    """Open the page in the default web browser; False when there is none (no display, no browser found)."""
    try:
        return webbrowser.open(page.resolve().as_uri())
    except webbrowser.Error:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fail(problem: str, partial: str, progress: _ProgressLine) -> int:
    progress.clear()
    with contextlib.suppress(OSError):
        os.unlink(partial)
    print(f"acp-session view: {problem}", file=sys.stderr)
    return 1

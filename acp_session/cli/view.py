"""``acp-session view TRANSCRIPT [--out FILE.html] [--open]``: a recorded transcript (``chat --record FILE``,
``ClientBuilder.record_transcript``) as one self-contained web page (``acp_session.pages.session_view``)."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ..pages.session_view import render_transcript

__all__ = ["main"]


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


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    source = Path(args.transcript)
    out = Path(args.out) if args.out else source.with_name(source.name + ".html")
    try:
        page = render_transcript(source)
    except OSError as exc:
        print(f"acp-session view: cannot read {source}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except (msgspec.DecodeError, KeyError, TypeError) as exc:
        print(f"acp-session view: {source} is not a transcript (JSON lines with t, dir, msg): {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: one line, not a traceback (ACP_SESSION_DEBUG=1 shows it)
        if os.environ.get("ACP_SESSION_DEBUG"):
            raise
        print(
            f"acp-session view: cannot show {source}: {exc!r} (ACP_SESSION_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        print(f"acp-session view: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(out)
    if args.open:
        webbrowser.open(out.resolve().as_uri())
    return 0

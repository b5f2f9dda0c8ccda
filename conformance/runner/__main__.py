"""``acp-conformance --agent "<command>"``: check an ACP v2 agent; exits 1 when a check fails."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from pathlib import Path

import anyio

from .checks import CHECKS
from .report import junit, table, to_json
from .run import run_checks

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {c.id:<28} {c.title}" for c in CHECKS)
    parser = argparse.ArgumentParser(
        prog="acp-conformance",
        description="Check an ACP v2 agent (spoken to over stdio) against the rules a client can observe.",
        epilog="checks:\n" + listing,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--agent", required=True, help='the agent command line, e.g. "acp-reference-agent"')
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("--check", action="append", default=[], metavar="ID", help="run only this check (repeatable)")
    parser.add_argument("--jobs", type=int, default=4, help="checks run in parallel (default 4)")
    parser.add_argument("--timeout", type=float, default=None, help="per-check timeout in seconds (default: per check)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    known = {c.id for c in CHECKS}
    unknown = [c for c in args.check if c not in known]
    if unknown:
        sys.exit(f"acp-conformance: unknown check(s): {', '.join(unknown)}")
    command = shlex.split(args.agent)
    if not command:
        sys.exit("acp-conformance: --agent is empty")
    if shutil.which(command[0]) is None:
        sys.exit(f"acp-conformance: agent command not found: {command[0]}")
    results = anyio.run(lambda: run_checks(command, only=args.check, jobs=args.jobs, timeout=args.timeout))
    print(to_json(results, args.agent) if args.json else table(results, args.agent))
    if args.junit:
        Path(args.junit).write_text(junit(results, args.agent), encoding="utf-8")
    sys.exit(1 if any(r.status == "fail" for r in results) else 0)


if __name__ == "__main__":
    main()

"""``acp-session serve``: run an agent behind a host (``acp_session.host``), its sessions served over Streamable
HTTP and WebSocket to any client, kept while clients come and go.

The first stdout line is the URL; then a line per event (client attached or gone, session, turn, permission), or
a JSON object per line with ``--json``. SIGINT or SIGTERM stops the host (the agent with it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from ..host import DEFAULT_PERMISSION_TIMEOUT, Host, HostEvent, HostOptions
from ..server import DEFAULT_LIMITS, ServerConfigError, options_from_flags
from .exits import EXIT_ERROR, EXIT_USAGE
from .options import policy_from

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _number(kind: Callable[[str], float], *, zero: bool = False) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (value >= 0 if zero else value > 0) or math.isinf(value):
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'more than 0'}, not {text}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="acp-session serve",
        description="Serve an ACP agent over Streamable HTTP and WebSocket (http://HOST:PORT/acp). The host keeps "
        "the agent's sessions: a turn goes on when its client disconnects, a client that comes back (session/resume) "
        "gets what it missed, several clients may follow one session. The first stdout line is the URL.",
    )
    parser.add_argument(
        "--agent",
        metavar="ID|COMMAND",
        required=True,
        help='an ACP registry agent id or alias, or the agent\'s command line (e.g. "acp-reference-agent")',
    )
    parser.add_argument("--registry", metavar="FILE|URL", default=None, help="the ACP registry to resolve ids in")
    parser.add_argument("--preview", action="store_true", help="the registry's preview channel")
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="127.0.0.1:0",
        help="where to listen (default 127.0.0.1:0, a free port)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="every request must carry 'Authorization: Bearer TOKEN', TOKEN being this file's text (401 otherwise); "
        "the file must be readable by its owner only (chmod 600). Needed to listen beyond loopback",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS (HTTP/2 by ALPN) with this certificate")
    parser.add_argument("--tls-key", metavar="FILE", help="the private key for --tls-cert")
    parser.add_argument(
        "--allow-origin", metavar="ORIGIN", action="append", default=[], help="accept browser pages of ORIGIN too"
    )
    parser.add_argument(
        "--store", metavar="DIR", help="keep sessions and their history in DIR (SQLite): they survive a restart"
    )
    parser.add_argument(
        "--restart-attempts",
        metavar="N",
        type=int,
        default=3,
        help="failed starts in a row of a dead agent before the host gives up on it (default 3)",
    )
    parser.add_argument(
        "--allow-files", action="store_true", help="let the agent read and write files in each session's directory"
    )
    parser.add_argument(
        "--allow-terminal", action="store_true", help="let the agent run commands in each session's directory"
    )
    policy = parser.add_argument_group(
        "permission requests nobody answers within --permission-timeout (default: cancelled)"
    )
    policy.add_argument("--approve-reads", action="store_true", help="approve reads and searches, cancel the rest")
    policy.add_argument("--deny-all", action="store_true", help="reject every such request")
    from .options import _Rule

    for action in ("allow", "deny"):
        policy.add_argument(
            f"--{action}",
            metavar="KIND[:GLOB]",
            action=_Rule,
            const=action,
            help=f"{'approve' if action == 'allow' else 'reject'} requests of this tool kind whose paths all match "
            "GLOB; repeatable, tried in the order given",
        )
    policy.add_argument(
        "--permission-timeout",
        metavar="SECONDS",
        type=_number(float, zero=True),
        default=DEFAULT_PERMISSION_TIMEOUT,
        help=f"how long a permission request or an elicitation waits for a client's answer (default "
        f"{DEFAULT_PERMISSION_TIMEOUT:g}; an elicitation then gets the cancel action)",
    )
    parser.add_argument(
        "--no-elicitation",
        dest="elicitation",
        action="store_false",
        help="do not offer the agent elicitation (by default form and URL elicitations are relayed to the "
        "clients that offer the mode)",
    )
    caps = DEFAULT_LIMITS
    parser.add_argument("--max-connections", type=_number(int), default=caps.max_connections, metavar="N")
    parser.add_argument("--max-pending", type=_number(int), default=caps.max_pending, metavar="N")
    parser.add_argument("--pending-timeout", type=_number(float), default=caps.pending_timeout, metavar="SECONDS")
    parser.add_argument("--max-buffered-bytes", type=_number(int), default=caps.max_buffered_bytes, metavar="BYTES")
    parser.add_argument("--json", action="store_true", help="events as JSON lines")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="OpenTelemetry spans and metrics of the host's turns and requests to the agent, and spans of what its "
        "clients do (connections, attaches, prompts, permission questions relayed) (the otel extra; the "
        "global providers, configured by the OTEL_* environment variables)",
    )
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio", help="the event loop")
    return parser


def _agent(value: str, args: argparse.Namespace) -> str | list[str]:
    """A registry id (resolved by spawn) or a command line (split like a shell's)."""
    from ..registry.resolve import named_agent

    if named_agent(value, registry=args.registry, channel="preview" if args.preview else "stable", install=False):
        return value.strip()
    argv = shlex.split(value)
    if not argv:
        raise ValueError("--agent is empty")
    return argv


def options_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> HostOptions:
    """The host's options from the command line; a usage error (exit 2) names what to change."""
    try:
        server = options_from_flags(args)
        args.cwd = os.getcwd()
        policy = policy_from(args)
        return HostOptions(
            agent=_agent(args.agent, args),
            agent_label=args.agent.strip(),
            server=server,
            store=args.store,
            allow_files=args.allow_files,
            allow_terminal=args.allow_terminal,
            policy=policy,
            permission_timeout=args.permission_timeout,
            elicitation=args.elicitation,
            restart_attempts=args.restart_attempts,
            instrument=args.otel,
        )
    except (ServerConfigError, ValueError) as exc:
        parser.error(str(exc))
        raise  # not reached


async def _run(options: HostOptions, as_json: bool) -> None:
    held: list[HostEvent] = []  # events before the URL, which must be the first line

    def print_line(line: str) -> None:
        with contextlib.suppress(OSError):
            print(line, flush=True)

    def show(event: HostEvent) -> None:
        if event.kind == "listening":
            print_line(str(event.detail["url"]))
            for earlier in held:
                show(earlier)
            held.clear()
            return
        if host.url is None:
            held.append(event)
            return
        print_line(json.dumps(event.record()) if as_json else event.line())

    host = Host(options, on_event=show)
    async with anyio.create_task_group() as tg:
        await tg.start(host.run)
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                break
        tg.cancel_scope.cancel()


def main(argv: Sequence[str]) -> int:
    parser = _parser()
    args = parser.parse_args(list(argv))
    options = options_from(args, parser)
    logging.basicConfig(level=logging.WARNING, format="acp-session serve: %(message)s")
    try:
        anyio.run(_run, options, args.json, backend=args.backend)
    except KeyboardInterrupt:
        return 0
    except BaseException as exc:  # one line, never a traceback
        if os.environ.get("ACP_SESSION_DEBUG"):
            raise
        leaf = exc
        while isinstance(getattr(leaf, "exceptions", None), tuple) and len(leaf.exceptions) == 1:  # type: ignore[attr-defined]
            leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
        if isinstance(leaf, OSError) and not isinstance(leaf, ConnectionError):
            print(f"acp-session serve: cannot listen on {args.listen}: {leaf.strerror or leaf}", file=sys.stderr)
        else:
            print(f"acp-session serve: {leaf}", file=sys.stderr)
        return EXIT_ERROR
    return 0

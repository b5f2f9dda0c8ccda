"""``acp-reference-agent`` / ``python -m acp_conformance.agent``: serve the reference agent on stdin/stdout, or
with ``--listen`` over Streamable HTTP and WebSocket (``listen``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import anyio

from acp_session.rpc import Connection
from acp_session.server import DEFAULT_LIMITS, limits_from_flags
from acp_session.transport import Transport, stdio_server

from . import AGENT_NAME, AGENT_VERSION
from .batches import BatchingTransport
from .faults import FaultyWire
from .mutants import SERVER_MODES, WIRE_MODES
from .remote_modes import REMOTE_BROKEN_MODES
from .scenarios import SCENARIOS
from .server import BROKEN_MODES, AgentOptions, ReferenceAgent
from .v1_modes import V1_BROKEN_MODES
from .v1_mutant_wire import MutantWire, mutant_wire
from .variants import VariantAgent

__all__ = ["main", "serve"]


def _epilog() -> str:
    lines = ["scenarios (start the prompt text with /NAME; anything else gets a short offline reply):"]
    lines += [f"  /{name:<18} {description}" for name, (description, _) in SCENARIOS.items()]
    lines += ["", "broken variants (--broken MODE, repeatable; for testing conformance runners):"]
    every = {**BROKEN_MODES, **REMOTE_BROKEN_MODES, **V1_BROKEN_MODES}
    lines += [f"  {name:<19} {description}" for name, description in every.items()]
    lines += [
        "",
        "config options: mode (select: ask, code, review; default code), thoughts (boolean; default false).",
        "Speaks ACP protocol versions 1 and 2 (the client's offer decides) as newline-delimited JSON-RPC on",
        "stdin/stdout (or, with --listen, version 2 at one endpoint /acp over HTTP/1.1, HTTP/2 and WebSocket);",
        "logs go to stderr.",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-reference-agent",
        description=textwrap.dedent(f"{AGENT_NAME} {AGENT_VERSION}: a deterministic ACP agent (v1 and v2) over stdio."),
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--broken",
        action="append",
        default=[],
        choices=sorted({**BROKEN_MODES, **REMOTE_BROKEN_MODES, **V1_BROKEN_MODES}),
        metavar="MODE",
        help="misbehave on purpose (see below)",
    )
    parser.add_argument(
        "--delay", type=float, default=0.0, metavar="SECONDS", help="pause between streamed reply chunks"
    )
    parser.add_argument(
        "--store",
        metavar="FILE",
        default=os.environ.get("ACP_REFERENCE_AGENT_STORE") or None,
        help="keep sessions in this JSON file so later agent processes can list and resume them "
        "(default: $ACP_REFERENCE_AGENT_STORE, else memory only)",
    )
    parser.add_argument(
        "--mcp",
        metavar="TRANSPORTS",
        default="stdio,http,acp",
        help="the MCP server transports to advertise, comma-separated (default: stdio,http,acp, when the mcp extra "
        "is installed; '' for none)",
    )
    parser.add_argument(
        "--preview",
        action="store_true",
        help="advertise and serve the Preview methods: session/fork, session/set_title, systemPrompt (append and "
        "override), session/archive, session/unarchive, session/status, auth/status, providers/*",
    )
    parser.add_argument(
        "--all-capabilities",
        action="store_true",
        help="on stdio: also advertise and serve image and audio prompts and login methods (an agent one served by "
        "auth/login, which always succeeds; a terminal one for clients that enable terminal auth)",
    )
    parser.add_argument(
        "--protocol-versions",
        default="1,2",
        metavar="VERSIONS",
        help="the protocol versions to speak, comma-separated (default: 1,2; '2' makes a v2-only agent, which "
        "answers a v1 offer -32022)",
    )
    remote = parser.add_argument_group("remote (needs the serve extra: hypercorn)")
    remote.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve ACP over Streamable HTTP and WebSocket at http://HOST:PORT/acp instead of stdio (port 0 picks "
        "one; the first stdout line is the URL); sessions belong to the server, so a new connection resumes them",
    )
    remote.add_argument("--tls-cert", metavar="FILE", help="with --listen: serve HTTPS (HTTP/2 by ALPN) with this cert")
    remote.add_argument("--tls-key", metavar="FILE", help="with --listen: the private key for --tls-cert")
    remote.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --listen: every request must carry 'Authorization: Bearer TOKEN', TOKEN being this file's text "
        "(401 otherwise); the file must be readable by its owner only (chmod 600). Needed to listen beyond loopback",
    )
    parser.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="the event loop (default asyncio)"
    )
    remote.add_argument(
        "--require-cookie",
        action="store_true",
        help="with --listen: refuse requests (400) that do not return the affinity cookie set on initialize, and "
        "WebSocket upgrades that carry one this server did not set",
    )
    remote.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --listen: also accept requests from browser pages of ORIGIN (e.g. https://app.example:8443; "
        "repeatable; '*' for any). Requests with another Origin get 403; without one (non-browser clients) and, "
        "when listening on loopback, from loopback origins (localhost, 127.0.0.1, [::1], any port) are accepted",
    )
    caps = DEFAULT_LIMITS
    remote.add_argument(
        "--max-connections",
        type=_positive(int),
        default=caps.max_connections,
        metavar="N",
        help=f"with --listen: live connections at most; one more initialize or upgrade gets 503 "
        f"(default {caps.max_connections})",
    )
    remote.add_argument(
        "--max-pending",
        type=_positive(int),
        default=caps.max_pending,
        metavar="N",
        help=f"with --listen: connections not started (initialized, stream not opened; upgraded, no initialize) at "
        f"most; one more gets 503 (default {caps.max_pending})",
    )
    remote.add_argument(
        "--pending-timeout",
        type=_positive(float),
        default=caps.pending_timeout,
        metavar="SECONDS",
        help=f"with --listen: a connection not started this long ends (default {caps.pending_timeout:g})",
    )
    remote.add_argument(
        "--max-buffered-bytes",
        type=_positive(int),
        default=caps.max_buffered_bytes,
        metavar="BYTES",
        help="with --listen: bytes of client messages held at once (bodies being read, messages waiting for the "
        f"agent); a POST that does not fit gets 503 (default {caps.max_buffered_bytes})",
    )
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    return parser


def _positive(kind: Callable[[str], float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def _listen(parser: argparse.ArgumentParser, args: argparse.Namespace, options: AgentOptions) -> None:
    from acp_session.server import ServeExtraMissing, ServerConfigError, options_from_flags

    from .listen import serve_listening
    from .remote_modes import hooks_for

    try:
        listen = options_from_flags(
            args,
            require_cookie=args.require_cookie,
            hooks=hooks_for(options.broken),
        )
    except ServerConfigError as exc:  # checked before anything starts, each with what to change
        parser.error(str(exc))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(serve_listening, options, listen, backend=args.backend)
    except ServerConfigError as exc:  # found once the server starts: TLS files it cannot use
        parser.error(str(exc))
    except ServeExtraMissing as exc:
        raise SystemExit(f"acp-reference-agent --listen: {exc}") from None
    except OSError as exc:
        raise SystemExit(f"acp-reference-agent: cannot listen on {args.listen}: {exc.strerror or exc}") from None


def _caps_given(args: argparse.Namespace) -> bool:
    return limits_from_flags(args) != DEFAULT_LIMITS


async def serve(options: AgentOptions) -> None:
    """Serve one client on this process's stdin/stdout until it closes the stream."""
    async with stdio_server() as stdio, anyio.create_task_group() as tg:
        transport: Transport = stdio
        if options.broken & WIRE_MODES.keys():
            transport = FaultyWire(transport, options.broken)
        # the v1 wire (the transport itself unless a broken v1 mode is on) is the connection's own: the v1 front
        # queues messages through it
        wire = mutant_wire(BatchingTransport(transport, options.broken), options.broken)
        async with Connection(wire) as conn:
            variant = options.all_capabilities or options.broken & SERVER_MODES.keys()
            agent = (VariantAgent if variant else ReferenceAgent)(conn, tg, options)
            if isinstance(wire, MutantWire):
                wire.active = lambda: agent.v1 is not None
            await conn.wait_closed()
            if agent.v1 is not None and "v1-linger" in options.broken:
                await anyio.sleep_forever()  # --broken v1-linger: stdin is closed, yet the agent stays
        if "ignore-stdin-eof" in options.broken:
            await anyio.sleep_forever()  # a broken variant: only a signal ends it
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(name)s: %(message)s")
    mcp = frozenset(t for t in args.mcp.split(",") if t)
    versions = tuple(sorted({int(v) for v in args.protocol_versions.split(",") if v.strip().isdigit()}))
    if not versions or not set(versions) <= {1, 2}:
        _parser().error("--protocol-versions: give some of 1 and 2, e.g. 2 or 1,2")
    options = AgentOptions(
        broken=frozenset(args.broken),
        delay=args.delay,
        store=args.store,
        mcp=mcp,
        preview=args.preview,
        versions=versions,
        all_capabilities=args.all_capabilities,
    )
    if args.listen is not None:
        _listen(_parser(), args, options)
        return
    if (
        args.tls_cert
        or args.tls_key
        or args.token_file
        or args.require_cookie
        or args.allow_origin
        or _caps_given(args)
    ):
        _parser().error(
            "--tls-cert, --tls-key, --token-file, --require-cookie, --allow-origin and the limits go with --listen"
        )
    if "junk-stdout" in options.broken:
        os.write(sys.stdout.fileno(), b"reference agent starting up\n")  # not an ACP message: a framing error
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve, options, backend=args.backend)


if __name__ == "__main__":
    main()

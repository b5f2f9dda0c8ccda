"""``acp-reference-agent --listen HOST:PORT``: serve ``http_app`` with hypercorn (HTTP/1.1, HTTP/2 by h2c or TLS
ALPN, WebSocket) on asyncio or trio, and print the URL it serves as the first stdout line.

The listening socket is bound here, before hypercorn starts, so port 0 can be reported as the port it picked.
Needs the ``serve`` extra (hypercorn).
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from dataclasses import dataclass
from typing import Any

import anyio

from .http_app import ENDPOINT, AcpHttpApp
from .limits import DEFAULT_LIMITS, ServerLimits
from .origins import OriginPolicy
from .remote_rules import MAX_BODY_BYTES
from .server import AgentOptions
from .shared import SharedSessions

__all__ = ["ListenOptions", "parse_address", "serve_listening"]

_log = logging.getLogger("acp_conformance.agent")


@dataclass(frozen=True)
class ListenOptions:
    host: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None
    require_cookie: bool = False
    allow_origins: tuple[str, ...] = ()
    """``--allow-origin`` values (``*``: any), beside the loopback origins when ``host`` is loopback."""
    limits: ServerLimits = DEFAULT_LIMITS
    """``--max-connections``, ``--max-pending``, ``--pending-timeout``, ``--max-buffered-bytes``."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) into its parts; ValueError with a clear message otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:0), not {text!r}")
    return host, int(port)


def _hypercorn_serve(backend: str) -> Any:
    try:
        if backend == "trio":
            import hypercorn.trio as served_by
        else:
            import hypercorn.asyncio as served_by  # type: ignore[no-redef]
    except ImportError:
        raise SystemExit("acp-reference-agent --listen needs hypercorn: pip install 'acp-session[serve]'") from None
    return served_by.serve


def _bound_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


async def _until_signalled() -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


async def serve_listening(options: AgentOptions, listen: ListenOptions, backend: str = "asyncio") -> None:
    """Serve until SIGINT or SIGTERM; every connection shares the server's sessions (``SharedSessions``)."""
    serve = _hypercorn_serve(backend)
    from hypercorn.config import Config

    sock = _bound_socket(listen.host, listen.port)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the descriptor from now on
    config.graceful_timeout = 1.0
    config.accesslog = None
    config.errorlog = _log
    config.websocket_max_message_size = MAX_BODY_BYTES  # a larger message closes its socket (1009)
    config.max_app_queue_size = 2  # what hypercorn reads ahead of the app, per request (a WebSocket: messages)
    if listen.tls_cert or listen.tls_key:
        if not (listen.tls_cert and listen.tls_key):
            raise SystemExit("acp-reference-agent: --tls-cert and --tls-key go together")
        config.certfile, config.keyfile = listen.tls_cert, listen.tls_key
    scheme = "https" if config.ssl_enabled else "http"
    shown_host = f"[{listen.host}]" if ":" in listen.host else listen.host
    async with anyio.create_task_group() as tg:
        shared = SharedSessions(tg, options.store)
        origins = OriginPolicy.for_listening(listen.host, listen.allow_origins)
        app = AcpHttpApp(shared, options, require_cookie=listen.require_cookie, origins=origins, limits=listen.limits)
        stopped = anyio.Event()

        async def run_server() -> None:
            # In a task of its own: hypercorn's own task group (asyncio) must not share the host task with ours.
            try:
                await serve(app, config, shutdown_trigger=_until_signalled)
            finally:
                stopped.set()

        tg.start_soon(run_server)
        sys.stdout.write(f"{scheme}://{shown_host}:{port}{ENDPOINT}\n")
        sys.stdout.flush()
        await stopped.wait()
        tg.cancel_scope.cancel()

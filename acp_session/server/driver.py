"""Run a server in the caller's event loop: ``open_server`` (an async context manager) or ``serve`` (a task that
runs until cancelled), hypercorn doing the HTTP/1.1, HTTP/2 (h2c, or TLS with ALPN) and WebSocket work on asyncio
or trio, whichever runs.

The listening socket is bound here, before hypercorn starts, so port 0 is reported as the port it picked and the
URL is known before the first client comes (connections made meanwhile wait in the socket's backlog). Needs the
``serve`` extra (hypercorn).
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ..transport.backend import running_asyncio_loop
from .app import ENDPOINT, AcpAsgiApp
from .auth import BearerToken
from .connection import ConnectionHandler
from .errors import ServeExtraMissing, ServerConfigError
from .options import ServerOptions
from .rules import MAX_BODY_BYTES

__all__ = ["GRACEFUL_SECONDS", "Server", "open_server", "serve"]

_log = logging.getLogger("acp_session.server")

GRACEFUL_SECONDS = 1.0
"""On close, how long requests in flight (event streams, sockets) get to end before they are cut."""


class Server:
    """A running server (``open_server``): where it listens, and its ASGI app (its live connections)."""

    def __init__(
        self, host: str, port: int, tls: bool, app: AcpAsgiApp, stop: anyio.Event, stopped: anyio.Event
    ) -> None:
        self.host = host
        self.port = port
        """The port it listens on (the one picked, when asked for port 0)."""
        self.app = app
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{'https' if tls else 'http'}://{shown}:{port}{ENDPOINT}"
        """The endpoint's URL, ``http(s)://HOST:PORT/acp`` (``ws(s)://`` at the same address is the WebSocket
        profile)."""
        self._stop = stop
        self._stopped = stopped

    def __repr__(self) -> str:
        return f"Server({self.url!r})"

    @property
    def connections(self) -> int:
        """Live client connections."""
        return len(self.app.connections)

    def close(self) -> None:
        """Stop listening (requests in flight get ``GRACEFUL_SECONDS``); leaving ``open_server`` then ends the
        connections' handlers."""
        self._stop.set()

    async def wait_closed(self) -> None:
        """Return once the server stopped listening (``close``)."""
        await self._stopped.wait()


def _hypercorn_serve() -> Callable[..., Awaitable[None]]:
    """hypercorn's ``serve`` for the running backend."""
    try:
        if running_asyncio_loop() is None:
            import hypercorn.trio as served_by
        else:
            import hypercorn.asyncio as served_by  # type: ignore[no-redef]
    except ImportError:
        raise ServeExtraMissing from None
    serve_app: Callable[..., Awaitable[None]] = served_by.serve
    return serve_app


def _bound_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def _config(options: ServerOptions) -> Any:
    from hypercorn.config import Config

    config = Config()
    config.graceful_timeout = GRACEFUL_SECONDS
    config.accesslog = None
    config.errorlog = _log
    config.websocket_max_message_size = MAX_BODY_BYTES  # a larger message closes its socket (1009)
    config.max_app_queue_size = 2  # what hypercorn reads ahead of the app, per request (a WebSocket: messages)
    if options.tls_cert and options.tls_key:
        config.certfile, config.keyfile = options.tls_cert, options.tls_key
        try:
            config.create_ssl_context()  # here, so a file that cannot be used is refused before anything listens
        except (OSError, ssl.SSLError) as exc:
            raise ServerConfigError(f"the TLS certificate or key cannot be used: {exc}") from None
    return config


@asynccontextmanager
async def open_server(handler: ConnectionHandler, options: ServerOptions | None = None) -> AsyncIterator[Server]:
    """Listen as ``options`` say (default: ``127.0.0.1``, a free port, no token) and serve each client connection
    with ``handler`` until the block ends; then stop listening, give requests in flight ``GRACEFUL_SECONDS``, and
    cancel every handler still running.

    Raises ``ServeExtraMissing`` without hypercorn, ``ServerConfigError`` for TLS files that cannot be used, and
    ``OSError`` when the address cannot be bound (in use, not this machine's). Runs on asyncio or trio, in the
    caller's event loop.
    """
    options = options or ServerOptions()
    serve_app = _hypercorn_serve()
    config = _config(options)
    sock = _bound_socket(options.host, options.port)
    port = sock.getsockname()[1]
    config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the descriptor from now on
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        app = AcpAsgiApp(
            handler,
            tg,
            require_cookie=options.require_cookie,
            origins=options.origin_policy(),
            limits=options.limits,
            token=None if options.token is None else BearerToken(options.token),
            hooks=options.hooks,
        )
        stopped = anyio.Event()
        hypercorn_scope = anyio.CancelScope(shield=True)

        async def run_hypercorn() -> None:
            # In a task of its own (hypercorn's own task group, on asyncio, must not share the caller's task), and
            # shielded: hypercorn stops when told to (``stop``); cancelled midway, its asyncio flavour fails.
            try:
                with hypercorn_scope:
                    await serve_app(app, config, shutdown_trigger=stop.wait)
            finally:
                stopped.set()

        tg.start_soon(run_hypercorn)
        try:
            yield Server(options.host, port, options.tls, app, stop, stopped)
        finally:
            stop.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(GRACEFUL_SECONDS + 4):
                await stopped.wait()
            hypercorn_scope.cancel()  # only if it did not stop in time
            tg.cancel_scope.cancel()
            app.log.close()


async def serve(
    handler: ConnectionHandler,
    options: ServerOptions | None = None,
    *,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """``open_server`` as a task: serve until cancelled, reporting the URL to ``task_status`` once listening, so
    ``url = await task_group.start(serve, handler, options)``."""
    async with open_server(handler, options) as server:
        task_status.started(server.url)
        await server.wait_closed()  # hypercorn stops only when told to; a crash of it ends the server too

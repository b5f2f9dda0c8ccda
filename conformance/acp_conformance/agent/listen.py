"""``acp-reference-agent --listen HOST:PORT``: the reference agent served by the library's server
(``acp_session.server``: Streamable HTTP and WebSocket on hypercorn, asyncio or trio), printing the URL it serves
as the first stdout line.

What is the reference agent's own is here: every connection runs a ``ReferenceAgent`` on its transport, and all of
them share the server's sessions (``SharedSessions``), so a session outlives the connection that made it; the
remote ``--broken`` modes plug into the server's hooks (``remote_modes``).
"""

from __future__ import annotations

import signal
import sys

import anyio

from acp_session.rpc import Connection
from acp_session.server import IncomingConnection, ServerOptions, open_server

from .server import AgentOptions, ReferenceAgent
from .shared import SharedSessions

__all__ = ["serve_listening"]


async def _until_signalled() -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


async def serve_listening(options: AgentOptions, listen: ServerOptions) -> None:
    """Serve until SIGINT or SIGTERM; every connection shares the server's sessions (``SharedSessions``).

    The server is opened first, outside any task group, so an address that cannot be bound is a plain ``OSError``
    (the command line says so in a line, not a traceback)."""
    shared: list[SharedSessions] = []  # made once the turns' task group is open
    ready = anyio.Event()

    async def serve_connection(client: IncomingConnection) -> None:
        await ready.wait()
        agent: ReferenceAgent | None = None
        try:
            async with Connection(client.transport, peer_name=f"remote client {client.connection_id}") as rpc:
                agent = ReferenceAgent(rpc, shared[0].tg, options, shared=shared[0])
                await rpc.wait_closed()
        finally:
            if agent is not None:
                shared[0].detach(agent)  # its sessions go on, unserved until a connection resumes them

    async with open_server(serve_connection, listen) as server, anyio.create_task_group() as tg:
        shared.append(SharedSessions(tg, options.store))
        ready.set()
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        await _until_signalled()
        server.close()  # first the requests end (hypercorn's graceful stop), then the turns, then the connections
        await server.wait_closed()
        tg.cancel_scope.cancel()

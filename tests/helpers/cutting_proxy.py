"""A TCP proxy on 127.0.0.1 that a test controls, for reconnect tests: cut every connection at once (as a network
drop does), refuse new ones for a while, cut the next ones as soon as they send anything (a cut during
``initialize``), or move to another upstream port (a restarted server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import SocketAttribute, SocketStream

from acp_session.schema import RequestPermissionRequest

__all__ = ["CutWhileDeciding", "CuttingProxy", "cutting_proxy"]


class CuttingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.refusing = False
        self.cut_on_first_bytes = 0  # the next this many connections are cut when the client first sends
        self.accepted = 0
        self.cuts = 0
        self._scopes: set[anyio.CancelScope] = set()
        self._stalled: set[anyio.CancelScope] = set()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/acp"

    def cut(self) -> None:
        """Close every connection now, both ways (what the client sees when the network is gone)."""
        self.cuts += 1
        for scope in list(self._scopes):
            scope.cancel()

    def stall(self) -> None:
        """Stop carrying bytes on every open connection without closing it (a dead NAT mapping: silence);
        new connections go through."""
        self._stalled |= self._scopes

    async def cut_for(self, seconds: float) -> None:
        """Cut everything and refuse new connections for ``seconds``, then let them through."""
        self.refusing = True
        self.cut()
        await anyio.sleep(seconds)
        self.refusing = False

    async def handle(self, client: SocketStream) -> None:
        async with client:
            if self.refusing:
                return
            self.accepted += 1
            cut_early = self.cut_on_first_bytes > 0
            if cut_early:
                self.cut_on_first_bytes -= 1
            try:
                upstream = await anyio.connect_tcp("127.0.0.1", self.upstream_port)
            except OSError:
                return
            async with upstream:
                with anyio.CancelScope() as scope:
                    self._scopes.add(scope)
                    try:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(self._pump, client, upstream, scope, cut_early)
                            tg.start_soon(self._pump, upstream, client, scope, False)
                    finally:
                        self._scopes.discard(scope)
                        self._stalled.discard(scope)

    async def _pump(self, source: SocketStream, sink: SocketStream, scope: anyio.CancelScope, cut_early: bool) -> None:
        try:
            async for chunk in source:
                if cut_early:
                    break
                if scope not in self._stalled:
                    await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        scope.cancel()  # either side ended: the whole connection goes


@asynccontextmanager
async def cutting_proxy(upstream_port: int) -> AsyncIterator[CuttingProxy]:
    proxy = CuttingProxy(upstream_port)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    proxy.port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy.handle)
        try:
            yield proxy
        finally:
            proxy.cut()
            tg.cancel_scope.cancel()


class CutWhileDeciding:
    """A user who is still deciding the first permission question when the network goes (``cut`` runs beside the
    turn): that answer never arrives; every later question is allowed. ``asked`` is what each question was about."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self._deciding = anyio.Event()

    async def answer(self, request: RequestPermissionRequest) -> str:
        self.asked.append(repr(request.subject))
        if len(self.asked) == 1:
            self._deciding.set()
            await anyio.sleep_forever()
        return next(o.option_id for o in request.options if o.kind.startswith("allow"))

    async def cut(self, proxy: CuttingProxy) -> None:
        await self._deciding.wait()
        await proxy.cut_for(0.3)

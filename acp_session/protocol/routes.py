"""The client's incoming methods: one declarative table per protocol version (issue 19).

Each adapter class lists its rows in ``routes``: for every method the agent may send the client, whether it is
a request or a notification, how its params are decoded, which object handles it (the client, the adapter or
one of the client's providers, named as ``Target``), and the condition of the client's ``ClientOffer`` under
which it exists. ``ProtocolAdapter.install`` is one loop over the rows (``install_routes``); what the client
advertises for a version's gated methods is computed from the same rows (``advertised``), so a capability and
its handler cannot disagree. A new incoming method or protocol version is a new row or a new table.

Methods not in the table (and not registered by the application as extension methods) get ``-32601``, or the
application's fallback handler, exactly as any unregistered method does in ``rpc.Connection``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ..rpc import Connection
from ..rpc.handlers import Decoder

__all__ = ["SUBAGENTS_META", "ClientOffer", "Condition", "Route", "Target", "advertised", "install_routes"]

SUBAGENTS_META = "acpSession/subagents"
"""``clientCapabilities._meta`` key by which a version 2 client asks for subagent (child session) updates where
they are opt-in: an ``acp-session serve`` host relays them only to clients that ask (``with_subagents``)."""

Condition = Literal["read_files", "write_files", "terminals", "elicitation_complete"]
"""A ``ClientOffer`` flag a route depends on."""


@dataclass(frozen=True, slots=True)
class ClientOffer:
    """What the client offers the agent, as the builder was configured (``ClientBuilder.offer()``): the flags
    the routing table's conditions read."""

    file_system: bool = False
    """A file-system provider is set (v1 then writes its ``fs`` capability object, even with both flags off)."""
    read_files: bool = False
    """A file-system provider is set and reading is allowed."""
    write_files: bool = False
    """A file-system provider is set and writing is allowed."""
    terminals: bool = False
    """A terminal provider is set."""
    elicitation_complete: bool = False
    """The application handles ``elicitation/complete``."""
    subagents: bool = False
    """The application opted in to subagent sessions (``with_subagents``): v1's ``clientCapabilities.subagents``
    (v2 clients handle them always)."""


Owner = Literal["client", "adapter", "file_system", "terminals"]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a route's handler is found: attribute ``name`` of the client (``ClientSide``), of the adapter, or of
    one of the client's providers (``client.file_system`` / ``client.terminals``)."""

    owner: Owner
    name: str

    def resolve(self, adapter: Any, client: Any) -> Callable[[Any], Any]:
        if self.owner == "adapter":
            holder = adapter
        elif self.owner == "client":
            holder = client
        else:
            holder = getattr(client, self.owner)
            if holder is None:
                raise LookupError(f"a route needs the client's {self.owner} provider, and none is set")
        fn: Callable[[Any], Any] = getattr(holder, self.name)
        return fn


@dataclass(frozen=True, slots=True)
class Route:
    """One incoming method of one protocol version."""

    method: str
    kind: Literal["request", "notification"]
    decode: Decoder
    """Params decoder, passed to the connection as it is (keep it an ``acp_session.codec.decoder`` or another
    ``TypedDecoder`` where the connection's typed fast path matters: ``session/update``)."""
    handler: Target
    when: Condition | None = None
    """Registered only when this ``ClientOffer`` flag is true; always when None."""
    batch: Target | None = None
    """A notification's handler for a run of consecutive params (``Connection.on_notification(batch=...)``)."""
    advertises: str | None = None
    """The client capability (a dotted path of wire names, e.g. ``fs.readTextFile``) that is true exactly when
    this route is registered."""
    waits: bool = False
    """A request whose handler only waits for an event (``Connection.on_request(waits=True)``)."""
    lossless: bool = False
    """A request refused with -32602 when its text had to be repaired (``Connection.on_request(lossless=True)``)."""

    def applies(self, offer: ClientOffer) -> bool:
        return self.when is None or bool(getattr(offer, self.when))


def install_routes(
    rpc: Connection, routes: Iterable[Route], adapter: Any, client: Any, offer: ClientOffer
) -> list[Route]:
    """Register on ``rpc`` every route whose condition ``offer`` meets; returns those registered."""
    installed = []
    for route in routes:
        if not route.applies(offer):
            continue
        fn = route.handler.resolve(adapter, client)
        if route.kind == "request":
            rpc.on_request(route.method, fn, route.decode, waits=route.waits, lossless=route.lossless)
        else:
            batch = None if route.batch is None else route.batch.resolve(adapter, client)
            rpc.on_notification(route.method, fn, route.decode, batch=batch)
        installed.append(route)
    return installed


def advertised(routes: Iterable[Route], offer: ClientOffer) -> dict[str, Any]:
    """The capabilities the rows carry, as nested wire names: each path true when one of its routes applies."""
    tree: dict[str, Any] = {}
    for route in routes:
        if route.advertises is None:
            continue
        *groups, leaf = route.advertises.split(".")
        node = tree
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = bool(node.get(leaf)) or route.applies(offer)
    return tree

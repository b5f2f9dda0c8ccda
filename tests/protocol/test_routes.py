"""The routing table of the client's incoming methods (acp_session/protocol/routes.py, issue 19).

Each adapter lists its rows; ``install`` registers those whose condition the builder's offer meets, and the v1
``fs`` / ``terminal`` capabilities come from the same rows. Checked here over a real ``ClientConnection``
(connected over memory to a raw agent that answers ``initialize`` in the version under test) for every
combination of providers and handlers that changes a condition.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from acp_session import ClientBuilder, ClientConnection
from acp_session.client.connection import hub_of
from acp_session.protocol.routes import ClientOffer, Route, advertised
from acp_session.protocol.v1.adapter import V1Protocol
from acp_session.protocol.v2 import V2Protocol
from acp_session.rpc.handlers import typed_decoder_of
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

pytestmark = pytest.mark.anyio

TABLES: dict[int, tuple[Route, ...]] = {1: V1Protocol.routes, 2: V2Protocol.routes}

# The tables as (method, kind, condition, advertised capability): adding a row means adding it here.
EXPECTED: dict[int, list[tuple[str, str, str | None, str | None]]] = {
    2: [
        ("session/update", "notification", None, None),
        ("session/request_permission", "request", None, None),
        ("elicitation/create", "request", None, None),
        ("elicitation/complete", "notification", "elicitation_complete", None),
        ("auth/status_update", "notification", None, None),
        ("_auth/status_update", "notification", None, None),
    ],
    1: [
        ("session/update", "notification", None, None),
        ("session/request_permission", "request", None, None),
        ("elicitation/create", "request", None, None),
        ("elicitation/complete", "notification", "elicitation_complete", None),
        ("auth/status_update", "notification", None, None),
        ("_auth/status_update", "notification", None, None),
        ("fs/read_text_file", "request", "read_files", "fs.readTextFile"),
        ("fs/write_text_file", "request", "write_files", "fs.writeTextFile"),
        ("terminal/create", "request", "terminals", "terminal"),
        ("terminal/output", "request", "terminals", "terminal"),
        ("terminal/wait_for_exit", "request", "terminals", "terminal"),
        ("terminal/kill", "request", "terminals", "terminal"),
        ("terminal/release", "request", "terminals", "terminal"),
    ],
}


def test_the_tables_list_every_incoming_method() -> None:
    for version, routes in TABLES.items():
        assert [(r.method, r.kind, r.when, r.advertises) for r in routes] == EXPECTED[version]
        assert len({r.method for r in routes}) == len(routes), "a method appears twice"
        for route in routes:
            assert route.kind == "notification" or route.batch is None


# Everything the builder can set that a condition reads: file system (None or its read/write access),
# terminals, an elicitation/complete handler.
FILE_SYSTEMS: list[tuple[bool, bool] | None] = [None, (True, True), (True, False), (False, True), (False, False)]


def builders() -> list[ClientBuilder]:
    made = []
    for files, terminals, complete, subagents in itertools.product(
        FILE_SYSTEMS, (False, True), (False, True), (False, True)
    ):
        builder = ClientBuilder("test-client", "1.0").with_subagents(subagents)
        if files is not None:
            builder.with_file_system(read=files[0], write=files[1])
        if terminals:
            builder.with_terminals()
        if complete:
            builder.on_elicitation_complete(lambda note: None)
        made.append(builder)
    return made


def every_offer() -> list[ClientOffer]:
    """Every combination of the offer's flags a builder can produce (no read or write without a file system)."""
    names = [f.name for f in dataclasses.fields(ClientOffer)]
    offers = []
    for bits in itertools.product((False, True), repeat=len(names)):
        flags = dict(zip(names, bits, strict=True))
        if (flags["read_files"] or flags["write_files"]) and not flags["file_system"]:
            continue
        offers.append(ClientOffer(**flags))
    return offers


def test_builders_cover_every_offer() -> None:
    assert {b.offer() for b in builders()} == set(every_offer())


async def _agent(raw: RawEnd, version: int) -> None:
    # A v1 agent answers the v2 offer with 1, then gets the v1 offer (negotiate.py), which it answers too.
    for _ in range(2 if version == 1 else 1):
        request = await raw.recv()
        assert request["method"] == "initialize"
        if version == 2:
            result: dict[str, Any] = {"protocolVersion": 2, "info": {"name": "raw", "version": "0"}}
        else:
            result = {"protocolVersion": 1, "agentCapabilities": {}}
        await raw.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


@asynccontextmanager
async def connected(builder: ClientBuilder, version: int) -> AsyncIterator[tuple[ClientConnection, RawEnd]]:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_agent, raw, version)
        async with builder.connect(ours) as client:
            assert client.protocol.version == version
            yield client, raw


def registered(client: ClientConnection) -> dict[str, str]:
    rpc = client.rpc
    kinds = {method: "request" for method in rpc._requests}
    kinds.update({method: "notification" for method in rpc._notifications})
    return kinds


@pytest.mark.parametrize("version", [1, 2])
async def test_each_row_is_registered_exactly_when_its_condition_holds(version: int) -> None:
    for builder in builders():
        offer = builder.offer()
        async with connected(builder, version) as (client, _):
            expected = {r.method: r.kind for r in TABLES[version] if r.applies(offer)}
            assert registered(client) == expected, offer
            for route in TABLES[version]:
                if route.when is not None:
                    assert (route.method in expected) == getattr(offer, route.when), (route.method, offer)


@pytest.mark.parametrize("version", [1, 2])
async def test_session_update_keeps_its_typed_decoder_and_batch(version: int) -> None:
    async with connected(ClientBuilder("test-client", "1.0"), version) as (client, _):
        handler = client.rpc._notifications["session/update"]
        route = next(r for r in TABLES[version] if r.method == "session/update")
        assert handler.decode is route.decode and typed_decoder_of(handler.decode) is not None
        adapter: Any = client.protocol
        # One frame goes through the adapter (which skips a usage update without its counts: usage_quirk.py);
        # a run decoded in one pass holds only well-formed updates, and v2 hands it to the client directly.
        assert handler.fn == adapter._on_update
        assert handler.batch == (hub_of(client).receive_updates if version == 2 else adapter._on_updates)


def _capability_flags(builder: ClientBuilder) -> dict[str, bool]:
    caps = msgspec.to_builtins(builder.v1_initialize_request())["clientCapabilities"]
    fs = caps.get("fs", {})
    return {
        "fs.readTextFile": fs.get("readTextFile", False),
        "fs.writeTextFile": fs.get("writeTextFile", False),
        "terminal": caps.get("terminal", False),
    }


async def test_v1_capabilities_agree_with_the_registered_methods() -> None:
    for builder in builders():
        flags = _capability_flags(builder)
        async with connected(builder, 1) as (client, _):
            methods = registered(client)
            for route in V1Protocol.routes:
                if route.advertises is not None:
                    assert flags[route.advertises] == (route.method in methods), (route.method, builder.offer())
        # and the wire keeps its shape: an fs object only with a provider, explicit flags with one
        caps = msgspec.to_builtins(builder.v1_initialize_request())["clientCapabilities"]
        if builder.offer().file_system:
            assert set(caps["fs"]) == {"readTextFile", "writeTextFile"}
        else:
            assert caps["fs"] == {}


def test_advertised_is_true_when_any_row_of_a_capability_applies() -> None:
    on = ClientOffer(file_system=True, read_files=True, terminals=True)
    assert advertised(V1Protocol.routes, on) == {
        "fs": {"readTextFile": True, "writeTextFile": False},
        "terminal": True,
    }
    assert advertised(V2Protocol.routes, on) == {}


UNLISTED: dict[int, list[str]] = {
    # v2 has no client-side file system or terminals; v1 has them only with a provider (none set here).
    2: ["fs/read_text_file", "terminal/create", "session/prompt", "nope/nothing"],
    1: ["fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/kill", "nope/nothing"],
}


@pytest.mark.parametrize("version", [1, 2])
async def test_a_method_not_in_the_table_gets_method_not_found(version: int) -> None:
    async with connected(ClientBuilder("test-client", "1.0"), version) as (_, raw):
        for index, method in enumerate(UNLISTED[version]):
            await raw.send({"jsonrpc": "2.0", "id": 100 + index, "method": method, "params": {}})
            reply = await raw.recv()
            assert reply["id"] == 100 + index and reply["error"]["code"] == -32601, method


async def test_a_disabled_file_system_method_is_not_routed() -> None:
    """``with_file_system(write=False)``: ``fs/write_text_file`` is neither advertised nor registered."""
    builder = ClientBuilder("test-client", "1.0").with_file_system(write=False)
    async with connected(builder, 1) as (client, raw):
        assert "fs/read_text_file" in registered(client)
        await raw.send({"jsonrpc": "2.0", "id": 7, "method": "fs/write_text_file", "params": {}})
        reply = await raw.recv()
        assert reply["id"] == 7 and reply["error"]["code"] == -32601

"""``initialize``: offer the newest version we speak, read the answer's version first, pick the adapter.

The version is read from the answer before anything else is decoded, so a v1 answer is never judged by
the v2 shape (that used to fail with "missing required field `info`"). Each offer has its version's shape and
nothing else: the extensibility rules put custom data in ``_meta``, never at the root of a specified type, so a v2
offer does not carry v1's ``clientCapabilities`` / ``clientInfo`` (it used to). A v1 agent that answers 1 to the v2
offer has then not seen what this client offers in v1's terms (file system, terminals), so it is sent the v1
offer on the same connection, in v1's shape, and its answer to that one is the connection's; an agent that
refuses a second ``initialize`` keeps the first, and the client then serves none of the ``fs/*`` and
``terminal/*`` methods it never heard of (``ProtocolAdapter.narrow_offer``). The v1 offer is plain JSON
(``v1_offer.py``): the v1 adapter and the v1 types are imported only when an agent answers 1. An agent that
rejects the v2 offer with -32600 or -32602 gets the v1 offer on the same connection too.

The whole exchange has one time limit (``DEFAULT_INITIALIZE_TIMEOUT`` unless the caller sets one): an agent
that never answers (a wrong command, a banner on stdout and then silence, a login prompt waiting on a
terminal it does not have) ends in ``InitializeTimeout``, naming the agent and carrying its last stderr lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Protocol

import anyio
import msgspec

from ..client_errors import ProtocolVersionMismatch
from ..codec import convert, decoder, to_builtins
from ..errors import (
    AcpError,
    ConnectionClosed,
    InitializeTimeout,
    InvalidParams,
    InvalidRequest,
    InvalidResponse,
    RequestTimeout,
    RpcError,
    UnsupportedProtocolVersion,
)
from ..rpc import Connection
from ..schema import types as m
from ..schema import unstable as mu
from .base import ProtocolAdapter
from .mcp_transports import mcp_transports
from .routes import ClientOffer
from .v1_offer import v1_initialize_params
from .v2 import V2Protocol

__all__ = ["DEFAULT_INITIALIZE_TIMEOUT", "SUPPORTED_VERSIONS", "ClientOffering", "negotiate"]

SUPPORTED_VERSIONS = (2, 1)
"""Protocol versions this library speaks, newest first."""
DEFAULT_INITIALIZE_TIMEOUT = 30.0
"""Seconds an agent has to answer ``initialize`` (agents measured take up to ~8 s on a cold start)."""

_V2_RESPONSE = decoder(m.InitializeResponse)
_V2_RECORD = decoder(mu.InitializeResponse)


class _Version(msgspec.Struct):
    protocolVersion: Any = None
    info: Any = None
    capabilities: Any = None
    agentInfo: Any = None
    agentCapabilities: Any = None


_PEEK = msgspec.json.Decoder(_Version)


class ClientOffering(Protocol):
    """What ``initialize`` offers the agent, from the client's side (``ClientBuilder`` is one): its identity, its
    capabilities and what its adapters will serve. A protocol, so this layer names nothing of the client."""

    @property
    def info(self) -> m.Implementation: ...

    def capabilities(self) -> m.ClientCapabilities: ...

    def offer(self) -> ClientOffer: ...


def offer(builder: ClientOffering, version: int) -> Any:
    """The ``initialize`` params offering ``version``, as plain JSON in that version's shape only."""
    capabilities = builder.capabilities()
    if version == 1:
        return v1_initialize_params(capabilities, builder.info, builder.offer())
    return to_builtins(m.InitializeRequest(protocol_version=version, info=builder.info, capabilities=capabilities))


def _answered_version(raw: bytes) -> Any:
    try:
        return _PEEK.decode(raw).protocolVersion
    except msgspec.DecodeError:
        return None  # adapter_for says what is wrong with it


def _agent_name(peek: _Version) -> str:
    for info in (peek.info, peek.agentInfo):
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            return str(info["name"])
    return "the agent"


async def negotiate(
    rpc: Connection,
    builder: ClientOffering,
    versions: Sequence[int],
    *,
    timeout: float | None = None,
    agent: object = None,
) -> ProtocolAdapter:
    """Run ``initialize`` and return the adapter for the version the agent agreed to.

    ``timeout`` bounds the whole exchange (a second offer included): past it the pending ``initialize`` is
    withdrawn (``$/cancel_request``) and ``InitializeTimeout`` raised. ``agent`` is the transport the agent is
    reached through, before any wrapping: a spawned agent's (``AgentProcess``) command line and last stderr
    lines go into the time-limit error, and onto any other initialize failure as its ``stderr_tail``.
    """
    deadline = None if timeout is None else anyio.current_time() + timeout

    def remaining() -> float | None:
        return None if deadline is None else max(0.0, deadline - anyio.current_time())

    try:
        return await _negotiate(rpc, builder, versions, remaining)
    except RequestTimeout as exc:
        assert timeout is not None
        raise InitializeTimeout(timeout, agent=_agent_name_of(agent), stderr_tail=_stderr_tail(agent)) from exc
    except ConnectionClosed:
        raise  # already says how the agent ended, with its stderr tail
    except AcpError as exc:
        if getattr(exc, "stderr_tail", None) is None and hasattr(agent, "stderr_tail"):
            await anyio.sleep(0.02)  # lines written just before the answer are still on their way
            exc.stderr_tail = _stderr_tail(agent)  # type: ignore[attr-defined]
        raise


async def _negotiate(
    rpc: Connection, builder: ClientOffering, versions: Sequence[int], remaining: Callable[[], float | None]
) -> ProtocolAdapter:
    newest = offered = max(versions)
    try:
        raw = await rpc.request("initialize", offer(builder, newest), decode=bytes, timeout=remaining())
    except UnsupportedProtocolVersion as exc:
        supported = _supported(exc.data)
        common = [v for v in supported if v in versions and v != newest]
        if not common:
            raise ProtocolVersionMismatch(newest, supported, exc.data) from exc
        offered = max(common)
        raw = await rpc.request("initialize", offer(builder, offered), decode=bytes, timeout=remaining())
    except (InvalidRequest, InvalidParams):
        if newest == 1 or 1 not in versions:
            raise
        # Some v1-only agents reject a v2-shaped offer outright; offer v1 on the same connection.
        offered = 1
        raw = await rpc.request("initialize", offer(builder, 1), decode=bytes, timeout=remaining())
    narrow = False
    if offered != 1 and 1 in versions and _answered_version(raw) == 1:
        # A v1 agent answered the v2 offer, which has no place for v1's capabilities: tell it in v1's shape.
        try:
            raw = await rpc.request("initialize", offer(builder, 1), decode=bytes, timeout=remaining())
        except RpcError:
            narrow = True  # it refuses a second initialize: the first stands, and it knows none of v1's offer
    adapter = adapter_for(rpc, raw, newest, versions)
    adapter.narrow_offer = narrow
    return adapter


def _agent_name_of(agent: object) -> str | None:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and getattr(agent, "argv", None) else None


def _stderr_tail(agent: object) -> tuple[str, ...]:
    tail = getattr(agent, "stderr_tail", ())
    return tuple(tail) if isinstance(tail, (tuple, list)) else ()


def adapter_for(rpc: Connection, raw: bytes, offered: int, versions: Sequence[int]) -> ProtocolAdapter:
    """The adapter for an ``initialize`` result, judged by its ``protocolVersion`` first."""
    try:
        peek = _PEEK.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidResponse(f"result of 'initialize' is not an object: {exc}") from exc
    version = peek.protocolVersion
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidResponse(f"result of 'initialize' has no integer protocolVersion (got {version!r})")
    name = _agent_name(peek)
    if version not in versions or version not in SUPPORTED_VERSIONS:
        raise ProtocolVersionMismatch(offered, [version], agent=name, accepted=versions)
    if version == 2:
        if peek.info is None and (peek.agentInfo is not None or peek.agentCapabilities is not None):
            raise InvalidResponse(
                f"{name} answered initialize with protocolVersion 2 but in the version 1 shape "
                "(agentInfo/agentCapabilities instead of info/capabilities)"
            )
        try:
            return _with_mcp(V2Protocol(rpc, _V2_RESPONSE(raw), _V2_RECORD(raw)), raw)
        except msgspec.ValidationError as exc:
            raise InvalidResponse(f"result of 'initialize' (protocol version 2) did not decode: {exc}") from exc
    # Only now, when an agent answered 1, are the v1 adapter and the v1 types imported (tests/test_lazy_v1.py).
    from ..schema.v1 import types as v1
    from .v1.adapter import V1Protocol

    try:
        return _with_mcp(V1Protocol(rpc, decoder(v1.InitializeResponse)(raw), raw), raw)
    except msgspec.ValidationError as exc:
        raise InvalidResponse(f"result of 'initialize' (protocol version 1) did not decode: {exc}") from exc


def _with_mcp(adapter: ProtocolAdapter, raw: bytes) -> ProtocolAdapter:
    adapter.mcp_transports = mcp_transports(raw, adapter.version)
    return adapter


def _supported(data: Any) -> list[int]:
    with suppress(msgspec.ValidationError, TypeError):
        return list(convert(data, m.UnsupportedProtocolVersionErrorData).supported)
    return []

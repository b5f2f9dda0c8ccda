"""Which MCP server transports an agent accepts, read from its ``initialize`` answer in either version.

The model's ``McpCapabilities`` (stable v2) has no ``acp`` flag and v1's lists ``sse``, so the client checks a
session's MCP servers against this set of transport names instead (``stdio``, ``http``, ``sse``, ``acp``), read
once from the raw answer with the unstable types of the agreed version.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["mcp_transports"]


class _Flags(msgspec.Struct):
    stdio: Any = None
    http: Any = None
    sse: Any = None
    acp: Any = None


class _V2Session(msgspec.Struct):
    mcp: _Flags | None = None


class _V2Caps(msgspec.Struct):
    session: _V2Session | None = None


class _V2Answer(msgspec.Struct):
    capabilities: _V2Caps | None = None


class _V1Caps(msgspec.Struct, rename="camel"):
    mcp_capabilities: _Flags | None = None


class _V1Answer(msgspec.Struct, rename="camel"):
    agent_capabilities: _V1Caps | None = None


_V2 = msgspec.json.Decoder(_V2Answer)
_V1 = msgspec.json.Decoder(_V1Answer)


def _offered(flag: Any, version: int) -> bool:
    # v2: an object (``{}``) offers the transport; v1: ``true`` (an object is accepted too, as v1 mixes both)
    return isinstance(flag, dict) or (version == 1 and flag is True)


def mcp_transports(raw: bytes, version: int) -> frozenset[str]:
    """The MCP transports the agent advertised; every v1 agent accepts ``stdio`` (v1 schema: always supported).

    A malformed capability is read as not advertised, like the schema's default-on-error fields."""
    try:
        if version == 1:
            caps1 = _V1.decode(raw).agent_capabilities
            flags = caps1.mcp_capabilities if caps1 is not None else None
            found = {"stdio"}
        else:
            caps2 = _V2.decode(raw).capabilities
            flags = caps2.session.mcp if caps2 is not None and caps2.session is not None else None
            found = set()
    except (msgspec.DecodeError, msgspec.ValidationError):
        return frozenset({"stdio"} if version == 1 else ())
    if flags is not None:
        names = ("http", "sse", "acp") if version == 1 else ("stdio", "http", "acp")
        found.update(name for name in names if _offered(getattr(flags, name), version))
    return frozenset(found)

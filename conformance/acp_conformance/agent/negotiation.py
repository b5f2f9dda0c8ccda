"""Version negotiation for the reference agent: read the offered version before judging the params' shape.

A v1 client's ``initialize`` (``clientCapabilities``, ``clientInfo``) is not a valid v2 request (v2 requires
``info``), so validating the v2 shape first would answer every v1 client ``-32602`` before it learns which
versions this agent speaks. The version is read first; only then are the params held to that version's shape,
and every error about a malformed ``initialize`` still names the versions supported.
"""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.codec import convert
from acp_session.errors import InvalidParams, UnsupportedProtocolVersion
from acp_session.schema.types import InitializeRequest, UnsupportedProtocolVersionErrorData

__all__ = ["SUPPORTED_VERSIONS", "chosen_version", "v2_request"]

SUPPORTED_VERSIONS: tuple[int, ...] = (1, 2)
"""The protocol versions the reference agent speaks, oldest first."""


def _invalid(reason: str, supported: tuple[int, ...], **extra: Any) -> InvalidParams:
    return InvalidParams(data={"reason": reason, "supportedVersions": list(supported), **extra})


def chosen_version(params: Any, supported: tuple[int, ...] = SUPPORTED_VERSIONS) -> int:
    """The version to answer: the offered one when supported, the newest for a newer offer (v1 when that
    offer does not have v2's shape).

    A params value without an integer ``protocolVersion`` is ``-32602`` (naming the supported versions); an
    offer older than every supported version is ``-32022`` with ``supported``.
    """
    if not isinstance(params, dict):
        raise _invalid("initialize params must be an object with an integer protocolVersion", supported)
    offered = params.get("protocolVersion")
    if not isinstance(offered, int) or isinstance(offered, bool):
        raise _invalid("protocolVersion must be an integer", supported, protocolVersion=offered)
    if offered < supported[0]:
        data = UnsupportedProtocolVersionErrorData(requested=offered, supported=list(supported))
        raise UnsupportedProtocolVersion(data=msgspec.to_builtins(data))
    if offered in supported:
        return offered
    if 1 not in supported:
        return supported[-1]
    try:
        convert(params, InitializeRequest)
    except (msgspec.ValidationError, TypeError):
        # A newer offer that is not v2-shaped (v2 requires ``info``; v1 does not): the client was written for
        # v1, so it gets v1 rather than a -32602 for a shape it never claimed. The kit's ACP-INIT-003 probe
        # carries both shapes' fields.
        return 1
    return supported[-1]


def v2_request(params: dict[str, Any], supported: tuple[int, ...] = SUPPORTED_VERSIONS) -> InitializeRequest:
    """The params held to v2's shape (a newer offer is answered in v2 too), or ``-32602`` naming the versions."""
    try:
        request = convert(params, InitializeRequest)
    except (msgspec.ValidationError, TypeError) as exc:
        raise _invalid(f"not a protocol version 2 initialize request: {exc}", supported) from None
    if not isinstance(request, InitializeRequest):
        raise _invalid("not a protocol version 2 initialize request", supported)
    return request

"""Initialization (v2): the ``initialize`` answer, version negotiation both ways, advertised auth methods."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema.types import Implementation, InitializeRequest, InitializeResponse

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..pipelining import pipelined_session_new as pipelined
from .base import V2

__all__ = ["auth_methods", "initialize", "version_negotiation", "version_too_old", "pipelined_session_new"]


@V2(
    "initialize",
    "initialize answers protocol version 2 with implementation info",
    "initialization",
    (
        "initialization.mdx#version-negotiation",
        "initialization.mdx#implementation-information",
        "schema:InitializeResponse",
        "ACP2-028",
    ),
    needs_session=False,
)
async def initialize(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = p.init_result or {}
    try:
        response = decoder(InitializeResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:InitializeResponse", f"initialize result does not match the schema: {exc}") from None
    require(
        response.protocol_version == 2,
        "initialization.mdx#version-negotiation",
        f"requested version 2, agent answered {response.protocol_version}",
    )
    for method in p.auth_methods:
        # The runner does not enable terminal authentication, so no terminal method may be offered.
        kind = method.get("type") if isinstance(method, dict) else None
        require(kind != "terminal", "ACP2-028", f"terminal auth method {method.get('methodId')!r} offered")
    markers = _non_object_markers(result.get("capabilities"), "capabilities")
    require(not markers, "schema:InitializeResponse", f"v2 capability markers are objects, not {', '.join(markers)}")
    return f"agent {response.info.name} {response.info.version}"


_MARKER_GROUPS = frozenset({"session", "auth", "prompt", "mcp"})


def _non_object_markers(caps: Any, path: str) -> list[str]:
    """Capability markers that are not an object or null (v2 has no boolean capabilities: ACP-INIT-204)."""
    found: list[str] = []
    if not isinstance(caps, dict):
        return found
    for key, value in caps.items():
        if key.startswith("_"):
            continue
        if value is not None and not isinstance(value, dict):
            found.append(f"{path}.{key} = {json.dumps(value)}")
        elif isinstance(value, dict) and key in _MARKER_GROUPS:
            found += _non_object_markers(value, f"{path}.{key}")
    return found


@V2(
    "version-negotiation",
    "initialize answers a newer requested version with the highest one it supports",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:InitializeResponse.protocolVersion"),
    needs_session=False,
    fresh=True,
)
async def version_negotiation(ctx: CheckContext) -> str | None:
    p = ctx.probe
    newer = await p.call_ok(
        "initialize",
        InitializeRequest(protocol_version=3, info=Implementation(name="acp-conformance", version="0.2.0")),
        rule="initialization.mdx#version-negotiation",
    )
    version = newer.get("protocolVersion") if isinstance(newer, dict) else None
    require(
        isinstance(version, int) and 2 <= version <= 3,
        "schema:InitializeResponse.protocolVersion",
        f"requested 3: expected the highest supported version at or below 3 (2 for a v2 agent), got {version!r}",
    )
    return f"3 -> {version}"


@V2(
    "version-too-old",
    "initialize with an older version than the agent supports fails with -32022 (or answers one at or below it)",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:ErrorCode(-32022)"),
    needs_session=False,
    fresh=True,
)
async def version_too_old(ctx: CheckContext) -> str | None:
    # A fresh agent process: what a repeated initialize may do is not specified, so the probe comes first.
    p = ctx.probe
    frame = await p.call(
        "initialize",
        InitializeRequest(protocol_version=1, info=Implementation(name="acp-conformance", version="0.2.0")),
        rule="initialization.mdx#version-negotiation",
    )
    if frame.error_code is not None:
        require(
            frame.error_code == -32022,
            "schema:ErrorCode(-32022)",
            f"requested 1: an agent without a version <= 1 must fail with -32022, got {frame.error_code}",
        )
        return "1 -> -32022"
    old = frame.result
    version = old.get("protocolVersion") if isinstance(old, dict) else None
    require(
        isinstance(version, int) and version <= 1,
        "schema:InitializeResponse.protocolVersion",
        f"requested 1: the answer must be at or below 1 (or -32022), got {version!r}",
    )
    return f"1 -> {version} (the agent speaks version 1 too)"


@V2(
    "auth-methods",
    "advertised auth methods come with auth/login",
    "initialization",
    ("ACP2-027", "ACP2-060"),
    needs_session=False,
)
async def auth_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if not p.auth_methods:
        raise NotApplicable("the agent advertises no authMethods")
    frame = await p.call("auth/login", {"methodId": "_acp_conformance_unknown"}, rule="ACP2-060")
    require(frame.error_code != -32601, "ACP2-060", "authMethods advertised but auth/login is -32601")
    # auth/logout is never called: it could remove the login stored for the person running the checks.
    return "auth/login answered; auth/logout not called (it could remove a stored login)"


@V2(
    "pipelined-session-new",
    "a session/new sent in the same write as initialize is refused, or answered in the negotiated version",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:NewSessionResponse", "extensibility.mdx"),
    prompts=False,
    fresh=True,
)
async def pipelined_session_new(ctx: CheckContext) -> str | None:
    version, what, problems = await pipelined(ctx.probe, ctx.offer, ctx.cwd, ctx.wait)
    if version is None:
        raise NotApplicable(f"offered {ctx.offer} with a pipelined session/new: {what}")
    notes = [f"offered {ctx.offer}: {what}"]
    found = [(ctx.offer, problem) for problem in problems]
    if ctx.spawn is not None and ctx.offer >= 2:
        # An agent that speaks version 1 too: a v1 client pipelines the same way (another agent process).
        async with ctx.spawn() as other:
            older, said, wrong = await pipelined(other, 1, ctx.cwd, ctx.wait)
        notes.append(f"offered 1: {said}" if older == 1 else "offered 1: the agent does not speak version 1")
        found += [(1, problem) for problem in wrong] if older == 1 else []
    if found:
        offered, problem = found[0]
        rule, _, message = problem.partition(": ")
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise Fail(rule, f"offered {offered}, a pipelined session/new: {message}{more}")
    return "; ".join(notes)

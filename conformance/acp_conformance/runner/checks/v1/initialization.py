"""Initialization (v1): the ``initialize`` answer, version negotiation, advertised auth methods."""

from __future__ import annotations

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..pipelining import pipelined_session_new as pipelined
from .base import V1

__all__ = ["auth_methods", "initialize", "version_exact", "version_negotiation", "pipelined_session_new"]


@V1(
    "initialize",
    "initialize answers protocol version 1 in the v1 schema's shape, without terminal auth methods",
    "initialization",
    (
        "initialization.mdx#version-negotiation",
        "schema:InitializeResponse",
        "ACP1-013",
        "initialization.mdx#implementation-information",
    ),
    needs_session=False,
)
async def initialize(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = p.init_result or {}
    try:
        response = decoder(v1.InitializeResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:InitializeResponse", f"initialize result does not match the v1 schema: {exc}") from None
    require(
        response.protocol_version == 1,
        "initialization.mdx#version-negotiation",
        f"v1 check set, but the agent answered version {response.protocol_version}",
    )
    for method in p.auth_methods:
        kind = method.get("type") if isinstance(method, dict) else None
        require(kind != "terminal", "ACP1-013", f"terminal auth method {method.get('id')!r} offered unasked")
    info = p.agent_info
    if not info:
        ctx.warn("initialization.mdx#implementation-information", "no agentInfo (name and version) in the answer")
        return "agent without agentInfo"
    return f"agent {info.get('name')} {info.get('version')}"


@V1(
    "version-negotiation",
    "initialize answers a newer requested version with the latest one it supports",
    "initialization",
    ("initialization.mdx#version-negotiation",),
    needs_session=False,
    fresh=True,
)
async def version_negotiation(ctx: CheckContext) -> str | None:
    p = ctx.probe
    frame = await p.call("initialize", v1.InitializeRequest(protocol_version=3), rule="initialization.mdx")
    version = frame.result.get("protocolVersion") if isinstance(frame.result, dict) else None
    require(
        frame.error is None and isinstance(version, int) and 1 <= version <= 3,
        "initialization.mdx#version-negotiation",
        f"requested 3: expected the latest supported version (1 for a v1 agent), got {frame.error or version!r}",
    )
    return f"3 -> {version}"


@V1(
    "version-exact",
    "initialize with version 1, which the agent supports, is answered with version 1",
    "initialization",
    ("initialization.mdx#version-negotiation",),
    needs_session=False,
    fresh=True,
)
async def version_exact(ctx: CheckContext) -> str | None:
    p = ctx.probe
    frame = await p.call("initialize", v1.InitializeRequest(protocol_version=1), rule="initialization.mdx")
    version = frame.result.get("protocolVersion") if isinstance(frame.result, dict) else None
    require(
        version == 1,
        "initialization.mdx#version-negotiation",
        f"requested 1 (a version it supports): the answer must be 1, got {frame.error or version!r}",
    )
    return "1 -> 1"


@V1(
    "auth-methods",
    "advertised agent-type auth methods come with authenticate",
    "initialization",
    ("authentication.mdx#advertising-authentication",),
    needs_session=False,
)
async def auth_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    agent_methods = [m for m in p.auth_methods if isinstance(m, dict) and m.get("type", "agent") == "agent"]
    if not agent_methods:
        raise NotApplicable("the agent advertises no agent-type authMethods")
    rule = "authentication.mdx#advertising-authentication"
    frame = await p.call("authenticate", v1.AuthenticateRequest(method_id="_acp_conformance_unknown"), rule=rule)
    require(
        frame.error_code != -32601,
        "authentication.mdx#advertising-authentication",
        "agent-type authMethods advertised but authenticate is -32601",
    )
    return "authenticate answered; logout never called (it could remove a stored login)"


@V1(
    "pipelined-session-new",
    "a session/new sent in the same write as initialize is refused, or answered in the negotiated version",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:NewSessionResponse", "extensibility.mdx"),
    prompts=False,
    fresh=True,
)
async def pipelined_session_new(ctx: CheckContext) -> str | None:
    version, what, problems = await pipelined(ctx.probe, 1, ctx.cwd, ctx.wait)
    if version is None:
        raise NotApplicable(f"offered 1 with a pipelined session/new: {what}")
    if problems:
        rule, _, message = problems[0].partition(": ")
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise Fail(rule, f"offered 1, a pipelined session/new: {message}{more}")
    return f"offered 1: {what}"

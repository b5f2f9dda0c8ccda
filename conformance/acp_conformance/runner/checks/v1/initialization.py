"""Initialization (v1): the ``initialize`` answer, version negotiation, the advertised auth methods and logging
in. One observation per check: the answer's shape, its agentInfo, the answer to version 1 and to a version the
agent cannot speak, which auth methods it offers unasked, their ids, a login that works, sessions without one, a
``session/new`` pipelined behind ``initialize`` (answered in the negotiated version, if at all)."""

from __future__ import annotations

from acp_session.schema import v1

from ...outcomes import AUTH_REQUIRED, Fail, NotApplicable
from ...probe import v1_offer
from ...registry import CheckContext, require
from ..pipelining import pipelined_session_new as pipelined
from .base import V1, schema_problem

__all__ = [
    "agent_info",
    "auth_login",
    "auth_method_ids",
    "auth_methods",
    "initialize",
    "login_not_required",
    "pipelined_session_new",
    "terminal_auth",
    "version_exact",
    "version_negotiation",
]

UNSUPPORTED_VERSION = 65535
"""A version no agent speaks (the kit's probe, ACP-INIT-003)."""


@V1(
    "initialize",
    "initialize succeeds with protocol version 1 in the v1 schema's shape",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:InitializeResponse"),
    needs_session=False,
)
async def initialize(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = p.init_result or {}
    problem = schema_problem(v1.InitializeResponse, result)
    if problem is not None:
        raise Fail("schema:InitializeResponse", f"initialize result does not match the v1 schema: {problem}")
    version = result.get("protocolVersion")
    require(
        type(version) is int and version == 1,
        "initialization.mdx#version-negotiation",
        f"v1 check set, but the agent answered version {version!r}",
    )
    return None


@V1(
    "agent-info",
    "the initialize answer names the agent (agentInfo with name and version)",
    "initialization",
    ("initialization.mdx#implementation-information",),
    needs_session=False,
)
async def agent_info(ctx: CheckContext) -> str | None:
    info = ctx.probe.agent_info
    require(
        isinstance(info.get("name"), str) and bool(info["name"]) and isinstance(info.get("version"), str),
        "initialization.mdx#implementation-information",
        f"agentInfo should give the agent's name and version, got {(ctx.probe.init_result or {}).get('agentInfo')!r}",
    )
    return f"agent {info.get('name')} {info.get('version')}"


@V1(
    "version-negotiation",
    "initialize with a version the agent cannot speak is answered with one it does (not the offer echoed)",
    "initialization",
    ("initialization.mdx#version-negotiation",),
    needs_session=False,
    fresh=True,
)
async def version_negotiation(ctx: CheckContext) -> str | None:
    p = ctx.probe
    # Offered in v2's shape (a version past 1), so an agent that speaks v2 too does not refuse the shape; a v1
    # agent reads the protocolVersion and answers with its own.
    offer = v1_offer(UNSUPPORTED_VERSION, fs=True, terminal=True)
    frame = await p.call("initialize", offer, rule="initialization.mdx")
    version = frame.result.get("protocolVersion") if isinstance(frame.result, dict) else None
    require(
        frame.error is None and type(version) is int,
        "initialization.mdx#version-negotiation",
        f"requested {UNSUPPORTED_VERSION}: expected a success naming a version the agent speaks, got "
        f"{frame.error or frame.result!r}",
    )
    require(
        version != UNSUPPORTED_VERSION and isinstance(version, int) and version >= 1,
        "initialization.mdx#version-negotiation",
        f"requested {UNSUPPORTED_VERSION}, which no agent speaks: the answer {version!r} must be the latest version "
        "the agent supports (at least 1), not the offer echoed",
    )
    return f"{UNSUPPORTED_VERSION} -> {version}"


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
        version == 1 and type(version) is int,
        "initialization.mdx#version-negotiation",
        f"requested 1 (a version it supports): the answer must be 1, got {frame.error or version!r}",
    )
    return "1 -> 1"


@V1(
    "terminal-auth",
    "no terminal auth method is offered to a client that did not enable terminal authentication",
    "initialization",
    ("ACP1-013", "authentication.mdx"),
    needs_session=False,
)
async def terminal_auth(ctx: CheckContext) -> str | None:
    # The runner never advertises clientCapabilities.auth.terminal.
    for method in ctx.probe.auth_methods:
        kind = method.get("type") if isinstance(method, dict) else None
        require(kind != "terminal", "ACP1-013", f"terminal auth method {method.get('id')!r} offered unasked")
    return None


def _agent_methods(ctx: CheckContext) -> list[dict[str, object]]:
    return [m for m in ctx.probe.auth_methods if isinstance(m, dict) and m.get("type", "agent") == "agent"]


@V1(
    "auth-methods",
    "advertised agent-type auth methods come with authenticate",
    "initialization",
    ("authentication.mdx#advertising-authentication",),
    needs_session=False,
)
async def auth_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if not _agent_methods(ctx):
        raise NotApplicable("the agent advertises no agent-type authMethods")
    rule = "authentication.mdx#advertising-authentication"
    frame = await p.call("authenticate", v1.AuthenticateRequest(method_id="_acp_conformance_unknown"), rule=rule)
    require(frame.error_code != -32601, rule, "agent-type authMethods advertised but authenticate is -32601")
    return "authenticate answered; logout never called (it could remove a stored login)"


@V1(
    "auth-method-ids",
    "the advertised auth methods have distinct ids",
    "initialization",
    ("schema:AuthMethod",),
    needs_session=False,
)
async def auth_method_ids(ctx: CheckContext) -> str | None:
    methods = [m for m in ctx.probe.auth_methods if isinstance(m, dict)]
    if not methods:
        raise NotApplicable("the agent advertises no authMethods")
    ids = [m.get("id") for m in methods]
    twice = sorted({str(i) for i in ids if ids.count(i) > 1})
    require(not twice, "schema:AuthMethod", f"auth method id(s) {twice} advertised more than once: ids identify them")
    return f"{len(ids)} distinct id(s)"


@V1(
    "auth-login",
    "logging in with --auth METHOD answers an object, and session/new then needs no further login",
    "initialization",
    ("authentication.mdx", "schema:AuthenticateResponse"),
    needs_session=False,
)
async def auth_login(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if ctx.auth is None:
        raise NotApplicable("no --auth METHOD given: which login to use (and whether to log in) is the operator's")
    if not any(m.get("id") == ctx.auth for m in _agent_methods(ctx)):
        raise NotApplicable(f"--auth {ctx.auth} is not an agent-type method this agent advertises")
    rule = "authentication.mdx"
    frame = await p.call("authenticate", v1.AuthenticateRequest(method_id=ctx.auth), rule=rule)
    if frame.error is not None:
        raise NotApplicable(f"authenticate {ctx.auth} was refused ({frame.error}): the credentials, not judged")
    require(isinstance(frame.result, dict), "schema:AuthenticateResponse", f"authenticate answered {frame.result!r}")
    opened = await p.call("session/new", p.new_session_params(ctx.cwd), rule=rule)
    require(
        opened.error_code != AUTH_REQUIRED,
        rule,
        f"after a successful authenticate {ctx.auth}, session/new still answers {AUTH_REQUIRED}: {opened.error}",
    )
    return f"logged in with {ctx.auth}"


@V1(
    "login-not-required",
    "an agent that advertises no auth method opens sessions without asking for a login (-32000)",
    "initialization",
    ("authentication.mdx",),
    needs_session=False,
)
async def login_not_required(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.auth_methods:
        raise NotApplicable("the agent advertises auth methods: it may require a login")
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="authentication.mdx")
    require(
        frame.error_code != AUTH_REQUIRED,
        "authentication.mdx",
        f"no auth method is advertised, yet session/new answers {AUTH_REQUIRED}: the client has no way to log in",
    )
    return None


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

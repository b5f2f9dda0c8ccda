"""Initialization (v2): the ``initialize`` answer (a result, version 2, its info, its capability markers, the schema,
where vendor extensions go), version negotiation both ways, and the advertised auth methods.

The answer the runner got at start-up is the subject of most of these, so they cost no message. A startup that
fails (an error, a version that is no integer 2) stops the run; ``run.py`` then reports it on ``initialize`` or
``protocol-version``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from acp_session.schema import unstable as mu
from acp_session.schema.types import Implementation, InitializeRequest, InitializeResponse

from ...outcomes import AUTH_REQUIRED, Fail, NotApplicable
from ...probe import v1_offer
from ...registry import CheckContext, require
from ..pipelining import pipelined_session_new as pipelined
from .base import V2, strict

__all__ = [
    "agent_info",
    "auth_method_ids",
    "auth_method_types",
    "auth_methods",
    "capability_extensions",
    "capability_markers",
    "initialize",
    "initialize_schema",
    "login_without_methods",
    "pipelined_session_new",
    "protocol_version",
    "terminal_auth_gated",
    "terminal_auth_methods",
    "version_negotiation",
    "version_too_old",
]


def _result(ctx: CheckContext) -> dict[str, Any]:
    return ctx.probe.init_result or {}


@V2(
    "initialize",
    "initialize is answered with a result, not an error",
    "initialization",
    ("initialization.mdx#initialization", "schema:InitializeResponse"),
    needs_session=False,
)
async def initialize(ctx: CheckContext) -> str | None:
    result = ctx.probe.init_result
    require(isinstance(result, dict), "schema:InitializeResponse", f"initialize result is not an object: {result!r}")
    return None


@V2(
    "protocol-version",
    "initialize offered version 2 is answered with the integer 2",
    "initialization",
    ("initialization.mdx#version-negotiation", "schema:InitializeResponse.protocolVersion"),
    needs_session=False,
)
async def protocol_version(ctx: CheckContext) -> str | None:
    version = _result(ctx).get("protocolVersion")
    require(
        isinstance(version, int) and not isinstance(version, bool) and version == 2,
        "initialization.mdx#version-negotiation",
        f"requested version 2, agent answered {version!r}",
    )
    return None


@V2(
    "agent-info",
    "the initialize answer's info names the agent and its version (non-empty strings)",
    "initialization",
    ("initialization.mdx#implementation-information", "schema:Implementation"),
    needs_session=False,
)
async def agent_info(ctx: CheckContext) -> str | None:
    info = _result(ctx).get("info")
    rule = "initialization.mdx#implementation-information"
    require(isinstance(info, dict), rule, f"info must be an object, got {info!r}")
    assert isinstance(info, dict)
    for key in ("name", "version"):
        require(isinstance(info.get(key), str) and info[key] != "", rule, f"info.{key} must be a non-empty string")
    return f"agent {info['name']} {info['version']}"


_MARKER_GROUPS = frozenset({"session", "auth", "prompt", "mcp"})


def _non_object_markers(caps: Any, path: str) -> list[str]:
    """Capability markers that are not an object or null (v2 has no boolean capabilities)."""
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
    "capability-markers",
    "every capability marker is an object (or null), never a boolean",
    "initialization",
    ("schema:AgentCapabilities", "schema:SessionCapabilities"),
    needs_session=False,
)
async def capability_markers(ctx: CheckContext) -> str | None:
    caps = _result(ctx).get("capabilities")
    require(caps is None or isinstance(caps, dict), "schema:AgentCapabilities", f"capabilities is {caps!r}")
    markers = _non_object_markers(caps, "capabilities")
    require(not markers, "schema:AgentCapabilities", f"v2 capability markers are objects, not {', '.join(markers)}")
    return None


@V2(
    "initialize-schema",
    "the initialize answer matches the v2 schema (strictly: no field of a wrong type)",
    "initialization",
    ("schema:InitializeResponse",),
    needs_session=False,
)
async def initialize_schema(ctx: CheckContext) -> str | None:
    strict(_result(ctx), InitializeResponse, "schema:InitializeResponse", "the initialize result")
    return None


_CAPABILITY_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(mu.AgentCapabilities))


@V2(
    "capability-extensions",
    "vendor extensions are advertised in capabilities._meta, not as keys of their own in capabilities",
    "initialization",
    ("extensibility.mdx#advertising-custom-capabilities",),
    needs_session=False,
)
async def capability_extensions(ctx: CheckContext) -> str | None:
    caps = _result(ctx).get("capabilities")
    unknown = sorted(k for k in caps if k not in _CAPABILITY_KEYS) if isinstance(caps, dict) else []
    require(
        not unknown,
        "extensibility.mdx#advertising-custom-capabilities",
        f"capabilities has keys the schema does not define ({', '.join(unknown)}): vendor extensions go in _meta",
    )
    meta = caps.get("_meta") if isinstance(caps, dict) else None
    return f"extensions in _meta: {', '.join(sorted(meta))}" if isinstance(meta, dict) and meta else None


@V2(
    "version-negotiation",
    "initialize asking for a version that does not exist (3) is answered with 2, the highest one",
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
        version == 2 and not isinstance(version, bool),
        "schema:InitializeResponse.protocolVersion",
        f"requested 3, which does not exist: expected 2 (the agent's highest, as it answered a request for 2), "
        f"got {version!r}" + (" (an echo of the request)" if version == 3 else ""),
    )
    return "3 -> 2"


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


def _methods(ctx: CheckContext) -> list[dict[str, Any]]:
    methods = [m for m in ctx.probe.auth_methods if isinstance(m, dict)]
    if not methods:
        raise NotApplicable("the agent advertises no authMethods")
    return methods


@V2(
    "auth-methods",
    "advertised auth methods come with auth/login",
    "initialization",
    ("ACP2-027", "ACP2-060"),
    needs_session=False,
)
async def auth_methods(ctx: CheckContext) -> str | None:
    _methods(ctx)
    frame = await ctx.probe.call("auth/login", {"methodId": "_acp_conformance_unknown"}, rule="ACP2-060")
    require(frame.error_code != -32601, "ACP2-060", "authMethods advertised but auth/login is -32601")
    # auth/logout is never called: it could remove the login stored for the person running the checks.
    return "auth/login answered; auth/logout not called (it could remove a stored login)"


@V2(
    "auth-method-ids",
    "the advertised auth methods' ids are unique",
    "initialization",
    ("schema:AuthMethod",),
    needs_session=False,
)
async def auth_method_ids(ctx: CheckContext) -> str | None:
    ids = [m.get("methodId") for m in _methods(ctx)]
    require(len(ids) == len({json.dumps(i) for i in ids}), "schema:AuthMethod", f"duplicate methodId in {ids}")
    return None


@V2(
    "auth-method-types",
    "every advertised auth method's type is agent, terminal or _-prefixed",
    "initialization",
    ("schema:AuthMethod", "extensibility.mdx#enum-and-tagged-union-variants"),
    needs_session=False,
)
async def auth_method_types(ctx: CheckContext) -> str | None:
    for method in _methods(ctx):
        kind = method.get("type")
        require(
            kind in ("agent", "terminal") or (isinstance(kind, str) and kind.startswith("_")),
            "extensibility.mdx#enum-and-tagged-union-variants",
            f"auth method {method.get('methodId')!r} has type {kind!r}: neither agent, terminal nor _-prefixed",
        )
    return None


@V2(
    "terminal-auth-gated",
    "no terminal auth method is offered to a client that did not enable terminal authentication",
    "initialization",
    ("ACP2-028",),
    needs_session=False,
)
async def terminal_auth_gated(ctx: CheckContext) -> str | None:
    for method in ctx.probe.auth_methods:
        kind = method.get("type") if isinstance(method, dict) else None
        require(kind != "terminal", "ACP2-028", f"terminal auth method {method.get('methodId')!r} offered")
    return None


@V2(
    "terminal-auth-methods",
    "to a client that enables terminal authentication, terminal methods give args as strings and env with unique names",
    "initialization",
    ("ACP2-030", "schema:AuthMethodTerminal", "schema:EnvVariable"),
    needs_session=False,
    fresh=True,
)
async def terminal_auth_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    params = v1_offer(ctx.offer, fs=True, terminal=True)
    params["capabilities"] = {"auth": {"terminal": {}}}
    result = await p.call_ok("initialize", params, rule="initialization.mdx#initialization")
    methods = result.get("authMethods") if isinstance(result, dict) else None
    terminals = [m for m in methods or [] if isinstance(m, dict) and m.get("type") == "terminal"]
    if not terminals:
        raise NotApplicable("no terminal auth method is offered even to a client that enables terminal auth")
    for method in terminals:
        name = method.get("methodId")
        args, env = method.get("args"), method.get("env")
        if args is not None:
            require(
                isinstance(args, list) and all(isinstance(a, str) for a in args),
                "schema:AuthMethodTerminal",
                f"terminal auth method {name!r}: args must be strings, got {args!r}",
            )
        if env is None:
            continue
        entries = env if isinstance(env, list) else [env]
        for entry in entries:
            require(
                isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str),
                "schema:EnvVariable",
                f"terminal auth method {name!r}: env entries need string name and value, got {entry!r}",
            )
        names = [e["name"] for e in entries]
        require(len(names) == len(set(names)), "ACP2-030", f"terminal auth method {name!r}: env names {names}")
    return f"{len(terminals)} terminal method(s)"


@V2(
    "login-without-methods",
    "an agent that advertises no auth method does not refuse session/new for lack of a login",
    "initialization",
    ("schema:ErrorCode(-32000)", "authentication.mdx"),
    needs_session=False,
    prompts=False,
)
async def login_without_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.auth_methods:
        raise NotApplicable("the agent advertises auth methods: it may require a login")
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="schema:ErrorCode(-32000)")
    if frame.error_code == AUTH_REQUIRED:
        raise Fail(
            "schema:ErrorCode(-32000)",
            "session/new answered -32000 (authentication required) but the agent advertises no way to log in",
        )
    return None


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

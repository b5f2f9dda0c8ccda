"""The protocol v1 checks: an agent that answers ``initialize`` with version 1 is judged by these, against
``ACP1-NNN`` rules (rules-v1.md), the v1 schema (``schema:X``) and the v1 docs (``page.mdx#anchor``).

Version 1 has no ``messageId``, no ``state_update``: a turn is the pending ``session/prompt``, which the agent
answers with a stop reason when the turn is over. Methods beyond the baseline (``session/load``, ``/list``,
``/resume``, ``/close``, ``/delete``) are checked only when advertised. The agent's ``fs/*`` and
``terminal/*`` calls are answered by the runner inside the check's sandbox directory, through the library's
providers, and judged for their shape here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1
from acp_session.schema.types import ResourceLink, TextContent

from .common import (
    HELLO,
    allow_option,
    first_problem,
    invalid_params_common,
    scenario_turn_start,
    session_delete_common,
    session_list_common,
    texts,
    unknown_method_common,
    update_schema_problem,
    wait_permission,
    write_readme,
)
from .probe import AUTH_REQUIRED, ClientCall, Fail, Frame, LoginRequired, NotApplicable, Probe
from .registry import CheckContext, CheckFn, check, require

__all__: list[str] = []

# Closed enums of the stable v1 schema.
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
TOOL_STATUSES = frozenset({"pending", "in_progress", "completed", "failed"})
PLAN_PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed"})

_notification = decoder(v1.SessionNotification)
UNADVERTISED_UPDATES = {"notice": "ACP1-019", "compaction_update": "ACP1-020", "compaction_summary_chunk": "ACP1-020"}


def V1(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(1, id, title, area, rules, **kwargs)


def decode_problem(frame: Frame) -> str | None:
    return update_schema_problem(frame, _notification, "the v1 schema")


def stop_reason_of(frame: Frame) -> Any:
    return frame.result.get("stopReason") if isinstance(frame.result, dict) else None


def require_stop_reason(frame: Frame) -> str:
    reason = stop_reason_of(frame)
    require(
        reason in STOP_REASONS,
        "prompt-turn.mdx#stop-reasons",
        f"the prompt response's stopReason {reason!r} is not one of the v1 schema's {sorted(STOP_REASONS)}",
    )
    return str(reason)


async def response_or_fail(p: Probe, rid: int, start: int, wait: float, rule: str, what: str) -> Frame:
    frame = await p.response(rid, wait, start)
    require(frame is not None, rule, f"no response to {what} within {wait:g}s")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    return frame


# -- transport -------------------------------------------------------------------------------------------


@V1(
    "framing",
    "stdout carries only newline-delimited ACP messages; updates match the v1 schema and were asked for; "
    "responses echo our ids",
    "transport",
    (
        "transports.mdx#stdio",
        "ACP1-004",
        "schema:SessionNotification",
        "schema:AgentResponse",
        "ACP1-019",
        "ACP1-020",
        "ACP1-021",
    ),
)
async def framing(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.barrier()
    frames = p.own_frames(start)
    for frame in frames:  # what the agent wrote while starting, and for this check
        if frame.problem is not None:
            raise Fail("transports.mdx#stdio", f"stdout line {frame.index + 1} is not an ACP message: {frame.problem}")
        if frame.method == "session/update":
            problem = decode_problem(frame)
            if problem is not None:
                raise Fail("schema:SessionNotification", problem)
            # The runner advertises neither session.notices nor session.compaction.
            unasked = UNADVERTISED_UPDATES.get(str(frame.update_kind()))
            if unasked is not None:
                raise Fail(unasked, f"line {frame.index + 1}: {frame.update_kind()} sent to a client that did not ask")
        if frame.is_response and frame.message is not None:
            rid = frame.message.get("id")
            require(
                isinstance(rid, int) and 0 < rid <= p.sent_ids,
                "ACP1-004",
                f"line {frame.index + 1}: a response with id {rid!r}, which is none of our requests' ids",
            )
    return f"{len(frames)} lines, all well-formed"


# -- initialization --------------------------------------------------------------------------------------


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


# -- sessions --------------------------------------------------------------------------------------------


@V1(
    "session-new",
    "session/new returns a session id; its modes and config options are well-formed",
    "sessions",
    ("ACP1-012", "session-setup.mdx#creating-a-session", "schema:NewSessionResponse", "session-config-options.mdx"),
    prompts=False,
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    try:
        response = decoder(v1.NewSessionResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:NewSessionResponse", f"session/new result does not match the v1 schema: {exc}") from None
    require(bool(response.session_id), "session-setup.mdx#creating-a-session", "an empty session id")
    modes = result.get("modes") if isinstance(result, dict) else None
    if isinstance(modes, dict):
        ids = [m.get("id") for m in modes.get("availableModes") or [] if isinstance(m, dict)]
        if modes.get("currentModeId") not in ids:
            ctx.warn("session-modes.mdx", f"currentModeId {modes.get('currentModeId')!r} is not one of {ids}")
    for option in result.get("configOptions") or [] if isinstance(result, dict) else []:
        # The runner does not advertise boolean config options.
        require(
            not (isinstance(option, dict) and option.get("type") == "boolean"),
            "session-config-options.mdx#boolean-config-options",
            f"boolean config option {option.get('id')!r} sent to a client that did not advertise support",
        )
    return None


@V1(
    "session-list",
    "session/list (when advertised) filters by cwd and is empty when nothing matches",
    "sessions",
    ("session-list.mdx", "schema:ListSessionsResponse"),
    prompts=False,
)
async def session_list(ctx: CheckContext) -> str | None:
    if ctx.probe.session_capability("list") is None:
        raise NotApplicable("sessionCapabilities.list is not advertised")
    return await session_list_common(ctx, "session-list.mdx")


@V1(
    "session-delete",
    "session/delete (when advertised) removes a session from session/list",
    "sessions",
    ("session-delete.mdx",),
)
async def session_delete(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("list") is None and p.session_capability("delete") is not None:
        raise NotApplicable("session/delete is advertised, session/list is not: nothing to observe")
    return await session_delete_common(ctx, p.session_capability("delete"), "session-delete.mdx")


def _joined(frames: list[Frame], kind: str) -> str:
    return re.sub(r"\s+", " ", "".join(texts(f.update or {}) for f in frames if f.update_kind() == kind)).strip()


@V1(
    "session-load",
    "session/load (when advertised) replays the whole conversation before answering",
    "close and resume",
    ("session-setup.mdx#loading-sessions", "schema:LoadSessionResponse"),
)
async def session_load(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if (p.capabilities.get("loadSession")) is not True:
        raise NotApplicable("loadSession is not advertised")
    rule = "session-setup.mdx#loading-sessions"
    sid = await p.new_session(ctx.cwd)
    text = "Please remember this message."
    turn = await p.run_turn(sid, text)
    live = p.find(p.is_update(sid), turn.start, turn.response.index)
    at = p.mark
    request = v1.LoadSessionRequest(session_id=sid, cwd=ctx.cwd, mcp_servers=[])
    loaded = await p.call("session/load", request, rule=rule)
    if loaded.error is not None:
        # v1 says nothing about loading a session that is still open on the same connection.
        raise NotApplicable(f"loading a session open on this connection was refused ({loaded.error}); not judged")
    try:
        decoder(v1.LoadSessionResponse)(msgspec.json.encode(loaded.result if loaded.result is not None else {}))
    except msgspec.ValidationError as exc:
        raise Fail("schema:LoadSessionResponse", f"session/load result does not match the v1 schema: {exc}") from None
    replayed = p.find(p.is_update(sid), at, loaded.index)
    require(text in _joined(replayed, "user_message_chunk"), rule, "the replay does not include the user's prompt")
    agent_live = _joined(live, "agent_message_chunk")
    require(
        agent_live in _joined(replayed, "agent_message_chunk"),
        rule,
        f"the replay does not include the agent's reply {agent_live[:60]!r}",
    )
    await p.barrier()
    late = [f for f in p.find(p.is_update(sid), loaded.index) if f.update_kind() in ("user_message_chunk",)]
    require(not late, rule, "conversation updates replayed after the session/load response")
    return f"{len(replayed)} updates replayed"


@V1(
    "session-resume",
    "session/resume (when advertised) does not replay history",
    "close and resume",
    ("session-setup.mdx#resuming-sessions", "schema:ResumeSessionResponse"),
)
async def session_resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("resume") is None:
        raise NotApplicable("sessionCapabilities.resume is not advertised")
    rule = "session-setup.mdx#resuming-sessions"
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, "Please remember this message.")
    at = p.mark
    resumed = await p.call("session/resume", {"sessionId": sid, "cwd": ctx.cwd, "mcpServers": []}, rule=rule)
    if resumed.error is not None:
        raise NotApplicable(f"resuming a session open on this connection was refused ({resumed.error}); not judged")
    replayed = [
        f
        for f in p.find(p.is_update(sid), at, resumed.index)
        if f.update_kind() in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call")
    ]
    require(not replayed, rule, f"{len(replayed)} history updates replayed before the resume response")
    return None


@V1(
    "session-close",
    "session/close (when advertised) succeeds; closing a busy session cancels its turn",
    "close and resume",
    ("session-setup.mdx#closing-active-sessions", "ACP1-017"),
    optional_scenarios=("long_turn",),
)
async def session_close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("close") is None:
        raise NotApplicable("sessionCapabilities.close is not advertised")
    rule = "session-setup.mdx#closing-active-sessions"
    sid = await p.new_session(ctx.cwd)
    closed = await p.call("session/close", {"sessionId": sid}, rule=rule)
    require(closed.error is None, rule, f"closing an idle session failed: {closed.error}")
    scenario = ctx.optional_scenario("long_turn")
    if scenario is None:
        return "closing a busy session not checked: no long_turn scenario"
    busy = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, busy)
    closed = await p.call("session/close", {"sessionId": busy}, rule=rule)
    require(closed.error is None, rule, f"closing a busy session failed: {closed.error}")
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, "the prompt of the closed session")
    require(
        answer.error is None, rule, f"the closed session's prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(
        reason == "cancelled", "ACP1-017", f"close cancels work as session/cancel does, but stopReason is {reason!r}"
    )
    return None


# -- prompt turn ------------------------------------------------------------------------------------------


@V1(
    "prompt-turn",
    "session/prompt is answered with a v1 stop reason; the turn's updates match the v1 schema",
    "prompt turn",
    ("ACP1-012", "prompt-turn.mdx#stop-reasons", "schema:PromptResponse", "schema:SessionNotification"),
)
async def prompt_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO)
    try:
        decoder(v1.PromptResponse)(msgspec.json.encode(turn.response.result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:PromptResponse", f"the prompt result does not match the v1 schema: {exc}") from None
    reason = require_stop_reason(turn.response)
    updates = p.find(p.is_update(sid), turn.start, turn.response.index)
    for frame in updates:
        problem = decode_problem(frame)
        require(problem is None, "schema:SessionNotification", str(problem))
    return f"{len(updates)} updates, stopReason {reason}"


async def accepted(ctx: CheckContext, sid: str, blocks: list[Any], rule: str, what: str) -> Frame:
    """Send a prompt; once the turn shows output, cancel it (only acceptance matters): the prompt's response."""
    p = ctx.probe
    start = p.mark
    rid = await p.prompt(sid, "", blocks)
    first = await p.wait_for(
        lambda f: (
            (f.session_id == sid and f.update is not None) or (f.is_response and (f.message or {}).get("id") == rid)
        ),
        ctx.wait,
        start,
    )
    if first is not None and not first.is_response:
        await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, what)
    require(answer.error is None, rule, f"{what} was rejected: {answer.error}")
    return answer


@V1(
    "baseline-content",
    "text and resource_link prompt blocks are accepted",
    "prompt turn",
    ("ACP1-006", "ACP1-008", "ACP1-023"),
)
async def baseline_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    readme = write_readme(ctx.cwd)
    blocks = [TextContent(text="Have a look at this file."), ResourceLink(name="README.md", uri=f"file://{readme}")]
    await accepted(ctx, sid, blocks, "ACP1-023", "a prompt with text and resource_link blocks")
    return None


@V1(
    "unsupported-content",
    "a prompt block type the agent did not advertise: the agent's choice in v1 (always n/a)",
    "prompt turn",
    ("ACP1-023",),
    needs_session=False,
)
async def unsupported_content(ctx: CheckContext) -> str | None:
    # v1 says other block types are enabled by capabilities; it does not require rejecting them, so an agent
    # that accepts an image it did not advertise breaks nothing (the v2 set has a check for it: ACP2-012).
    raise NotApplicable("v1 does not require rejecting block types the agent did not advertise (its choice)")


# -- permissions and tools --------------------------------------------------------------------------------


@V1(
    "permission-request",
    "a permission request matches the v1 schema, and the turn ends normally once it is answered",
    "permissions and tools",
    ("schema:RequestPermissionRequest", "tool-calls.mdx#requesting-permission", "prompt-turn.mdx#stop-reasons"),
    scenarios=("permission",),
)
async def permission_request(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    start, rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    try:
        decoder(v1.RequestPermissionRequest)(msgspec.json.encode(ask.params))
    except msgspec.ValidationError as exc:
        raise Fail("schema:RequestPermissionRequest", f"the request does not match the v1 schema: {exc}") from None
    require(ask.params.get("sessionId") == sid, "schema:RequestPermissionRequest", "the request names another session")
    option = allow_option(ask)
    if option is None:
        raise NotApplicable("the permission request offers no allow option")
    await p.respond(
        ask.message["id"], v1.RequestPermissionResponse(outcome=v1.SelectedPermissionOutcome(option_id=option))
    )
    p.auto_answer_permissions = True  # further requests of this turn are not the check's subject
    answer = await response_or_fail(p, rid, start, scenario.timeout, "prompt-turn.mdx", "the prompt")
    require(answer.error is None, "prompt-turn.mdx", f"the approved turn failed: {answer.error}")
    return f"allowed {option!r}; stopReason {require_stop_reason(answer)}"


def _tool_problems(frame: Frame) -> list[str]:
    update = frame.update or {}
    problems: list[str] = []
    decoded = decode_problem(frame)
    if decoded is not None:
        problems.append(f"schema:SessionNotification: {decoded}")
    kind, status = update.get("kind"), update.get("status")
    if kind is not None and kind not in TOOL_KINDS:
        problems.append(f"schema:ToolKind: tool kind {kind!r} is not one of the v1 schema's kinds")
    if status is not None and status not in TOOL_STATUSES:
        problems.append(f"schema:ToolCallStatus: status {status!r} is not one of the v1 schema's statuses")
    for location in update.get("locations") or []:
        path = location.get("path") if isinstance(location, dict) else None
        if isinstance(path, str) and not path.startswith("/"):
            problems.append(f"overview.mdx: location path {path!r} is not absolute")
    for item in update.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "diff" and not str(item.get("path", "")).startswith("/"):
            problems.append(f"tool-calls.mdx#diffs: diff path {item.get('path')!r} is not absolute")
    return problems


@V1(
    "tool-call",
    "tool calls use the v1 schema's kinds and statuses and absolute paths",
    "permissions and tools",
    ("tool-calls.mdx", "overview.mdx", "schema:ToolKind", "schema:ToolCallStatus", "schema:SessionNotification"),
    scenarios=("tool_call",),
)
async def tool_call(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("tool_call")
    write_readme(ctx.cwd)
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, "tool_call", "tool_call_update"), turn.start, turn.response.index + 1)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no tool call")
    problems = [problem for frame in updates for problem in _tool_problems(frame)]
    first_problem(problems)
    return f"{len({(f.update or {}).get('toolCallId') for f in updates})} tool call(s), {len(updates)} updates"


@V1(
    "plan",
    "plan updates match the v1 schema (entries with its priorities and statuses)",
    "permissions and tools",
    ("agent-plan.mdx", "schema:Plan", "schema:SessionNotification"),
    scenarios=("plan",),
)
async def plan(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("plan")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, "plan"), turn.start, turn.response.index + 1)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no plan")
    for frame in updates:
        problem = decode_problem(frame)
        require(problem is None, "schema:Plan", str(problem))
        for entry in (frame.update or {}).get("entries") or []:
            require(
                isinstance(entry, dict)
                and entry.get("priority") in PLAN_PRIORITIES
                and entry.get("status") in PLAN_STATUSES,
                "schema:PlanEntry",
                f"plan entry {entry!r}: priority and status must be the v1 schema's values",
            )
    return f"{len(updates)} plan update(s)"


# -- client methods (fs/*, terminal/*) ----------------------------------------------------------------------


def _calls(p: Probe, start: int, prefix: str) -> list[ClientCall]:
    return [c for c in p.calls if c.frame.index >= start and c.method.startswith(prefix)]


def _call_problems(calls: list[ClientCall], sid: str) -> list[str]:
    problems = [problem for call in calls for problem in call.problems]
    for call in calls:
        if call.params.get("sessionId") != sid:
            problems.append(
                f"schema:{call.method}: sessionId {call.params.get('sessionId')!r} is not the turn's session"
            )
    return problems


@V1(
    "client-fs",
    "the agent's fs/* calls match the v1 schema, name the turn's session and use absolute paths",
    "client methods",
    ("file-system.mdx", "overview.mdx", "schema:ReadTextFileRequest", "schema:WriteTextFileRequest"),
    scenarios=("tool_call",),
)
async def client_fs(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("tool_call")
    write_readme(ctx.cwd)
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    calls = _calls(p, turn.start, "fs/")
    if not calls:
        raise NotApplicable(f"the {scenario.describe()} scenario made no fs/* call")
    first_problem(_call_problems(calls, sid))
    return ", ".join(f"{c.method} {c.outcome}" for c in calls)


@V1(
    "client-terminals",
    "the agent's terminal/* calls match the v1 schema and use terminals it created (release is noted)",
    "client methods",
    ("terminals.mdx", "overview.mdx", "schema:CreateTerminalRequest"),
    scenarios=("terminal",),
)
async def client_terminals(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("terminal")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    calls = _calls(p, turn.start, "terminal/")
    if not calls:
        raise NotApplicable(f"the {scenario.describe()} scenario made no terminal/* call")
    problems = _call_problems(calls, sid)
    created: set[str] = set()
    released: set[str] = set()
    for call in calls:
        if call.method == "terminal/create":
            term = (call.result or {}).get("terminalId") if isinstance(call.result, dict) else None
            if isinstance(term, str):
                created.add(term)
            continue
        term = call.params.get("terminalId")
        if term not in created:
            problems.append(f"terminals.mdx: {call.method} for terminal {term!r}, which this turn did not create")
        elif term in released:
            problems.append(f"terminals.mdx: {call.method} for terminal {term!r} after releasing it")
        if call.method == "terminal/release" and isinstance(term, str):
            released.add(term)
    first_problem(problems)
    kept = sorted(created - released)
    if kept:
        # The agent must release a terminal when it no longer needs it: when that is, a client cannot tell.
        ctx.note(f"terminal(s) {kept} not released by the end of the turn")
    return ", ".join(f"{c.method} {c.outcome}" for c in calls)


@V1(
    "client-capabilities",
    "without the fs and terminal capabilities the agent calls no fs/* or terminal/* method",
    "client methods",
    ("file-system.mdx#checking-support", "terminals.mdx#checking-support"),
    optional_scenarios=("tool_call", "terminal"),
    one_of_scenarios=True,
    turns=2,
)
async def client_capabilities(ctx: CheckContext) -> str | None:
    p = ctx.probe
    names = [name for name in ("tool_call", "terminal") if name in ctx.scenarios]
    write_readme(ctx.cwd)
    # First with the capabilities (this process advertises them): which scenarios make such calls at all?
    sid = await p.new_session(ctx.cwd)
    calling: list[str] = []
    for name in names:
        scenario = ctx.scenario(name)
        turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
        if _calls(p, turn.start, ""):
            calling.append(name)
    if not calling:
        raise NotApplicable(f"the {' and '.join(names)} scenario turns make no fs/* or terminal/* call at all")
    # Then the same turns on an agent process told that the client has neither capability.
    assert ctx.spawn is not None
    failure: Exception | None = None  # raised outside the extra process's task group, so it is not wrapped
    async with ctx.spawn() as bare:
        ctx.probe = bare
        try:
            await ctx.initialize(fs=False, terminal=False)
            bare_sid = await bare.new_session(ctx.cwd)
            for name in calling:
                scenario = ctx.scenario(name)
                turn = await bare.run_turn(bare_sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
                for call in _calls(bare, turn.start, ""):
                    rule = "file-system.mdx" if call.method.startswith("fs/") else "terminals.mdx"
                    message = f"{call.method} called although the client advertised no such capability ({name})"
                    failure = Fail(f"{rule}#checking-support", message)
                    break
                if failure is not None:
                    break
        except (Fail, NotApplicable, LoginRequired) as exc:
            failure = exc
        finally:
            ctx.probe = p
    if failure is not None:
        raise failure
    return f"the {' and '.join(calling)} turns call no client method once the capabilities are off"


# -- cancellation ----------------------------------------------------------------------------------------


@V1(
    "cancel-turn",
    "session/cancel ends the turn: the prompt is answered with stopReason cancelled, no update after it",
    "cancellation",
    ("prompt-turn.mdx#cancellation", "ACP1-017", "ACP1-027"),
    scenarios=("long_turn",),
)
async def cancel_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, sid)
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    answer = await response_or_fail(p, rid, start, ctx.wait, "prompt-turn.mdx#cancellation", "the cancelled prompt")
    require(
        answer.error is None, "ACP1-017", f"the cancelled prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(
        reason == "cancelled",
        "ACP1-017",
        f"after session/cancel the prompt ended with {reason!r} (if the {scenario.name} turn simply ended before "
        "the cancel arrived, give it a longer prompt)",
    )
    await p.barrier()
    late = p.find(p.is_update(sid), answer.index)
    require(
        not late, "prompt-turn.mdx#cancellation", f"{late[0].update_kind() if late else ''} sent after the response"
    )
    return None


@V1(
    "cancel-permission",
    "session/cancel during a permission request (answered cancelled) ends the turn with stopReason cancelled",
    "cancellation",
    ("prompt-turn.mdx#cancellation", "ACP1-017", "ACP1-027"),
    scenarios=("permission",),
)
async def cancel_permission(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    start, rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    # The client's part (ACP1-025): answer every pending permission request with the cancelled outcome.
    await p.respond(ask.message["id"], v1.RequestPermissionResponse(outcome=v1.Cancelled()))
    p.auto_answer_permissions = True
    answer = await response_or_fail(p, rid, start, ctx.wait, "prompt-turn.mdx#cancellation", "the cancelled prompt")
    require(
        answer.error is None, "ACP1-017", f"the cancelled prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(reason == "cancelled", "ACP1-017", f"after session/cancel the prompt ended with {reason!r}")
    return None


# -- config and modes ------------------------------------------------------------------------------------


@V1(
    "session-modes",
    "session/set_mode (when modes are advertised) accepts an advertised mode",
    "config and modes",
    ("session-modes.mdx#from-the-client",),
    prompts=False,
)
async def session_modes(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    modes = result.get("modes") if isinstance(result, dict) else None
    if not isinstance(modes, dict) or not modes.get("availableModes"):
        raise NotApplicable("the session advertises no modes")
    ids = [m.get("id") for m in modes["availableModes"] if isinstance(m, dict)]
    target = next((m for m in ids if m != modes.get("currentModeId")), ids[0])
    rule = "session-modes.mdx#from-the-client"
    frame = await p.call("session/set_mode", {"sessionId": result["sessionId"], "modeId": target}, rule=rule)
    require(frame.error_code != -32601, "session-modes.mdx#from-the-client", "modes advertised but set_mode is -32601")
    if frame.error is not None:
        ctx.warn("session-modes.mdx#from-the-client", f"setting the advertised mode {target!r} failed: {frame.error}")
    return f"mode {target!r}"


@V1(
    "config-options",
    "session/set_config_option (when config options are advertised) answers with the complete list",
    "config and modes",
    ("session-config-options.mdx#from-the-client",),
    prompts=False,
)
async def config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    rule = "session-config-options.mdx#from-the-client"
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    options = [o for o in (result.get("configOptions") or []) if isinstance(o, dict)]
    select = next((o for o in options if o.get("type") == "select"), None)
    if select is None:
        raise NotApplicable("no select config option advertised")
    values = [o.get("value") for o in select.get("options") or [] if isinstance(o, dict) and "value" in o]
    if not values:
        raise NotApplicable(f"config option {select.get('id')!r} lists its values in groups only")
    target = next((v for v in values if v != select.get("currentValue")), values[0])
    params = {"sessionId": result["sessionId"], "configId": select.get("id"), "value": target}
    answer = await p.call_ok("session/set_config_option", params, rule=rule)
    listed = answer.get("configOptions") if isinstance(answer, dict) else None
    require(isinstance(listed, list), rule, f"the answer has no configOptions list: {answer!r}")
    assert isinstance(listed, list)
    ids = {o.get("id") for o in listed if isinstance(o, dict)}
    require(
        ids >= {o.get("id") for o in options}, rule, f"the answer must list every option, got {sorted(map(str, ids))}"
    )
    now = next((o.get("currentValue") for o in listed if isinstance(o, dict) and o.get("id") == select.get("id")), None)
    require(now == target, rule, f"after setting {select.get('id')}={target!r} the answer says {now!r}")
    return None


# -- errors ----------------------------------------------------------------------------------------------


@V1(
    "unknown-method",
    "unknown methods get -32601; unknown notifications should get no answer",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    return await unknown_method_common(ctx)


@V1(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42, "mcpServers": []})

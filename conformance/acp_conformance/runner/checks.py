"""The protocol v2 checks. Each cites the rules it verifies (``ACP2-NNN`` from rules-v2.md, ``schema:X``,
``page.mdx#anchor`` of the v2 docs) and fails only where the spec says MUST; a SHOULD the agent does not
follow is a warning, and behaviour the spec leaves to the agent is a note or "not applicable".

Checks that need the agent to do something a client cannot request (run long, ask for permission, start
background work) use the scenario file's prompts; without one they are not applicable. The protocol v1
checks are in ``checks_v1.py``; ``CHECK_SETS`` holds both sets.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema.types import (
    CancelledPermissionOutcome,
    CancelRequestNotification,
    CancelSessionNotification,
    CloseSessionRequest,
    ImageContent,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    McpServerHttp,
    NewSessionResponse,
    PromptResponse,
    ReplayFromStart,
    RequestPermissionResponse,
    ResourceLink,
    ResumeSessionRequest,
    SelectedPermissionOutcome,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionValueIdRequest,
    TextContent,
    UnknownReplayFrom,
    UnknownRequestPermissionOutcome,
    UnknownSetSessionConfigOptionRequest,
    UpdateSessionNotification,
)

from .common import (
    HELLO,
    MESSAGE_KINDS,
    allow_option,
    config_option_problems,
    first_problem,
    invalid_params_common,
    known_or_custom,
    late_output,
    patch_problems,
    permission_tool_call,
    scenario_turn_start,
    session_delete_common,
    session_list_common,
    texts,
    tool_call_completed,
    unknown_method_common,
    update_schema_problem,
    wait_permission,
    write_readme,
)
from .probe import AUTH_REQUIRED, OUTPUT_KINDS, Fail, Frame, LoginRequired, NotApplicable
from .registry import CHECK_SETS, Check, CheckContext, CheckFn, check, require

__all__ = ["ALL_CHECK_IDS", "CHECKS", "CHECK_SETS", "Check", "CheckContext", "check_set"]

KNOWN_STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"})
TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
TOOL_STATUSES = frozenset({"pending", "in_progress", "paused", "completed", "failed", "cancelled"})
PLAN_PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed", "cancelled"})
PLAN_TYPES = frozenset({"items", "file"})
HISTORY_KINDS = MESSAGE_KINDS | {
    "user_message",
    "user_message_chunk",
    "tool_call_update",
    "tool_call_content_chunk",
    "plan_update",
    "terminal_update",
    "terminal_output_chunk",
}

_update_decode = decoder(UpdateSessionNotification)


def V2(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(2, id, title, area, rules, **kwargs)


def _decode_update(frame: Frame) -> str | None:
    return update_schema_problem(frame, _update_decode, "the schema")


# -- transport -------------------------------------------------------------------------------------------


@V2(
    "framing",
    "stdout carries only newline-delimited ACP messages that match the schema",
    "transport",
    ("transports.mdx#stdio", "ACP2-004", "ACP2-057", "schema:SessionUpdate", "schema:AgentResponse"),
)
async def framing(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    await p.barrier()
    frames = p.own_frames(start)
    for frame in frames:  # what the agent wrote while starting, and for this check
        if frame.problem is not None:
            raise Fail("transports.mdx#stdio", f"stdout line {frame.index + 1} is not an ACP message: {frame.problem}")
        if frame.method == "session/update":
            problem = _decode_update(frame)
            if problem is not None:
                raise Fail("schema:SessionUpdate", problem)
        state = frame.state()
        if state is not None and state not in ("idle", "running", "requires_action"):
            raise Fail("ACP2-057", f"line {frame.index + 1}: state {state!r}, which the client did not advertise")
        if frame.is_response and frame.message is not None and "id" not in frame.message:
            raise Fail("schema:AgentResponse", f"line {frame.index + 1}: response without id")
    return f"{len(frames)} lines, all well-formed"


# -- initialization --------------------------------------------------------------------------------------


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


# -- sessions --------------------------------------------------------------------------------------------


@V2(
    "session-new",
    "session/new returns a session id and well-formed config options and commands",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionResponse", "ACP2-032", "ACP2-035", "ACP2-036", "ACP2-037", "ACP2-038"),
    prompts=False,
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    require(
        isinstance(result, dict) and isinstance(result.get("sessionId"), str) and result["sessionId"] != "",
        "schema:NewSessionResponse.sessionId",
        f"no session id in {result!r}",
    )
    for key in ("configOptions", "availableCommands"):
        require(result.get(key, []) is not None, "ACP2-032", f"{key} is null; senders must use an array")
    try:
        decoder(NewSessionResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:NewSessionResponse", f"session/new result does not match the schema: {exc}") from None
    first_problem(config_option_problems(result.get("configOptions")))
    names = [c.get("name") for c in result.get("availableCommands") or [] if isinstance(c, dict)]
    for name in names:
        require(isinstance(name, str) and not re.search(r"\s", name), "ACP2-038", f"command name {name!r}")
    require(len(names) == len(set(names)), "ACP2-038", f"duplicate command names in {names}")
    return None


@V2(
    "session-list",
    "session/list answers in the schema's shape, filters by cwd, follows cursors, and is empty when nothing matches",
    "sessions",
    ("session-list.mdx", "schema:ListSessionsResponse"),
    prompts=False,
)
async def session_list(ctx: CheckContext) -> str | None:
    return await session_list_common(ctx, "session-list.mdx")


@V2(
    "session-delete",
    "session/delete removes a session from session/list (deleting it again should succeed)",
    "sessions",
    ("session-delete.mdx",),
)
async def session_delete(ctx: CheckContext) -> str | None:
    return await session_delete_common(ctx, ctx.probe.session_capability("delete"), "session-delete.mdx")


@V2(
    "unsupported-mcp",
    "session/new rejects an MCP transport the agent does not advertise with -32602",
    "sessions",
    ("ACP2-066",),
    prompts=False,
)
async def unsupported_mcp(ctx: CheckContext) -> str | None:
    p = ctx.probe
    mcp = p.session_capability("mcp")
    server: Any = McpServerHttp(name="conformance", url="https://example.invalid/mcp")
    what = "HTTP MCP server without the capability"
    if isinstance(mcp, dict) and mcp.get("http") is not None:
        # It takes HTTP servers: a transport type no agent knows must be refused the same way.
        server = {"type": "_acp_conformance_unknown", "name": "conformance"}
        what = "MCP server of an unknown transport"
    frame = await p.call("session/new", p.new_session_params(ctx.cwd, mcp_servers=[server]), rule="ACP2-066")
    require(frame.error_code == -32602, "ACP2-066", f"{what}: expected -32602, got {frame.message}")
    return None


# -- prompt turn ------------------------------------------------------------------------------------------


@V2(
    "prompt-accepted",
    "session/prompt is answered with the inserted message's messageId",
    "prompt turn",
    ("ACP2-064", "schema:PromptResponse.messageId"),
)
async def prompt_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO)
    result = turn.response.result
    message_id = result.get("messageId") if isinstance(result, dict) else None
    require(
        isinstance(message_id, str),
        "ACP2-064",
        f"the prompt response must carry the inserted message's messageId (got {result!r})",
    )
    try:
        decoder(PromptResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:PromptResponse", str(exc)) from None
    return None


@V2(
    "user-message-echo",
    "the accepted prompt is reported as a user message update with its messageId",
    "prompt turn",
    ("prompt-lifecycle.mdx#2-prompt-accepted", "schema:PromptResponse.messageId"),
)
async def user_message_echo(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    text = "Conformance check: please reply with one word."
    turn = await p.run_turn(sid, text)
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), turn.start)
    require(bool(users), "prompt-lifecycle.mdx#2-prompt-accepted", "no user_message(_chunk) update for the prompt")
    result = turn.response.result
    message_id = result.get("messageId") if isinstance(result, dict) else None
    if isinstance(message_id, str):
        users = [f for f in users if (f.update or {}).get("messageId") == message_id]
        require(
            bool(users),
            "schema:PromptResponse.messageId",
            f"no user message update carries the response's messageId {message_id!r}",
        )
    echoed = "".join(texts(f.update or {}) for f in users)
    require(
        text in echoed,
        "prompt-lifecycle.mdx#2-prompt-accepted",
        f"the user message update does not carry the prompt's content (got {echoed!r})",
    )
    return None


@V2(
    "turn-lifecycle",
    "running is reported before the turn's output, idle at its end, no turn output after idle",
    "prompt turn",
    ("ACP2-050", "ACP2-056"),
)
async def turn_lifecycle(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO, settle=False)
    assert turn.end is not None
    idle = turn.end
    outputs = p.find(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, turn.start, idle.index)
    active = p.find(p.is_state(sid, "running", "requires_action"), turn.start, idle.index)
    require(bool(active), "ACP2-050", "no running (or requires_action) state_update before the idle update")
    if outputs:
        require(
            active[0].index < outputs[0].index,
            "ACP2-050",
            f"output ({outputs[0].update_kind()}) arrived before running was reported",
        )
    # Background work may go on after idle; messages, thoughts and plans of the turn may not.
    late = await late_output(p, sid, idle.index, MESSAGE_KINDS | {"plan_update"})
    require(late is None, "ACP2-056", f"{late.update_kind() if late else ''} after the idle update ended the turn")
    return f"{len(outputs)} output updates between running and idle"


@V2(
    "stop-reason",
    "the idle update ending a turn carries a known or _-prefixed stop reason; scenario turns end as they should",
    "prompt turn",
    ("ACP2-044", "ACP2-051", "ACP2-043", "ACP2-065", "prompt-lifecycle.mdx#stop-reasons"),
    optional_scenarios=("refusal", "max_tokens", "error"),
)
async def stop_reason(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO, settle=False)
    reason = turn.stop_reason
    # The schema says SHOULD (ACP2-044, ACP2-051), the prompt-lifecycle page MUST: the docs decide.
    require(reason is not None, "ACP2-044", "the idle update that ends the turn has no stopReason (a MUST in the docs)")
    require(
        known_or_custom(reason, KNOWN_STOP_REASONS),
        "prompt-lifecycle.mdx#stop-reasons",
        f"stopReason {reason!r} is neither known nor _-prefixed",
    )
    seen = [str(reason)]
    for name, expected in (("refusal", "refusal"), ("max_tokens", "max_tokens"), ("error", "error")):
        scenario = ctx.optional_scenario(name)
        if scenario is None:
            continue
        start = p.mark
        rid = await p.prompt(sid, scenario.text(ctx.cwd))
        response = await p.response(rid, scenario.timeout, start)
        require(response is not None, "ACP2-064", f"no response to the {name} scenario's prompt")
        assert response is not None
        if response.error is not None:
            if response.error_code == AUTH_REQUIRED:
                raise LoginRequired("session/prompt", response.error)
            # ACP2-065: once inserted (its user message reported), the prompt is answered with success even
            # when the work fails.
            inserted = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
            rule = "ACP2-065" if inserted else "prompt-lifecycle.mdx#2-prompt-accepted"
            raise Fail(rule, f"the {scenario.describe()} prompt was answered with an error: {response.error}")
        idle = await p.wait_idle(sid, start, rule="ACP2-050", timeout=scenario.timeout)
        got = (idle.update or {}).get("stopReason")
        if got != expected:
            ctx.note(f"the {scenario.describe()} scenario ended with {got!r}, not {expected!r}")
            continue
        seen.append(expected)
        if expected == "error" and not isinstance((idle.update or {}).get("error"), dict):
            ctx.warn("ACP2-043", "the error stop reason comes without an error object")
    return ", ".join(seen)


@V2(
    "baseline-content",
    "text and resource_link prompt blocks are accepted",
    "prompt turn",
    ("ACP2-009", "ACP2-011", "ACP2-083"),
)
async def baseline_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    readme = write_readme(ctx.cwd)
    blocks = [TextContent(text="Have a look at this file."), ResourceLink(name="README.md", uri=f"file://{readme}")]
    start = p.mark
    rid = await p.prompt(sid, "", blocks)
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-083", "no response to a prompt with text and resource_link blocks")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    require(frame.error is None, "ACP2-011", f"text + resource_link prompt rejected: {frame.message}")
    await p.settle(sid, start)
    return None


@V2(
    "unsupported-content",
    "a prompt block type the agent did not advertise is rejected with -32602 and not inserted",
    "prompt turn",
    ("ACP2-012", "schema:PromptResponse"),
)
async def unsupported_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    prompt_caps = p.session_capability("prompt")
    if isinstance(prompt_caps, dict) and prompt_caps.get("image") is not None:
        raise NotApplicable("image prompts are advertised")
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, "", [ImageContent(data="iVBORw0KGgo=", mime_type="image/png")])
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-012", "no response to a prompt with an image block")
    assert frame is not None
    require(frame.error_code == -32602, "ACP2-012", f"image block without the capability: got {frame.message}")
    await p.barrier()
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    require(not users, "schema:PromptResponse", "a rejected prompt produced a user message update")
    return None


# -- permissions and tools --------------------------------------------------------------------------------


@V2(
    "permission-flow",
    "requires_action while waiting for permission, running or idle after the answer, unknown answers are no approval",
    "permissions and tools",
    ("ACP2-021", "ACP2-048", "ACP2-052", "ACP2-049", "ACP2-053", "ACP2-087", "ACP2-088"),
    scenarios=("permission",),
    turns=3,
)
async def permission_flow(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    answers: list[tuple[str, str | None]] = [
        ("allow", None),
        ("unknown-option", "ACP2-087"),
        ("unknown-outcome", "ACP2-088"),
    ]
    for answer, refused_rule in answers:
        start, _rid, ask = await wait_permission(ctx, scenario, sid)
        assert ask.message is not None
        offered = [o.get("optionId") for o in ask.params.get("options") or [] if isinstance(o, dict)]
        require(len(offered) == len(set(offered)), "ACP2-021", f"duplicate option ids {offered}")
        await p.barrier()
        blocked = p.find(p.is_state(sid, "requires_action"), start)
        if not blocked:
            ctx.warn("ACP2-052", "requires_action was not reported while waiting for the permission answer")
        outcome: Any
        if answer == "allow":
            option = allow_option(ask)
            if option is None:
                raise NotApplicable(f"the permission request offers no allow option: {offered}")
            outcome = SelectedPermissionOutcome(option_id=option)
        elif answer == "unknown-option":
            outcome = SelectedPermissionOutcome(option_id="_acp_conformance_not_offered")
        else:
            outcome = UnknownRequestPermissionOutcome({"outcome": "_acp_conformance_outcome"})
        answered_at = p.mark
        await p.respond(ask.message["id"], RequestPermissionResponse(outcome=outcome))
        p.auto_answer_permissions = True  # further requests of this turn are not the check's subject
        idle = await p.settle(sid, answered_at, timeout=scenario.timeout)
        end = idle.index if idle is not None else p.mark
        if blocked:
            resumed = p.find(p.is_state(sid, "running", "idle"), answered_at, end + 1)
            require(bool(resumed), "ACP2-049", "requires_action was reported, then neither running nor idle")
        if refused_rule is not None:
            done = tool_call_completed(p, sid, permission_tool_call(ask), answered_at, end)
            require(not done, refused_rule, f"answer {answer} was treated as approval: the tool call completed")
    return None


def tool_update_problems(update: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    kind, status = update.get("kind"), update.get("status")
    if kind is not None and not known_or_custom(kind, TOOL_KINDS):
        problems.append(f"tool-calls.mdx#creating: tool kind {kind!r} is neither known nor _-prefixed")
    if status is not None and not known_or_custom(status, TOOL_STATUSES):
        problems.append(f"tool-calls.mdx#status: tool call status {status!r} is neither known nor _-prefixed")
    for location in update.get("locations") or []:
        path = location.get("path") if isinstance(location, dict) else None
        if isinstance(path, str) and not path.startswith("/"):
            problems.append(f"overview.mdx: location path {path!r} is not absolute")
    items = update.get("content")
    for item in items if isinstance(items, list) else [items]:
        if not isinstance(item, dict) or item.get("type") != "diff":
            continue
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        changed: set[str] = set()
        for change in changes:
            for key in ("path", "oldPath"):
                value = change.get(key)
                if isinstance(value, str):
                    changed.add(value)
                    if not value.startswith("/"):
                        problems.append(f"schema:Diff: change path {value!r} is not absolute")
        patch = item.get("patch")
        if isinstance(patch, dict) and patch.get("format") == "git_patch" and isinstance(patch.get("text"), str):
            problems += patch_problems(patch["text"], changed)
    return problems


@V2(
    "tool-call",
    "tool call updates use known (or _-prefixed) kinds and statuses, absolute paths, and well-formed patches",
    "permissions and tools",
    ("tool-calls.mdx", "overview.mdx", "ACP2-014", "ACP2-015", "ACP2-016", "schema:SessionUpdate"),
    scenarios=("tool_call",),
)
async def tool_call(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("tool_call")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, "tool_call_update", "tool_call_content_chunk"), turn.start)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no tool call")
    problems: list[str] = []
    for frame in updates:
        decoded = _decode_update(frame)
        if decoded is not None:
            problems.append(f"schema:SessionUpdate: {decoded}")
        update = frame.update or {}
        if frame.update_kind() == "tool_call_content_chunk":
            update = {"content": update.get("content")}
        problems += tool_update_problems(update)
    first_problem(problems)
    ids = {(f.update or {}).get("toolCallId") for f in updates}
    return f"{len(ids)} tool call(s), {len(updates)} updates"


@V2(
    "plan",
    "plan updates carry a planId and known (or _-prefixed) types, priorities and statuses",
    "permissions and tools",
    ("agent-plan.mdx", "schema:PlanUpdate"),
    scenarios=("plan",),
)
async def plan(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("plan")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, "plan_update"), turn.start)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no plan")
    for frame in updates:
        decoded = _decode_update(frame)
        require(decoded is None, "schema:PlanUpdate", str(decoded))
        content = (frame.update or {}).get("plan")
        require(isinstance(content, dict), "schema:PlanUpdate", f"line {frame.index + 1}: no plan object")
        assert isinstance(content, dict)
        require(bool(content.get("planId")), "agent-plan.mdx", f"line {frame.index + 1}: a plan without planId")
        kind = content.get("type")
        require(known_or_custom(kind, PLAN_TYPES), "agent-plan.mdx", f"plan type {kind!r} is neither known nor _")
        for entry in content.get("entries") or []:
            if not isinstance(entry, dict):
                continue
            require(
                known_or_custom(entry.get("priority"), PLAN_PRIORITIES),
                "agent-plan.mdx",
                f"plan entry priority {entry.get('priority')!r} is neither known nor _-prefixed",
            )
            require(
                known_or_custom(entry.get("status"), PLAN_STATUSES),
                "agent-plan.mdx",
                f"plan entry status {entry.get('status')!r} is neither known nor _-prefixed",
            )
        uri = content.get("uri")
        if kind == "file" and isinstance(uri, str):
            require(uri.startswith("file:///"), "agent-plan.mdx", f"plan file URI {uri!r} is not absolute")
    return f"{len(updates)} plan update(s)"


def _base64_ok(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


@V2(
    "terminal",
    "agent-owned terminals: absolute cwd, base64 output, a command on the first update",
    "permissions and tools",
    ("tool-calls.mdx#display-only-terminals", "schema:TerminalUpdate", "schema:TerminalOutputChunk"),
    scenarios=("terminal",),
)
async def terminal(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("terminal")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, "terminal_update", "terminal_output_chunk"), turn.start)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no agent-owned terminal")
    first_update: dict[str, dict[str, Any]] = {}
    rule = "tool-calls.mdx#display-only-terminals"
    for frame in updates:
        decoded = _decode_update(frame)
        require(decoded is None, "schema:SessionUpdate", str(decoded))
        update = frame.update or {}
        term = str(update.get("terminalId"))
        if frame.update_kind() == "terminal_update":
            first_update.setdefault(term, update)
            cwd = update.get("cwd")
            require(cwd is None or str(cwd).startswith("/"), rule, f"terminal {term}: cwd {cwd!r} is not absolute")
            output = update.get("output")
            if isinstance(output, dict):
                require(_base64_ok(output.get("data")), rule, f"terminal {term}: output.data is not base64")
        else:
            require(_base64_ok(update.get("data")), rule, f"terminal {term}: an output chunk is not base64")
    for term, update in first_update.items():
        if not update.get("command"):
            ctx.warn(rule, f"terminal {term}: no command on its first terminal_update")
    return f"{len({str((f.update or {}).get('terminalId')) for f in updates})} terminal(s), {len(updates)} updates"


# -- cancellation ----------------------------------------------------------------------------------------


async def cancel_and_wait_idle(ctx: CheckContext, sid: str, rule: str = "ACP2-093") -> Frame:
    p = ctx.probe
    cancel_at = p.mark
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    idle = await p.wait_for(p.is_state(sid, "idle"), ctx.wait, cancel_at)
    require(idle is not None, rule, f"no idle state_update within {ctx.wait:g}s after session/cancel")
    assert idle is not None
    return idle


@V2(
    "cancel-turn",
    "session/cancel ends the turn with an idle update carrying stopReason cancelled, and nothing of it after",
    "cancellation",
    ("ACP2-093", "ACP2-046", "ACP2-047", "ACP2-095", "ACP2-096"),
    scenarios=("long_turn",),
)
async def cancel_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, scenario, sid)
    idle = await cancel_and_wait_idle(ctx, sid)
    reason = (idle.update or {}).get("stopReason")
    require(
        reason == "cancelled",
        "ACP2-046",
        f"the idle update after session/cancel has stopReason {reason!r} (if the {scenario.name} turn simply "
        "ended before the cancel arrived, give it a longer prompt)",
    )
    late = await late_output(p, sid, idle.index, OUTPUT_KINDS)
    require(late is None, "ACP2-096", f"{late.update_kind() if late else ''} sent after the cancelled idle update")
    return None


@V2(
    "cancel-permission",
    "session/cancel stops waiting for a pending permission request, which is not approved",
    "cancellation",
    ("ACP2-091", "ACP2-093", "ACP2-046", "ACP2-086", "ACP2-003", "ACP2-092", "ACP2-054", "ACP2-094"),
    scenarios=("permission",),
)
async def cancel_permission(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    start, _rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    ask_id = ask.message["id"]
    cancel_at = p.mark
    # The client answers only after the idle update: the agent must not wait for the answer (ACP2-091).
    idle = await cancel_and_wait_idle(ctx, sid)
    require(
        (idle.update or {}).get("stopReason") == "cancelled",
        "ACP2-046",
        f"stopReason {(idle.update or {}).get('stopReason')!r} instead of cancelled",
    )
    withdrawn = p.find(lambda f: f.method == "$/cancel_request" and f.params.get("requestId") == ask_id, cancel_at)
    if not withdrawn:
        ctx.warn("ACP2-003", "the pending permission request was not withdrawn with $/cancel_request (SHOULD)")
    done = tool_call_completed(p, sid, permission_tool_call(ask), start)
    require(not done, "ACP2-086", "the tool call completed although its permission was never granted")
    # The client's part: answer the cancelled request with the cancelled outcome. A late answer must not
    # resume the cancelled work (SHOULD).
    answered_at = p.mark
    await p.respond(ask_id, RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
    await p.barrier()
    resumed = p.find(p.is_state(sid, "running", "requires_action"), answered_at)
    if resumed:
        ctx.warn("ACP2-094", "the late cancelled answer resumed the cancelled work")
    return None


async def _second_prompt(ctx: CheckContext, sid: str) -> tuple[int, int]:
    p = ctx.probe
    at = p.mark
    return at, await p.prompt(sid, "A second prompt, sent while the first one runs.")


@V2(
    "held-prompt-cancel-request",
    "$/cancel_request for a prompt sent while the session is busy gets exactly one response",
    "cancellation",
    ("ACP2-001", "ACP2-002", "cancellation.mdx", "schema:PromptResponse"),
    scenarios=("long_turn",),
)
async def held_prompt_cancel_request(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await _second_prompt(ctx, sid)
    await p.barrier()  # the agent has read the prompt: it is held (or already answered)
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    frame = await p.response(held_id, ctx.wait, held_at)
    require(frame is not None, "ACP2-001", "no response for the prompt after $/cancel_request")
    assert frame is not None
    if frame.error is None:
        message_id = frame.result.get("messageId") if isinstance(frame.result, dict) else None
        require(isinstance(message_id, str), "schema:PromptResponse", f"success without a messageId: {frame.result}")
        ctx.note("the agent inserted the second prompt while busy (or before the cancel arrived): nothing was held")
    elif frame.error_code != -32800:
        ctx.note(f"the agent refused a prompt while busy ({frame.error}): nothing was held")
    else:
        await p.barrier()
        users = p.find(
            lambda f: (
                f.session_id == sid
                and f.update_kind() in ("user_message", "user_message_chunk")
                and "A second prompt" in texts(f.update or {})
            ),
            held_at,
        )
        require(not users, "cancellation.mdx", "the withdrawn prompt (-32800) was inserted anyway")
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    await p.barrier()
    answers = p.find(lambda f: f.is_response and (f.message or {}).get("id") == held_id, held_at)
    require(len(answers) == 1, "ACP2-002", f"{len(answers)} responses for one request id")
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    return None


@V2(
    "cancel-held-prompts",
    "session/cancel also answers prompts held (not inserted) while the session was busy with -32800",
    "cancellation",
    ("schema:CancelSessionNotification", "cancellation.mdx"),
    scenarios=("long_turn",),
)
async def cancel_held_prompts(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await _second_prompt(ctx, sid)
    await p.barrier()
    early = p.find(lambda f: f.is_response and (f.message or {}).get("id") == held_id, held_at)
    if early:
        await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
        raise NotApplicable("the agent answered the second prompt at once (it inserts or refuses, never holds)")
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    frame = await p.response(held_id, ctx.wait, held_at)
    require(
        frame is not None and frame.error_code == -32800,
        "schema:CancelSessionNotification",
        "a prompt held while busy (not inserted) must be answered -32800 when the session is cancelled, got "
        f"{frame.message if frame else 'no response'}",
    )
    return None


@V2(
    "cancel-request-ignored",
    "$/cancel_request for unknown or answered ids gets no response",
    "cancellation",
    ("ACP2-002",),
    needs_session=False,
)
async def cancel_request_ignored(ctx: CheckContext) -> str | None:
    p = ctx.probe
    answered = await p.call("_acp_conformance/answered", {}, rule="schema:ErrorCode(-32601)")
    assert answered.message is not None
    mark = p.mark
    answered_id = answered.message["id"]
    for rid in (answered_id, 987654):
        await p.notify("$/cancel_request", CancelRequestNotification(request_id=rid))
    await p.barrier()
    stray = p.find(lambda f: f.is_response and (f.message or {}).get("id") in (answered_id, 987654), mark)
    require(
        not stray,
        "ACP2-002",
        f"answered a $/cancel_request for an unknown or answered id: {stray[0].raw!r}" if stray else "",
    )
    return None


# -- close, resume ---------------------------------------------------------------------------------------


@V2(
    "close",
    "session/close succeeds, closing again succeeds (or -32002), and nothing more comes for the closed session",
    "close and resume",
    ("session-setup.mdx#closing-sessions", "ACP2-074", "schema:CloseSessionRequest"),
)
async def close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    closed = await p.call(
        "session/close", CloseSessionRequest(session_id=sid), rule="session-setup.mdx#closing-sessions"
    )
    require(
        closed.error is None, "session-setup.mdx#closing-sessions", f"closing an open session failed: {closed.error}"
    )
    again = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    if again.error_code not in (None, -32002):
        ctx.warn("ACP2-074", f"closing a closed session should succeed (or -32002), got {again.error}")
    start = p.mark
    rid = await p.prompt(sid, "after close")
    frame = await p.response(rid, start=start)
    require(frame is not None, "schema:CloseSessionRequest", "no response to a prompt for a closed session")
    assert frame is not None
    require(frame.error is not None, "schema:CloseSessionRequest", "a prompt for a closed session was accepted")
    if frame.error_code != -32002:
        ctx.note(f"a prompt for a closed session is answered {frame.error_code} (-32002 names a missing session)")
    await p.barrier()
    after = p.find(lambda f: f.session_id == sid and f.method is not None, closed.index)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@V2(
    "close-active-work",
    "closing a busy session cancels its work before answering; its prompts are answered as the rules say",
    "close and resume",
    ("ACP2-073", "ACP2-075", "ACP2-076", "ACP2-077", "schema:CloseSessionRequest"),
    scenarios=("long_turn",),
)
async def close_active_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    start, first_id = await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await _second_prompt(ctx, sid)
    await p.barrier()
    close_at = p.mark
    response = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-073", timeout=ctx.wait)
    require(response.error is None, "ACP2-073", f"close failed: {response.message}")
    idle = p.find(p.is_state(sid, "idle"), close_at, response.index)
    require(
        bool(idle) and (idle[-1].update or {}).get("stopReason") == "cancelled",
        "ACP2-075",
        "no idle update with stopReason cancelled before the close response",
    )
    first = await p.response(first_id, ctx.wait, start)
    message_id = first.result.get("messageId") if first is not None and isinstance(first.result, dict) else None
    require(isinstance(message_id, str), "ACP2-077", "the inserted prompt must still be answered with its messageId")
    held = await p.response(held_id, ctx.wait, held_at)
    require(held is not None, "ACP2-076", "the second prompt got no response after close")
    assert held is not None
    if held.error is None:  # it had been inserted (the agent does not hold prompts)
        held_message = held.result.get("messageId") if isinstance(held.result, dict) else None
        require(isinstance(held_message, str), "ACP2-077", "an inserted prompt answered without its messageId")
    else:
        require(held.error_code == -32800, "ACP2-076", f"a prompt not inserted must get -32800, got {held.error}")
    await p.barrier()
    after = p.find(lambda f: f.session_id == sid and f.method is not None, response.index)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@V2(
    "resume",
    "session/resume of an open session: no replay unless asked, the state snapshot before the answer, "
    "replayed messages keep their ids, unknown cursors get -32602",
    "close and resume",
    ("ACP2-039", "ACP2-055", "ACP2-070", "ACP2-072", "session-setup.mdx#resuming-sessions"),
)
async def resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    rule = "session-setup.mdx#resuming-sessions"
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, "Please remember this message.")
    live = p.find(p.is_update(sid, "user_message", "user_message_chunk"), turn.start)
    live_ids = {(f.update or {}).get("messageId") for f in live}
    # The session stays open: whether a closed session can be resumed is the agent's choice.
    at = p.mark
    plain = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-039")
    require(plain.error is None, rule, f"resuming an open session failed: {plain.error}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, plain.index)
    require(any(f.state() for f in before), "ACP2-039", "no state_update before the resume response")
    replayed = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(not replayed, rule, "history replayed although replayFrom was omitted")

    at = p.mark
    full = await p.call(
        "session/resume",
        ResumeSessionRequest(session_id=sid, cwd=ctx.cwd, replay_from=ReplayFromStart()),
        rule="ACP2-039",
    )
    require(full.error is None, rule, f"resume with replay from the start failed: {full.error}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, full.index)
    users = [f for f in before if f.update_kind() in ("user_message", "user_message_chunk")]
    strange = {(f.update or {}).get("messageId") for f in users} - live_ids
    require(
        not strange, rule, f"replayed user messages with ids the live session never used: {sorted(map(str, strange))}"
    )
    if not users:
        ctx.note("nothing was replayed: the agent retains no history (its choice)")
    states = [f for f in before if f.state()]
    history = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(
        bool(states) and (not history or states[-1].index > history[-1].index),
        "ACP2-055",
        "the current-state snapshot must come after the replay and before the response",
    )
    bogus = await p.call(
        "session/resume",
        ResumeSessionRequest(
            session_id=sid, cwd=ctx.cwd, replay_from=UnknownReplayFrom({"type": "_acp_conformance_cursor"})
        ),
        rule="ACP2-070",
    )
    require(bogus.error_code == -32602, "ACP2-070", f"an unsupported replay cursor must get -32602: {bogus.message}")
    return f"{len(users)} user message update(s) replayed"


# -- config ----------------------------------------------------------------------------------------------


def current_values(listing: Any) -> dict[str, Any]:
    options = listing.get("configOptions") if isinstance(listing, dict) else None
    return {str(o.get("configId")): o.get("currentValue") for o in options or [] if isinstance(o, dict)}


@V2(
    "config-options",
    "session/set_config_option applies valid values and rejects bad ones with -32602, changing nothing",
    "config and modes",
    ("ACP2-080", "ACP2-081", "ACP2-082"),
    prompts=False,
)
async def config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    sid = result["sessionId"]
    options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
    if not options:
        raise NotApplicable("no config options advertised")
    before = current_values(result)
    select = next((o for o in options if o.get("type") == "select"), None)

    async def rejected(request: Any, rule: str, what: str) -> None:
        frame = await p.call("session/set_config_option", request, rule=rule)
        require(frame.error_code == -32602, rule, f"{what}: expected -32602, got {frame.message}")

    await rejected(
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id="_acp_conformance_unknown", value="x"),
        "ACP2-081",
        "unknown configId",
    )
    await rejected(
        UnknownSetSessionConfigOptionRequest(
            {"type": "_acp_conformance_type", "sessionId": sid, "configId": options[0].get("configId"), "value": 1}
        ),
        "ACP2-082",
        "unsupported value type",
    )
    if select is None:
        return "no select option to set"
    config_id = select["configId"]
    await rejected(
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value="_acp_conformance_not_a_value"),
        "ACP2-081",
        "a value the option does not offer",
    )
    await rejected(
        SetSessionConfigOptionBooleanRequest(session_id=sid, config_id=config_id, value=True),
        "ACP2-081",
        "a boolean for a select option",
    )
    values = [o.get("value") for o in select.get("options", []) if isinstance(o, dict) and "value" in o]
    target = str(next((v for v in values if v != select.get("currentValue")), select.get("currentValue")))
    listing = await p.call_ok(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value=target),
        rule="ACP2-080",
    )
    after = current_values(listing)
    require(
        after.get(config_id) == target,
        "ACP2-080",
        f"after setting {config_id}={target!r} the returned list says {after.get(config_id)!r}",
    )
    require(
        set(after) == set(before), "ACP2-080", f"the response must list every config option: {sorted(map(str, after))}"
    )
    changed = {k for k in before if k != config_id and before[k] != after.get(k)}
    require(not changed, "ACP2-081", f"rejected requests changed {sorted(map(str, changed))}")
    return None


# -- errors ----------------------------------------------------------------------------------------------


@V2(
    "unknown-method",
    "unknown methods get -32601; unknown notifications should get no answer",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    return await unknown_method_common(ctx)


@V2(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42})


# -- background work -------------------------------------------------------------------------------------


@V2(
    "background-work",
    "background work is announced first, listed on every state update, and removed after it ends",
    "background work",
    ("ACP2-041", "ACP2-042"),
    scenarios=("background",),
)
async def background_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("background")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    start = turn.start

    def listing(frame: Frame) -> bool:
        return frame.state() is not None and frame.session_id == sid and bool((frame.update or {}).get("background"))

    first = await p.wait_for(listing, scenario.timeout, start)
    if first is None:
        raise NotApplicable(f"the {scenario.describe()} scenario listed no background work")
    final = await p.wait_for(
        lambda f: f.state() is not None and f.session_id == sid and (f.update or {}).get("background") == [],
        scenario.timeout,
        first.index,
    )
    if final is None:
        raise NotApplicable(f"the background work of {scenario.describe()} did not end within {scenario.timeout:g}s")
    announced: set[str] = set()
    finished: set[str] = set()
    reporting = False
    listed: set[str] = set()
    for f in p.frames[start : final.index + 1]:
        u = f.update or {}
        if f.session_id != sid:
            continue
        kind = f.update_kind()
        if kind == "terminal_update":
            announced.add(f"terminal:{u.get('terminalId')}")
            if u.get("exitStatus") is not None:
                finished.add(f"terminal:{u.get('terminalId')}")
        elif kind in ("tool_call_update", "tool_call"):
            announced.add(f"tool_call:{u.get('toolCallId')}")
            if u.get("status") in ("completed", "failed", "cancelled"):
                finished.add(f"tool_call:{u.get('toolCallId')}")
        if f.state() is None:
            continue
        background = u.get("background")
        if reporting:
            require(
                isinstance(background, list),
                "ACP2-042",
                f"state_update at line {f.index + 1} omits background after background work was reported",
            )
        if isinstance(background, list):
            reporting = True
            now = set()
            for item in background:
                if isinstance(item, dict):
                    key = "terminal" if item.get("type") == "terminal" else "tool_call"
                    now.add(f"{key}:{item.get('terminalId') if key == 'terminal' else item.get('toolCallId')}")
            for item in sorted(now - announced):
                raise Fail("ACP2-041", f"{item} listed before it was announced")
            for item in sorted(listed - now):
                require(item in finished, "ACP2-041", f"{item} removed before its final status / exitStatus")
            listed = now
    return None


# -- the sets ----------------------------------------------------------------------------------------------

from . import checks_batch as _checks_batch  # noqa: E402,F401  (registers the v2 batch check)
from . import checks_kit as _checks_kit  # noqa: E402,F401  (registers v2 checks for the kit's open ids)
from . import checks_v1 as _checks_v1  # noqa: E402,F401  (registers the v1 set)

CHECKS: list[Check] = CHECK_SETS[2]
ALL_CHECK_IDS: frozenset[str] = frozenset(c.id for checks in CHECK_SETS.values() for c in checks)


def check_set(version: int) -> list[Check]:
    return CHECK_SETS[version]

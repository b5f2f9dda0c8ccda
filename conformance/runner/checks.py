"""The conformance checks: each runs against its own agent process and cites the rules it verifies.

A check raises ``Fail(rule, message)`` or ``NotApplicable(reason)``; returning means pass. Checks that
need behaviour the spec does not let a client trigger (a long turn to cancel, a permission request) use
the reference agent's scenarios, and only when the agent identifies as the reference agent.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from acp_session.codec import decoder
from acp_session.schema.types import (
    CancelRequestNotification,
    CancelSessionNotification,
    CloseSessionRequest,
    DeleteSessionRequest,
    ImageContent,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    McpServerHttp,
    NewSessionRequest,
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

from .probe import OUTPUT_KINDS, Fail, Frame, NotApplicable, Probe

__all__ = ["CHECKS", "Check", "CheckContext"]

KNOWN_STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"})
QUIET = 0.3  # seconds to watch for messages that must not come


@dataclass
class CheckContext:
    probe: Probe
    cwd: str


CheckFn = Callable[[CheckContext], Awaitable[str | None]]


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    rules: tuple[str, ...]
    fn: CheckFn
    timeout: float = 10.0
    initialize: bool = True


CHECKS: list[Check] = []


def check(
    id: str, title: str, rules: tuple[str, ...], *, timeout: float = 10.0, initialize: bool = True
) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        CHECKS.append(Check(id, title, rules, fn, timeout, initialize))
        return fn

    return register


def require(condition: bool, rule: str, message: str) -> None:
    if not condition:
        raise Fail(rule, message)


def reference_only(p: Probe, what: str) -> None:
    if not p.is_reference:
        raise NotApplicable(f"needs the reference agent's scenarios ({what}); the spec gives no way to trigger it")


def error_code(frame: Frame) -> int | None:
    error = frame.message.get("error") if frame.message else None
    return error.get("code") if isinstance(error, dict) else None


def result_of(frame: Frame) -> Any:
    return frame.message.get("result") if frame.message else None


_update_decode = decoder(UpdateSessionNotification)


# -- framing ---------------------------------------------------------------------------------------------


@check(
    "framing",
    "stdout carries only newline-delimited ACP messages that match the schema",
    ("transports.mdx#stdio", "ACP2-004", "ACP2-057", "schema:AgentNotification", "schema:AgentResponse"),
)
async def framing(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn_settled(sid, "/all" if p.is_reference else "Hello! Please answer with one short sentence.")
    await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    await anyio.sleep(0.1)
    for frame in p.frames:
        if frame.problem is not None:
            raise Fail("transports.mdx#stdio", f"stdout line {frame.index + 1} is not an ACP message: {frame.problem}")
        if frame.method == "session/update" and frame.message is not None:
            try:
                _update_decode(msgspec.json.encode(frame.message.get("params")))
            except msgspec.ValidationError as exc:
                raise Fail(
                    "schema:SessionUpdate", f"line {frame.index + 1}: session/update does not match: {exc}"
                ) from None
        state = frame.state()
        if state is not None and state not in ("idle", "running", "requires_action"):
            raise Fail("ACP2-057", f"line {frame.index + 1}: state {state!r} the client did not advertise")
        if frame.is_response and frame.message is not None and "id" not in frame.message:
            raise Fail("schema:AgentResponse", f"line {frame.index + 1}: response without id")
    return f"{len(p.frames)} lines, all well-formed"


# -- initialization --------------------------------------------------------------------------------------


@check(
    "initialize",
    "initialize answers protocol version 2 with implementation info",
    (
        "initialization.mdx#version-negotiation",
        "initialization.mdx#implementation-information",
        "schema:InitializeResponse",
        "ACP2-028",
    ),
    initialize=False,
)
async def initialize(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.initialize(2)
    try:
        response = decoder(InitializeResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:InitializeResponse", f"initialize result does not match the schema: {exc}") from None
    require(
        response.protocol_version == 2,
        "initialization.mdx#version-negotiation",
        f"requested version 2, agent answered {response.protocol_version}",
    )
    for method in result.get("authMethods") or []:
        # The runner does not enable terminal authentication, so no terminal method may be offered.
        require(method.get("type") != "terminal", "ACP2-028", f"terminal auth method {method.get('methodId')!r}")
    return f"agent {response.info.name} {response.info.version}"


@check(
    "version-negotiation",
    "initialize answers a newer requested version with the highest one it supports",
    ("initialization.mdx#version-negotiation", "schema:InitializeResponse.protocolVersion"),
    initialize=False,
)
async def version_negotiation(ctx: CheckContext) -> str | None:
    p = ctx.probe
    newer = await p.call_ok(
        "initialize",
        InitializeRequest(protocol_version=3, info=Implementation(name="acp-conformance", version="0.1.0")),
        rule="initialization.mdx#version-negotiation",
    )
    version = newer.get("protocolVersion") if isinstance(newer, dict) else None
    require(
        isinstance(version, int) and 2 <= version <= 3,
        "schema:InitializeResponse.protocolVersion",
        f"requested 3: expected the highest supported version at or below 3 (2 for a v2 agent), got {version!r}",
    )
    return f"3 -> {version}"


@check(
    "version-too-old",
    "initialize with an older version than the agent supports fails with -32022 (or answers one at or below it)",
    ("initialization.mdx#version-negotiation", "schema:ErrorCode(-32022)"),
    initialize=False,
)
async def version_too_old(ctx: CheckContext) -> str | None:
    # A fresh agent process: what a repeated initialize may do is not specified, so the probe comes first.
    p = ctx.probe
    frame = await p.call(
        "initialize",
        InitializeRequest(protocol_version=1, info=Implementation(name="acp-conformance", version="0.1.0")),
        rule="initialization.mdx#version-negotiation",
    )
    if error_code(frame) is not None:
        require(
            error_code(frame) == -32022,
            "schema:ErrorCode(-32022)",
            f"requested 1: an agent without a version <= 1 must fail with -32022, got {error_code(frame)}",
        )
        return "1 -> -32022"
    old = result_of(frame)
    version = old.get("protocolVersion") if isinstance(old, dict) else None
    require(
        isinstance(version, int) and version <= 1,
        "schema:InitializeResponse.protocolVersion",
        f"requested 1: the answer must be at or below 1 (or -32022), got {version!r}",
    )
    return f"1 -> {version}"


@check("auth-methods", "advertised auth methods come with auth/login and auth/logout", ("ACP2-027", "ACP2-060"))
async def auth_methods(ctx: CheckContext) -> str | None:
    p = ctx.probe
    methods = (p.init_result or {}).get("authMethods")
    if not methods:
        raise NotApplicable("the agent advertises no authMethods")
    frame = await p.call("auth/logout", {}, rule="ACP2-027")
    require(error_code(frame) != -32601, "ACP2-027", "authMethods advertised but auth/logout is -32601")
    frame = await p.call("auth/login", {"methodId": "_acp_conformance_unknown"}, rule="ACP2-060")
    require(error_code(frame) != -32601, "ACP2-060", "authMethods advertised but auth/login is -32601")
    return None


# -- sessions --------------------------------------------------------------------------------------------


@check(
    "session-new",
    "session/new returns a session id and well-formed config options and commands",
    ("session-setup.mdx", "ACP2-032", "ACP2-035", "ACP2-036", "ACP2-037", "ACP2-038"),
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", NewSessionRequest(cwd=ctx.cwd), rule="session-setup.mdx")
    require(
        isinstance(result, dict) and isinstance(result.get("sessionId"), str) and result["sessionId"] != "",
        "schema:NewSessionResponse.sessionId",
        f"no session id in {result!r}",
    )
    for key in ("configOptions", "availableCommands"):
        require(result.get(key, []) is not None, "ACP2-032", f"{key} is null; senders must use an array")
    for option in result.get("configOptions") or []:
        if option.get("type") != "select":
            continue
        values: list[str] = []
        for entry in option.get("options") or []:
            if "group" in entry or "groupId" in entry:
                require(bool(entry.get("options")), "ACP2-035", f"empty group in option {option.get('configId')}")
                values += [o.get("value") for o in entry.get("options") or []]
            else:
                values.append(entry.get("value"))
        require(
            len(values) == len(set(values)) and bool(values),
            "ACP2-037",
            f"option {option.get('configId')!r} has no or duplicate values: {values}",
        )
        require(
            option.get("currentValue") in values,
            "ACP2-036",
            f"option {option.get('configId')!r}: currentValue {option.get('currentValue')!r} not in {values}",
        )
    names = [c.get("name") for c in result.get("availableCommands") or []]
    for name in names:
        require(isinstance(name, str) and not re.search(r"\s", name), "ACP2-038", f"command name {name!r}")
    require(len(names) == len(set(names)), "ACP2-038", f"duplicate command names in {names}")
    return None


@check(
    "session-list",
    "session/list lists sessions, filters by cwd, paginates",
    ("session-list.mdx", "schema:ListSessionsResponse"),
)
async def session_list(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(50):
        result = await p.call_ok(
            "session/list", ListSessionsRequest(cwd=ctx.cwd, cursor=cursor or msgspec.UNSET), rule="session-list.mdx"
        )
        sessions = result.get("sessions") if isinstance(result, dict) else None
        if not isinstance(sessions, list):
            raise Fail("session-list.mdx", f"no sessions array in {result!r}")
        for info in sessions:
            require(
                info.get("cwd") == ctx.cwd,
                "session-list.mdx",
                f"filtered by cwd {ctx.cwd} but got a session with cwd {info.get('cwd')!r}",
            )
            seen.append(info.get("sessionId"))
        cursor = result.get("nextCursor")
        if not cursor:
            break
    require(sid in seen, "session-list.mdx", f"the new session {sid} is not listed (got {seen})")
    empty = await p.call_ok(
        "session/list", ListSessionsRequest(cwd="/acp-conformance/nowhere"), rule="session-list.mdx"
    )
    require(
        isinstance(empty, dict) and empty.get("sessions") == [],
        "session-list.mdx",
        f"no session matches that cwd, so the list must be empty: {empty!r}",
    )
    return None


@check(
    "session-delete", "session/delete removes a session and succeeds again for a deleted one", ("session-delete.mdx",)
)
async def session_delete(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("delete") is None:
        raise NotApplicable("session.delete is not advertised")
    sid = await p.new_session(ctx.cwd)
    await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    listed = await p.call_ok("session/list", ListSessionsRequest(), rule="session-list.mdx")
    ids = [s.get("sessionId") for s in (listed or {}).get("sessions", [])]
    require(sid not in ids, "session-delete.mdx", f"deleted session {sid} is still listed")
    again = await p.call("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    require(
        error_code(again) is None,
        "session-delete.mdx",
        f"deleting an already-deleted session should succeed silently, got error {error_code(again)}",
    )
    return None


@check(
    "unsupported-mcp", "session/new rejects an MCP transport the agent does not advertise with -32602", ("ACP2-066",)
)
async def unsupported_mcp(ctx: CheckContext) -> str | None:
    p = ctx.probe
    mcp = p.session_capability("mcp")
    if isinstance(mcp, dict) and mcp.get("http") is not None:
        raise NotApplicable("the agent advertises MCP over HTTP")
    server = McpServerHttp(name="conformance", url="https://example.invalid/mcp")
    frame = await p.call("session/new", NewSessionRequest(cwd=ctx.cwd, mcp_servers=[server]), rule="ACP2-066")
    require(
        error_code(frame) == -32602,
        "ACP2-066",
        f"HTTP MCP server without the capability: expected -32602, got {frame.message}",
    )
    return None


# -- prompts ---------------------------------------------------------------------------------------------


@check(
    "prompt-accepted",
    "session/prompt is answered with the inserted message's messageId",
    ("ACP2-064", "schema:PromptResponse.messageId"),
)
async def prompt_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    _, response, _ = await p.run_turn_settled(sid, "Hello!")
    result = result_of(response)
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


def _texts(update: dict[str, Any]) -> str:
    content = update.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


@check(
    "user-message-echo",
    "the accepted prompt is reported as a user message update with its messageId",
    ("prompt-lifecycle.mdx#2-prompt-accepted", "schema:PromptResponse.messageId"),
)
async def user_message_echo(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    text = "Conformance check: please echo nothing in particular."
    start, response, _ = await p.run_turn_settled(sid, text)
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    require(bool(users), "prompt-lifecycle.mdx#2-prompt-accepted", "no user_message(_chunk) update for the prompt")
    result = result_of(response)
    message_id = result.get("messageId") if isinstance(result, dict) else None
    if isinstance(message_id, str):
        users = [f for f in users if (f.update or {}).get("messageId") == message_id]
        require(
            bool(users),
            "schema:PromptResponse.messageId",
            f"no user message update carries the response's messageId {message_id!r}",
        )
    echoed = "".join(_texts(f.update or {}) for f in users)
    require(
        text in echoed,
        "prompt-lifecycle.mdx#2-prompt-accepted",
        f"the user message update does not echo the prompt text (got {echoed!r})",
    )
    return None


@check("turn-lifecycle", "running is reported before the turn's output, idle at its end", ("ACP2-050", "ACP2-056"))
async def turn_lifecycle(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    text = "/tool" if p.is_reference else "Hello! Please answer with one short sentence."
    start, _, idle = await p.run_turn(sid, text)
    outputs = p.find(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, start, idle.index)
    active = p.find(p.is_state(sid, "running", "requires_action"), start, idle.index)
    require(bool(active), "ACP2-050", "no running (or requires_action) state_update before the idle update")
    if outputs:
        require(
            active[0].index < outputs[0].index,
            "ACP2-050",
            f"output ({outputs[0].update_kind()}) arrived before running was reported",
        )
    late = await p.wait_for(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, QUIET, idle.index)
    require(late is None, "ACP2-056", f"output ({late.update_kind() if late else ''}) after the idle update")
    return f"{len(outputs)} output updates between running and idle"


@check(
    "stop-reason",
    "the idle update ending a turn carries a valid stop reason",
    ("ACP2-044", "ACP2-051", "ACP2-043", "ACP2-065", "prompt-lifecycle.mdx#stop-reasons"),
)
async def stop_reason(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    _, _, idle = await p.run_turn(sid, "Hello!")
    reason = (idle.update or {}).get("stopReason")
    require(reason is not None, "ACP2-044", "the idle update that ends the turn has no stopReason")
    require(
        isinstance(reason, str) and (reason in KNOWN_STOP_REASONS or reason.startswith("_")),
        "prompt-lifecycle.mdx#stop-reasons",
        f"stopReason {reason!r} is neither known nor `_`-prefixed",
    )
    if not p.is_reference:
        return f"stopReason {reason}"
    for text, expected in (("/refuse", "refusal"), ("/max_tokens", "max_tokens"), ("/fail", "error")):
        _, _, idle = await p.run_turn(sid, text)
        got = (idle.update or {}).get("stopReason")
        require(got == expected, "ACP2-051", f"{text}: expected stopReason {expected!r}, got {got!r}")
        if expected == "error":
            require(isinstance((idle.update or {}).get("error"), dict), "ACP2-043", "error stop without an error")
    return "end_turn, refusal, max_tokens, error"


@check("baseline-content", "text and resource_link prompt blocks are accepted", ("ACP2-009", "ACP2-011", "ACP2-083"))
async def baseline_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    blocks = [
        TextContent(text="Have a look at this file."),
        ResourceLink(name="README.md", uri=f"file://{ctx.cwd}/README.md"),
    ]
    start = p.mark
    rid = await p.prompt(sid, "", blocks)
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-083", "no response to a prompt with text and resource_link blocks")
    assert frame is not None
    require(error_code(frame) is None, "ACP2-011", f"text + resource_link prompt rejected: {frame.message}")
    await p.settle(sid, start)
    return None


@check(
    "unsupported-content",
    "a prompt block type the agent did not advertise is rejected with -32602",
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
    require(error_code(frame) == -32602, "ACP2-012", f"image block without the capability: got {frame.message}")
    await anyio.sleep(QUIET)
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    require(not users, "schema:ClientRequest(session/prompt)", "a rejected prompt produced a user message update")
    return None


# -- cancellation ----------------------------------------------------------------------------------------


async def _start_slow_turn(p: Probe, sid: str, chunks: int = 40) -> tuple[int, int]:
    """Prompt ``/slow`` and wait until it runs and streams: ``(start mark, prompt request id)``."""
    start = p.mark
    rid = await p.prompt(sid, f"/slow {chunks}")
    first = await p.wait_for(p.is_update(sid, "agent_message_chunk"), start=start)
    require(first is not None, "ACP2-050", "the /slow scenario produced no output")
    return start, rid


@check(
    "cancel-turn",
    "session/cancel ends the turn with an idle update carrying stopReason cancelled",
    ("ACP2-093", "ACP2-046", "ACP2-047", "ACP2-095", "ACP2-096"),
)
async def cancel_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a long turn to cancel")
    sid = await p.new_session(ctx.cwd)
    _start, _ = await _start_slow_turn(p, sid)
    cancel_at = p.mark
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    idle = await p.wait_for(p.is_state(sid, "idle"), 3.0, cancel_at)
    require(idle is not None, "ACP2-093", "no idle state_update within 3s after session/cancel")
    assert idle is not None
    reason = (idle.update or {}).get("stopReason")
    require(reason == "cancelled", "ACP2-046", f"the idle update after session/cancel has stopReason {reason!r}")
    late = await p.wait_for(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, QUIET, idle.index)
    require(late is None, "ACP2-096", f"{late.update_kind() if late else ''} sent after the cancelled idle update")
    return None


@check(
    "cancel-permission",
    "session/cancel cancels pending permission requests and does not approve them",
    ("ACP2-003", "ACP2-091", "ACP2-092", "ACP2-093", "ACP2-046", "ACP2-086"),
)
async def cancel_permission(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a permission request")
    p.auto_answer_permissions = False
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    await p.prompt(sid, "/permission")
    ask = await p.wait_for(lambda f: f.is_request and f.method == "session/request_permission", start=start)
    require(ask is not None, "ACP2-052", "the /permission scenario sent no session/request_permission")
    assert ask is not None and ask.message is not None
    ask_id = ask.message["id"]
    cancel_at = p.mark
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    withdrawn = await p.wait_for(
        lambda f: f.method == "$/cancel_request" and (f.message or {}).get("params", {}).get("requestId") == ask_id,
        3.0,
        cancel_at,
    )
    require(
        withdrawn is not None,
        "ACP2-003",
        "the pending permission request was not cancelled with $/cancel_request after session/cancel",
    )
    await p.respond_error(ask_id, -32800, "Request cancelled")  # the client's part of the exchange
    idle = await p.wait_for(p.is_state(sid, "idle"), 3.0, cancel_at)
    require(idle is not None, "ACP2-093", "no idle state_update within 3s after session/cancel")
    assert idle is not None
    require(
        (idle.update or {}).get("stopReason") == "cancelled",
        "ACP2-046",
        f"stopReason {(idle.update or {}).get('stopReason')!r} instead of cancelled",
    )
    done = p.find(
        lambda f: (
            f.session_id == sid
            and f.update_kind() == "tool_call_update"
            and (f.update or {}).get("status") == "completed"
        ),
        start,
    )
    require(not done, "ACP2-091", "the tool call completed although its permission was never granted")
    return None


@check(
    "permission-flow",
    "requires_action while waiting for permission, running when resumed, unknown option ids are not approval",
    ("ACP2-048", "ACP2-052", "ACP2-049", "ACP2-053", "ACP2-087", "ACP2-088", "ACP2-021"),
)
async def permission_flow(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a permission request")
    p.auto_answer_permissions = False
    sid = await p.new_session(ctx.cwd)
    answers: list[tuple[Any, str | None]] = [
        (SelectedPermissionOutcome(option_id="allow-once"), None),
        (SelectedPermissionOutcome(option_id="_acp_conformance_not_offered"), "ACP2-087"),
        (UnknownRequestPermissionOutcome({"outcome": "_acp_conformance_outcome"}), "ACP2-088"),
    ]
    for outcome, refused_rule in answers:
        start = p.mark
        await p.prompt(sid, "/permission")
        ask = await p.wait_for(lambda f: f.is_request and f.method == "session/request_permission", start=start)
        require(ask is not None, "ACP2-052", "no session/request_permission")
        assert ask is not None and ask.message is not None
        offered = [o.get("optionId") for o in (ask.message.get("params") or {}).get("options", [])]
        require(len(offered) == len(set(offered)), "ACP2-021", f"duplicate option ids {offered}")
        blocked = await p.wait_for(p.is_state(sid, "requires_action"), 2.0, start)
        require(blocked is not None, "ACP2-052", "requires_action was not reported while waiting for permission")
        answered_at = p.mark
        await p.respond(ask.message["id"], RequestPermissionResponse(outcome=outcome))
        idle = await p.settle(sid, answered_at)
        end = idle.index if idle is not None else p.mark
        resumed = p.find(p.is_state(sid, "running", "idle"), answered_at, end + 1)
        require(bool(resumed), "ACP2-049", "neither running nor idle reported after the permission answer")
        completed = p.find(
            lambda f: (
                f.session_id == sid
                and f.update_kind() == "tool_call_update"
                and (f.update or {}).get("status") == "completed"
            ),
            start,
            end,
        )
        if refused_rule is None:
            require(bool(completed), "ACP2-049", "the approved tool call did not complete")
        else:
            require(not completed, refused_rule, f"answer {outcome!r} was treated as approval")
    return None


@check(
    "held-prompt-cancel-request",
    "$/cancel_request withdraws a prompt held while the session is busy",
    ("ACP2-001", "ACP2-002", "cancellation.mdx", "schema:PromptResponse"),
)
async def held_prompt_cancel_request(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a busy session")
    sid = await p.new_session(ctx.cwd)
    await _start_slow_turn(p, sid)
    held_at = p.mark
    held_id = await p.prompt(sid, "held prompt")
    early = await p.response(held_id, QUIET, held_at)
    require(
        early is None,
        "schema:PromptResponse",
        "a prompt sent while busy was answered before the running turn ended (it must be held)",
    )
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    frame = await p.response(held_id, 3.0, held_at)
    require(frame is not None, "ACP2-001", "no response for the held prompt after $/cancel_request")
    assert frame is not None
    require(
        error_code(frame) == -32800, "cancellation.mdx", f"expected -32800 for the withdrawn prompt: {frame.message}"
    )
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    await anyio.sleep(QUIET)
    answers = p.find(lambda f: f.is_response and (f.message or {}).get("id") == held_id, held_at)
    require(len(answers) == 1, "ACP2-002", f"{len(answers)} responses for one request id")
    users = p.find(
        lambda f: (
            f.session_id == sid
            and f.update_kind() in ("user_message", "user_message_chunk")
            and "held prompt" in _texts(f.update or {})
        ),
        held_at,
    )
    require(not users, "schema:ClientRequest(session/prompt)", "the withdrawn prompt was inserted anyway")
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    return None


@check(
    "cancel-held-prompts",
    "session/cancel also answers held prompts with -32800",
    ("schema:ClientNotification(session/cancel)", "cancellation.mdx"),
)
async def cancel_held_prompts(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a busy session")
    sid = await p.new_session(ctx.cwd)
    await _start_slow_turn(p, sid)
    held_at = p.mark
    held_id = await p.prompt(sid, "held prompt")
    await anyio.sleep(0.1)
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    frame = await p.response(held_id, 3.0, held_at)
    require(
        frame is not None and error_code(frame) == -32800,
        "schema:ClientNotification(session/cancel)",
        f"a held prompt must be answered -32800 when the session is cancelled, got "
        f"{frame.message if frame else 'no response'}",
    )
    return None


@check("cancel-request-ignored", "$/cancel_request for unknown or answered ids gets no response", ("ACP2-002",))
async def cancel_request_ignored(ctx: CheckContext) -> str | None:
    p = ctx.probe
    answered = await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    assert answered.message is not None
    mark = p.mark
    answered_id = answered.message["id"]
    for rid in (answered_id, 987654):
        await p.notify("$/cancel_request", CancelRequestNotification(request_id=rid))
    await p.call("session/list", ListSessionsRequest(), rule="ACP2-002")
    stray = p.find(lambda f: f.is_response and (f.message or {}).get("id") in (answered_id, 987654), mark)
    require(
        not stray,
        "ACP2-002",
        f"answered a $/cancel_request for an unknown or answered id: {stray[0].raw!r}" if stray else "",
    )
    return None


# -- close, resume ---------------------------------------------------------------------------------------


@check(
    "close",
    "session/close is idempotent; the closed session is gone afterwards (-32002)",
    ("ACP2-074", "schema:CloseSessionRequest", "schema:ErrorCode(-32002)"),
)
async def close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn_settled(sid, "Hello!")
    await p.call_ok("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    closed_at = p.mark
    again = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    require(
        error_code(again) in (None, -32002),
        "ACP2-074",
        f"closing a closed session should succeed (or -32002), got {again.message}",
    )
    start = p.mark
    rid = await p.prompt(sid, "after close")
    frame = await p.response(rid, start=start)
    require(frame is not None, "schema:ErrorCode(-32002)", "no response to a prompt for a closed session")
    assert frame is not None
    require(
        error_code(frame) == -32002,
        "schema:ErrorCode(-32002)",
        f"a prompt for a closed session must fail with -32002, got {frame.message}",
    )
    await anyio.sleep(QUIET)
    after = p.find(lambda f: f.session_id == sid and f.method is not None, closed_at)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@check(
    "close-active-work",
    "closing a busy session cancels its work before answering",
    ("ACP2-073", "ACP2-075", "ACP2-076", "ACP2-077", "schema:CloseSessionRequest"),
)
async def close_active_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "a busy session")
    sid = await p.new_session(ctx.cwd)
    start, first_id = await _start_slow_turn(p, sid)
    held_id = await p.prompt(sid, "held prompt")
    await anyio.sleep(0.1)
    close_at = p.mark
    response = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-073", timeout=5.0)
    require(error_code(response) is None, "ACP2-073", f"close failed: {response.message}")
    idle = p.find(p.is_state(sid, "idle"), close_at, response.index)
    require(
        bool(idle) and (idle[-1].update or {}).get("stopReason") == "cancelled",
        "ACP2-075",
        "no idle update with stopReason cancelled before the close response",
    )
    held = await p.response(held_id, 2.0, close_at)
    require(
        held is not None and error_code(held) == -32800,
        "ACP2-076",
        f"the held prompt must be answered -32800, got {held.message if held else 'no response'}",
    )
    first = await p.response(first_id, 2.0, start)
    message_id = (result_of(first) or {}).get("messageId") if first is not None else None
    require(
        first is not None and isinstance(message_id, str),
        "ACP2-077",
        "the inserted prompt must still be answered with its messageId",
    )
    await anyio.sleep(QUIET)
    after = p.find(lambda f: f.session_id == sid and f.method is not None, response.index)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@check(
    "resume",
    "session/resume replays from the start and sends the state snapshot before answering",
    ("ACP2-039", "ACP2-055", "ACP2-070", "ACP2-072", "session-setup.mdx#resuming-sessions"),
)
async def resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start, _, _ = await p.run_turn_settled(sid, "Please remember this message.")
    live = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    live_ids = {(f.update or {}).get("messageId") for f in live}
    await p.call_ok("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")

    at = p.mark
    plain = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-039")
    require(error_code(plain) is None, "session-setup.mdx#resuming-sessions", f"resume failed: {plain.message}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, plain.index)
    require(any(f.state() for f in before), "ACP2-039", "no state_update before the resume response (no replay)")
    replayed = [
        f
        for f in before
        if f.update_kind() in ("user_message", "user_message_chunk", "agent_message", "agent_message_chunk")
    ]
    require(not replayed, "session-setup.mdx#resuming-sessions", "history replayed although replayFrom was omitted")

    at = p.mark
    full = await p.call(
        "session/resume",
        ResumeSessionRequest(session_id=sid, cwd=ctx.cwd, replay_from=ReplayFromStart()),
        rule="ACP2-039",
    )
    require(error_code(full) is None, "session-setup.mdx#resuming-sessions", f"resume failed: {full.message}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, full.index)
    users = [f for f in before if f.update_kind() in ("user_message", "user_message_chunk")]
    require(
        bool(users) and live_ids <= {(f.update or {}).get("messageId") for f in users},
        "session-setup.mdx#resuming-sessions",
        f"replay did not include the user message(s) {sorted(map(str, live_ids))}",
    )
    states = [f for f in before if f.state()]
    require(
        bool(states) and states[-1].index > users[-1].index,
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
    require(error_code(bogus) == -32602, "ACP2-070", f"an unsupported replay cursor must get -32602: {bogus.message}")
    return None


# -- config, errors --------------------------------------------------------------------------------------


@check(
    "config-options",
    "session/set_config_option applies valid values and rejects bad ones with -32602",
    ("ACP2-080", "ACP2-081", "ACP2-082"),
)
async def config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", NewSessionRequest(cwd=ctx.cwd), rule="session-setup.mdx")
    sid = result["sessionId"]
    options = result.get("configOptions") or []
    select = next((o for o in options if o.get("type") == "select"), None)
    if not options:
        raise NotApplicable("no config options advertised")

    def current(listing: Any, config_id: str) -> Any:
        for option in listing.get("configOptions", []) if isinstance(listing, dict) else []:
            if option.get("configId") == config_id:
                return option.get("currentValue")
        return None

    unknown = await p.call(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id="_acp_conformance_unknown", value="x"),
        rule="ACP2-081",
    )
    require(error_code(unknown) == -32602, "ACP2-081", f"unknown configId: expected -32602, got {unknown.message}")
    strange = await p.call(
        "session/set_config_option",
        UnknownSetSessionConfigOptionRequest(
            {"type": "_acp_conformance_type", "sessionId": sid, "configId": options[0].get("configId"), "value": 1}
        ),
        rule="ACP2-082",
    )
    require(
        error_code(strange) == -32602, "ACP2-082", f"unsupported value type: expected -32602, got {strange.message}"
    )
    if select is None:
        return "no select option to set"
    config_id = select["configId"]
    bad = await p.call(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value="_acp_conformance_not_a_value"),
        rule="ACP2-081",
    )
    require(error_code(bad) == -32602, "ACP2-081", f"invalid value: expected -32602, got {bad.message}")
    wrong_type = await p.call(
        "session/set_config_option",
        SetSessionConfigOptionBooleanRequest(session_id=sid, config_id=config_id, value=True),
        rule="ACP2-081",
    )
    require(
        error_code(wrong_type) == -32602,
        "ACP2-081",
        f"a boolean for a select option: expected -32602, got {wrong_type.message}",
    )
    values = [o.get("value") for o in select.get("options", []) if isinstance(o, dict) and "value" in o]
    target = str(next((v for v in values if v != select.get("currentValue")), select.get("currentValue")))
    listing = await p.call_ok(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value=target),
        rule="ACP2-080",
    )
    require(
        current(listing, config_id) == target,
        "ACP2-080",
        f"after setting {config_id}={target!r} the returned list says {current(listing, config_id)!r}",
    )
    require(
        len(listing.get("configOptions", [])) == len(options), "ACP2-080", "the response must list all config options"
    )
    return None


@check(
    "unknown-method",
    "unknown methods get -32601; unknown notifications get no answer",
    ("schema:ErrorCode(-32601)", "extensibility.mdx"),
)
async def unknown_method(ctx: CheckContext) -> str | None:
    p = ctx.probe
    for method in ("_acp_conformance/unknown", "acp_conformance/unknown"):
        frame = await p.call(method, {}, rule="schema:ErrorCode(-32601)")
        require(error_code(frame) == -32601, "schema:ErrorCode(-32601)", f"{method}: got {frame.message}")
    mark = p.mark
    await p.notify("_acp_conformance/notice", {})
    await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    stray = p.find(lambda f: f.is_response and (f.message or {}).get("id") is None, mark)
    require(not stray, "schema:ErrorCode(-32601)", "a notification was answered")
    return None


@check("invalid-params", "malformed params get -32602", ("schema:ErrorCode(-32602)",))
async def invalid_params(ctx: CheckContext) -> str | None:
    p = ctx.probe
    frame = await p.call("session/new", {"cwd": 42}, rule="schema:ErrorCode(-32602)")
    require(error_code(frame) == -32602, "schema:ErrorCode(-32602)", f"session/new with cwd 42: got {frame.message}")
    return None


@check(
    "background-work", "background work is announced first and listed on every state update", ("ACP2-041", "ACP2-042")
)
async def background_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    reference_only(p, "background work")
    sid = await p.new_session(ctx.cwd)
    start, _, _ = await p.run_turn_settled(sid, "/background 0.3")
    final = await p.wait_for(
        lambda f: f.state() is not None and f.session_id == sid and (f.update or {}).get("background") == [], 3.0, start
    )
    require(final is not None, "ACP2-041", "the background terminal was never removed from the snapshot")
    assert final is not None
    announced: set[str] = set()
    exited: set[str] = set()
    reporting = False
    listed: set[str] = set()
    for f in p.frames[start : final.index + 1]:
        u = f.update or {}
        if f.session_id != sid:
            continue
        if f.update_kind() == "terminal_update":
            announced.add(str(u.get("terminalId")))
            if u.get("exitStatus") is not None:
                exited.add(str(u.get("terminalId")))
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
            now = {str(b.get("terminalId")) for b in background if b.get("type") == "terminal"}
            for term in now - announced:
                raise Fail("ACP2-041", f"terminal {term} listed before it was announced")
            for term in listed - now:
                require(term in exited, "ACP2-041", f"terminal {term} removed before its exitStatus")
            listed = now
    require(reporting, "ACP2-042", "no state_update listed the background work")
    return None

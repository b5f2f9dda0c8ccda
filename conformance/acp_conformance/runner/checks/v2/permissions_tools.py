"""Permissions and tools (v2): the permission request and what answers do to the turn, and the updates of tool
calls, plans and agent-owned terminals."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from acp_session.schema.types import (
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    UnknownRequestPermissionOutcome,
)

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import (
    allow_option,
    first_problem,
    known_or_custom,
    patch_problems,
    permission_tool_call,
    tool_call_completed,
    wait_permission,
)
from ..refused import REFUSAL_SCENARIOS, judge_permission_asked, refusal_scenario, refused_turn
from .base import V2

__all__ = [
    "open_enums",
    "permission_asked",
    "permission_custom_outcome",
    "permission_flow",
    "permission_refused",
    "permission_request",
    "permission_requires_action",
    "plan",
    "plan_shape",
    "terminal",
    "terminal_output",
    "tool_call",
    "tool_call_ids",
    "tool_call_title",
]


TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
TOOL_STATUSES = frozenset({"pending", "in_progress", "paused", "completed", "failed", "cancelled"})
PLAN_PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed", "cancelled"})
PLAN_TYPES = frozenset({"items", "file"})


async def _asked(ctx: CheckContext) -> tuple[str, int, Frame]:
    """A session whose ``permission`` scenario turn waits for the check's answer: (session, start, request)."""
    sid = await ctx.probe.new_session(ctx.cwd)
    start, _rid, ask = await wait_permission(ctx, ctx.scenario("permission"), sid)
    return sid, start, ask


async def _answer(ctx: CheckContext, ask: Frame, outcome: Any) -> int:
    p = ctx.probe
    assert ask.message is not None
    answered_at = p.mark
    await p.respond(ask.message["id"], RequestPermissionResponse(outcome=outcome))
    p.auto_answer_permissions = True  # further requests of this turn are not the check's subject
    return answered_at


def _allow(ask: Frame) -> Any:
    option = allow_option(ask)
    if option is None:
        options = ask.params.get("options")
        offered = [o.get("optionId") for o in options if isinstance(o, dict)] if isinstance(options, list) else []
        raise NotApplicable(f"the permission request offers no allow option: {offered}")
    return SelectedPermissionOutcome(option_id=option)


@V2(
    "permission-request",
    "a permission request names the session, a title and options; once an option is selected the turn reaches idle",
    "permissions and tools",
    ("schema:RequestPermissionRequest", "schema:PermissionOption", "ACP2-050"),
    scenarios=("permission",),
)
async def permission_request(ctx: CheckContext) -> str | None:
    sid, _start, ask = await _asked(ctx)
    params, rule = ask.params, "schema:RequestPermissionRequest"
    require(params.get("sessionId") == sid, rule, f"sessionId {params.get('sessionId')!r}, not {sid!r}")
    title = params.get("title")
    require(isinstance(title, str) and title != "", rule, f"the request needs a non-empty title, got {title!r}")
    options = params.get("options")
    if not isinstance(options, list) or not options:
        raise Fail(rule, f"the request needs options, got {options!r}")
    for option in options:
        require(
            isinstance(option, dict) and all(isinstance(option.get(k), str) for k in ("optionId", "name", "kind")),
            "schema:PermissionOption",
            f"an option needs optionId, name and kind: {option!r}",
        )
    answered_at = await _answer(ctx, ask, _allow(ask))
    await ctx.probe.wait_idle(sid, answered_at, rule="ACP2-050", timeout=ctx.scenario("permission").timeout)
    return None


@V2(
    "permission-requires-action",
    "requires_action is reported while the agent waits for the permission answer, running (or idle) after it",
    "permissions and tools",
    ("ACP2-048", "ACP2-052", "ACP2-049"),
    scenarios=("permission",),
)
async def permission_requires_action(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, start, ask = await _asked(ctx)
    await p.barrier()
    blocked = p.find(p.is_state(sid, "requires_action"), start)
    answered_at = await _answer(ctx, ask, _allow(ask))
    require(bool(blocked), "ACP2-052", "requires_action was not reported while waiting for the permission answer")
    resumed = await p.wait_for(p.is_state(sid, "running", "idle"), ctx.scenario("permission").timeout, answered_at)
    require(resumed is not None, "ACP2-049", "after the answer, neither running nor idle was reported")
    return None


@V2(
    "permission-custom-outcome",
    "a _-prefixed permission outcome is survived: no crash, the prompt not refused",
    "permissions and tools",
    ("extensibility.mdx#enum-and-tagged-union-variants", "schema:RequestPermissionOutcome"),
    scenarios=("permission",),
)
async def permission_custom_outcome(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, start, ask = await _asked(ctx)
    answered_at = await _answer(ctx, ask, UnknownRequestPermissionOutcome({"outcome": "_acp_conformance_outcome"}))
    await p.barrier()
    rule = "extensibility.mdx#enum-and-tagged-union-variants"
    require(not p.eof, rule, "the agent exited after a _-prefixed permission outcome")
    refused = p.find(lambda f: f.is_response and f.error_code == -32602, start)
    require(not refused, rule, f"a request was refused with -32602 after the custom outcome: {refused[:1]}")
    await p.settle(sid, answered_at, timeout=ctx.scenario("permission").timeout)
    return None


@V2(
    "permission-flow",
    "answers with an option not offered, or an outcome the agent does not know, are no approval",
    "permissions and tools",
    ("ACP2-021", "ACP2-087", "ACP2-088", "ACP2-049", "ACP2-053", "ACP2-086"),
    scenarios=("permission",),
    turns=2,
)
async def permission_flow(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    refusals: list[tuple[Any, str, str]] = [
        (SelectedPermissionOutcome(option_id="_acp_conformance_not_offered"), "ACP2-087", "an option not offered"),
        (UnknownRequestPermissionOutcome({"outcome": "future_outcome"}), "ACP2-088", "an unknown outcome"),
    ]
    for outcome, rule, what in refusals:
        start, _rid, ask = await wait_permission(ctx, scenario, sid)
        offered = [o.get("optionId") for o in ask.params.get("options") or [] if isinstance(o, dict)]
        require(len(offered) == len(set(map(str, offered))), "ACP2-021", f"duplicate option ids {offered}")
        await p.barrier()
        blocked = p.find(p.is_state(sid, "requires_action"), start)
        if not blocked:
            ctx.warn("ACP2-052", "requires_action was not reported while waiting for the permission answer")
        answered_at = await _answer(ctx, ask, outcome)
        idle = await p.settle(sid, answered_at, timeout=scenario.timeout)
        end = idle.index if idle is not None else p.mark
        if blocked:
            resumed = p.find(p.is_state(sid, "running", "idle"), answered_at, end + 1)
            require(bool(resumed), "ACP2-049", "requires_action was reported, then neither running nor idle")
        done = tool_call_completed(p, sid, permission_tool_call(ask), answered_at, end)
        require(not done, rule, f"{what} was treated as approval: the tool call completed")
    return None


async def _updates(ctx: CheckContext, name: str, *kinds: str) -> list[Frame]:
    """The updates of ``kinds`` of the ``name`` scenario's turn; not applicable when there are none."""
    p = ctx.probe
    scenario = ctx.scenario(name)
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    updates = p.find(p.is_update(sid, *kinds), turn.start)
    if not updates:
        raise NotApplicable(f"the {scenario.describe()} scenario reported no {' or '.join(kinds)}")
    return updates


def tool_update_problems(update: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for location in update.get("locations") or []:
        path = location.get("path") if isinstance(location, dict) else None
        if isinstance(path, str) and not path.startswith("/"):
            problems.append(f"overview.mdx: location path {path!r} is not absolute")
    items = update.get("content")
    for item in items if isinstance(items, list) else [items]:
        if not isinstance(item, dict) or item.get("type") != "diff":
            continue
        changed: set[str] = set()
        for change in [c for c in item.get("changes") or [] if isinstance(c, dict)]:
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
    "tool call updates use absolute paths and well-formed patches",
    "permissions and tools",
    ("tool-calls.mdx", "overview.mdx", "ACP2-014", "ACP2-015", "ACP2-016", "schema:Diff"),
    scenarios=("tool_call",),
)
async def tool_call(ctx: CheckContext) -> str | None:
    updates = await _updates(ctx, "tool_call", "tool_call_update", "tool_call_content_chunk")
    problems: list[str] = []
    for frame in updates:
        update = frame.update or {}
        if frame.update_kind() == "tool_call_content_chunk":
            update = {"content": update.get("content")}
        problems += tool_update_problems(update)
    first_problem(problems)
    return f"{len({(f.update or {}).get('toolCallId') for f in updates})} tool call(s), {len(updates)} updates"


@V2(
    "tool-call-ids",
    "every tool call update carries a non-empty toolCallId; content chunks also their content",
    "permissions and tools",
    ("schema:ToolCallUpdate", "schema:ToolCallContentChunk"),
    scenarios=("tool_call",),
)
async def tool_call_ids(ctx: CheckContext) -> str | None:
    for frame in await _updates(ctx, "tool_call", "tool_call_update", "tool_call_content_chunk"):
        update, kind = frame.update or {}, frame.update_kind()
        value = update.get("toolCallId")
        require(
            isinstance(value, str) and value != "",
            f"schema:{'ToolCallUpdate' if kind == 'tool_call_update' else 'ToolCallContentChunk'}",
            f"line {frame.index + 1}: a {kind} with toolCallId {value!r}",
        )
        if kind == "tool_call_content_chunk":
            require(
                update.get("content") is not None,
                "schema:ToolCallContentChunk",
                f"line {frame.index + 1}: a content chunk without content",
            )
    return None


@V2(
    "tool-call-title",
    "a tool call's first update has a title, and its name never changes",
    "permissions and tools",
    ("tool-calls.mdx#creating",),
    scenarios=("tool_call",),
)
async def tool_call_title(ctx: CheckContext) -> str | None:
    seen: set[str] = set()
    names: dict[str, Any] = {}
    for frame in await _updates(ctx, "tool_call", "tool_call_update"):
        update = frame.update or {}
        key = str(update.get("toolCallId"))
        if key not in seen:
            seen.add(key)
            title = update.get("title")
            require(
                isinstance(title, str) and title != "",
                "tool-calls.mdx#creating",
                f"tool call {key}: its first update has no title",
            )
        name = update.get("name")
        if name is not None:
            before = names.setdefault(key, name)
            require(name == before, "tool-calls.mdx#creating", f"tool call {key}: name {before!r} changed to {name!r}")
    return f"{len(seen)} tool call(s)"


@V2(
    "open-enums",
    "tool call kinds and statuses and plan entry priorities and statuses are known or _-prefixed",
    "permissions and tools",
    ("extensibility.mdx#enum-and-tagged-union-variants", "tool-calls.mdx", "agent-plan.mdx"),
    optional_scenarios=("tool_call", "plan"),
    one_of_scenarios=True,
    turns=2,
)
async def open_enums(ctx: CheckContext) -> str | None:
    rule = "extensibility.mdx#enum-and-tagged-union-variants"
    seen = 0
    for name, kinds in (("tool_call", ("tool_call_update",)), ("plan", ("plan_update",))):
        if ctx.optional_scenario(name) is None:
            continue
        try:
            updates = await _updates(ctx, name, *kinds)
        except NotApplicable:
            continue
        for frame in updates:
            update = frame.update or {}
            values: list[tuple[str, Any, frozenset[str]]] = []
            if name == "tool_call":
                values += [("kind", update.get("kind"), TOOL_KINDS), ("status", update.get("status"), TOOL_STATUSES)]
            plan_content = update.get("plan") if isinstance(update.get("plan"), dict) else {}
            for entry in plan_content.get("entries") or [] if isinstance(plan_content, dict) else []:
                if isinstance(entry, dict):
                    values += [("priority", entry.get("priority"), PLAN_PRIORITIES)]
                    values += [("status", entry.get("status"), PLAN_STATUSES)]
            for field, value, known in values:
                if value is not None:
                    seen += 1
                    require(known_or_custom(value, known), rule, f"line {frame.index + 1}: {field} {value!r}")
    if not seen:
        raise NotApplicable("no tool call kind or status and no plan entry was reported")
    return f"{seen} value(s)"


def _plans(updates: list[Frame]) -> list[tuple[Frame, dict[str, Any]]]:
    out = []
    for frame in updates:
        content = (frame.update or {}).get("plan")
        if not isinstance(content, dict):
            raise Fail("schema:PlanUpdate", f"line {frame.index + 1}: no plan object")
        out.append((frame, content))
    return out


@V2(
    "plan",
    "every plan update's plan carries a non-empty planId",
    "permissions and tools",
    ("agent-plan.mdx", "schema:PlanUpdate"),
    scenarios=("plan",),
)
async def plan(ctx: CheckContext) -> str | None:
    updates = await _updates(ctx, "plan", "plan_update")
    for frame, content in _plans(updates):
        plan_id = content.get("planId")
        require(
            isinstance(plan_id, str) and plan_id != "", "agent-plan.mdx", f"line {frame.index + 1}: planId {plan_id!r}"
        )
    return f"{len(updates)} plan update(s)"


@V2(
    "plan-shape",
    "plan types are known or _-prefixed, and a plan file's URI is absolute",
    "permissions and tools",
    ("agent-plan.mdx",),
    scenarios=("plan",),
)
async def plan_shape(ctx: CheckContext) -> str | None:
    for frame, content in _plans(await _updates(ctx, "plan", "plan_update")):
        kind = content.get("type")
        require(known_or_custom(kind, PLAN_TYPES), "agent-plan.mdx", f"line {frame.index + 1}: plan type {kind!r}")
        uri = content.get("uri")
        if kind == "file" and isinstance(uri, str):
            require(uri.startswith("file:///"), "agent-plan.mdx", f"plan file URI {uri!r} is not absolute")
    return None


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
    "agent-owned terminals: an absolute cwd that never changes, a command on the first update",
    "permissions and tools",
    ("tool-calls.mdx#display-only-terminals", "schema:TerminalUpdate"),
    scenarios=("terminal",),
)
async def terminal(ctx: CheckContext) -> str | None:
    rule = "tool-calls.mdx#display-only-terminals"
    first: dict[str, dict[str, Any]] = {}
    cwds: dict[str, Any] = {}
    for frame in await _updates(ctx, "terminal", "terminal_update"):
        update = frame.update or {}
        term = str(update.get("terminalId"))
        first.setdefault(term, update)
        cwd = update.get("cwd")
        if cwd is None:
            continue
        require(str(cwd).startswith("/"), rule, f"terminal {term}: cwd {cwd!r} is not absolute")
        require(cwds.setdefault(term, cwd) == cwd, rule, f"terminal {term}: cwd changed from {cwds[term]!r} to {cwd!r}")
    for term, update in first.items():
        if not update.get("command"):
            ctx.warn(rule, f"terminal {term}: no command on its first terminal_update")
    return f"{len(first)} terminal(s)"


@V2(
    "terminal-output",
    "agent-owned terminal output is base64, each chunk on its own",
    "permissions and tools",
    ("tool-calls.mdx#display-only-terminals", "schema:TerminalOutputChunk"),
    scenarios=("terminal",),
)
async def terminal_output(ctx: CheckContext) -> str | None:
    rule = "tool-calls.mdx#display-only-terminals"
    count = 0
    for frame in await _updates(ctx, "terminal", "terminal_update", "terminal_output_chunk"):
        update = frame.update or {}
        data = update.get("data") if frame.update_kind() == "terminal_output_chunk" else None
        output = update.get("output")
        if isinstance(output, dict):
            data = output.get("data")
        if data is None:
            continue
        count += 1
        require(_base64_ok(data), rule, f"line {frame.index + 1}: terminal output is not base64: {str(data)[:40]!r}")
    if not count:
        raise NotApplicable("the terminal scenario reported no terminal output")
    return f"{count} output(s)"


@V2(
    "permission-refused",
    "a refused permission is not acted on: the tool call does not complete, nothing is written or run",
    "permissions and tools",
    ("tool-calls.mdx#permission-options", "ACP2-086", "schema:ToolCallStatus"),
    optional_scenarios=REFUSAL_SCENARIOS,
    one_of_scenarios=True,
    turns=2,
)
async def permission_refused(ctx: CheckContext) -> str | None:
    scenario = refusal_scenario(ctx)
    sid = await ctx.probe.new_session(ctx.cwd)
    # A reject option, then the cancelled outcome (the client declined it, ACP2-086): neither may be acted on.
    notes: list[str] = []
    for cancelled, rule in ((False, "tool-calls.mdx#permission-options"), (True, "ACP2-086")):
        how, done = await refused_turn(ctx, scenario, sid, cancelled=cancelled)
        require(not done, rule, f"refused with {how}, then {'; '.join(done)}")
        notes.append(how)
    return "refused with " + ", then ".join(notes) + ": nothing was done"


@V2(
    "permission-asked",
    "a tool call that edits, deletes, moves or executes asks for permission before it completes",
    "permissions and tools",
    ("tool-calls.mdx#requesting-permission",),
    optional_scenarios=REFUSAL_SCENARIOS,
    one_of_scenarios=True,
)
async def permission_asked(ctx: CheckContext) -> str | None:
    return await judge_permission_asked(ctx)

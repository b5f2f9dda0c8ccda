"""Permissions and tools (v2): the permission flow, and the updates of tool calls, plans and agent-owned terminals."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from acp_session.schema.types import (
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    UnknownRequestPermissionOutcome,
)

from ...outcomes import NotApplicable
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
from ..refused import REFUSAL_SCENARIOS, refusal_scenario, refused_turn, unasked_actions
from .base import V2, decode_update

__all__ = ["permission_asked", "permission_flow", "permission_refused", "plan", "terminal", "tool_call"]


TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
TOOL_STATUSES = frozenset({"pending", "in_progress", "paused", "completed", "failed", "cancelled"})
PLAN_PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed", "cancelled"})
PLAN_TYPES = frozenset({"items", "file"})


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
        decoded = decode_update(frame)
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
        decoded = decode_update(frame)
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
        decoded = decode_update(frame)
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
    scenario = refusal_scenario(ctx)
    sid = await ctx.probe.new_session(ctx.cwd)
    acting, unasked = await unasked_actions(ctx, scenario, sid)
    if not acting:
        raise NotApplicable(f"the {scenario.describe()} scenario completed no edit, delete, move or execute tool call")
    require(not unasked, "tool-calls.mdx#requesting-permission", "; ".join(unasked))
    return f"{acting} acting tool call(s), each asked about first"

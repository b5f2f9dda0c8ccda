"""Permissions and tools (v1): permission requests, tool calls and plans in the v1 schema's shapes."""

from __future__ import annotations

from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import allow_option, first_problem, wait_permission, write_readme
from ..refused import REFUSAL_SCENARIOS, judge_permission_asked, refusal_scenario, refused_turn
from .base import V1, decode_problem, require_stop_reason, response_or_fail, schema_problem

__all__ = ["permission_asked", "permission_refused", "permission_request", "plan", "tool_call"]


TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
TOOL_STATUSES = frozenset({"pending", "in_progress", "completed", "failed"})
PLAN_PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed"})


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
    problem = schema_problem(v1.RequestPermissionRequest, ask.params)
    if problem is not None:
        raise Fail("schema:RequestPermissionRequest", f"the request does not match the v1 schema: {problem}")
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


@V1(
    "permission-refused",
    "a refused permission is not acted on: the tool call does not complete, nothing is written or run",
    "permissions and tools",
    ("tool-calls.mdx#permission-options", "tool-calls.mdx#requesting-permission", "schema:ToolCallStatus"),
    optional_scenarios=REFUSAL_SCENARIOS,
    one_of_scenarios=True,
)
async def permission_refused(ctx: CheckContext) -> str | None:
    scenario = refusal_scenario(ctx)
    sid = await ctx.probe.new_session(ctx.cwd)
    how, done = await refused_turn(ctx, scenario, sid)
    require(not done, "tool-calls.mdx#permission-options", f"refused with {how}, then {'; '.join(done)}")
    return f"refused with {how}: nothing was done"


@V1(
    "permission-asked",
    "a tool call that edits, deletes, moves or executes asks for permission before it completes",
    "permissions and tools",
    ("tool-calls.mdx#requesting-permission",),
    optional_scenarios=REFUSAL_SCENARIOS,
    one_of_scenarios=True,
)
async def permission_asked(ctx: CheckContext) -> str | None:
    return await judge_permission_asked(ctx)

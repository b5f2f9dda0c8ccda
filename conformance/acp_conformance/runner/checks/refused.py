"""Refused means refused (both protocol versions): what the agent does after the runner refuses the permission its
scenario asks for, and whether tool calls that change things ask first.

Beyond the official kit (a copilot-cli bug, github/copilot-cli #4537: in ACP mode the agent stopped asking and
wrote the file anyway). After a refusal the runner watches the rest of the turn: the refused tool call reported
``completed``, an ``fs/write_text_file`` or ``terminal/create`` the agent sends (v1: the client does the work),
or a file of the check's sandbox created, changed or removed, is the agent acting on a refusal.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import anyio

from ..frames import Frame
from ..outcomes import AUTH_REQUIRED, Fail, LoginRequired, NotApplicable
from ..probe import Probe
from ..registry import CheckContext, require
from ..scenarios import Scenario
from .common import permission_tool_call, tool_call_completed, wait_permission, write_readme

__all__ = [
    "ACTING_KINDS",
    "REFUSAL_SCENARIOS",
    "judge_permission_asked",
    "refusal_scenario",
    "refused_turn",
    "sandbox_files",
    "unasked_actions",
]

ACTING_KINDS = frozenset({"edit", "delete", "move", "execute"})
"""Tool kinds that change something (files, or whatever a command does): the ones an agent should ask about."""
ACTIONS = ("fs/write_text_file", "terminal/create")
"""The client methods through which a v1 agent acts."""
QUIET = 0.5
"""Seconds of silence after which a turn without an end is judged as it stands (as ``Probe.settle`` does)."""
REFUSAL_SCENARIOS = ("edit_permission", "permission")
"""The scenario the refusal checks use: the edit one when the file has it, else the plain permission one."""


def refusal_scenario(ctx: CheckContext) -> Scenario:
    for name in REFUSAL_SCENARIOS:
        if name in ctx.scenarios:
            return ctx.scenario(name)
    return ctx.scenario(REFUSAL_SCENARIOS[0])  # not applicable, naming the scenario to add


def sandbox_files(cwd: str) -> dict[str, str]:
    """Every file (its SHA-256) and folder (``"dir"``) under ``cwd``, by path relative to it."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(cwd):
        for name in dirs:
            found[os.path.relpath(os.path.join(folder, name), cwd) + "/"] = "dir"
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, cwd)] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                found[os.path.relpath(path, cwd)] = "unreadable"
    return found


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    changed = [f"{path} (new)" for path in after if path not in before]
    changed += [f"{path} (changed)" for path in after if path in before and before[path] != after[path]]
    return changed + [f"{path} (removed)" for path in before if path not in after]


def _refusal(ask: Frame, cancelled: bool) -> tuple[dict[str, Any], str]:
    """The answer that refuses ``ask``: a reject option (the ``cancelled`` outcome when it offers none, or when
    ``cancelled`` is asked for), and how to say it."""
    options = [o for o in ask.params.get("options") or [] if isinstance(o, dict)]
    reject = [o for o in options if str(o.get("kind", "")).startswith("reject")]
    if cancelled or not reject:
        return {"outcome": {"outcome": "cancelled"}}, "the cancelled outcome"
    option = reject[0]
    return (
        {"outcome": {"outcome": "selected", "optionId": option.get("optionId")}},
        f"option {option.get('optionId')!r} ({option.get('kind')})",
    )


def _action(frame: Frame) -> str:
    params = frame.params
    target = params.get("path") if frame.method == "fs/write_text_file" else params.get("command")
    return f"{frame.method} {target!r}" if target is not None else str(frame.method)


async def refused_turn(
    ctx: CheckContext, scenario: Scenario, sid: str, *, cancelled: bool = False
) -> tuple[str, list[str]]:
    """Run the scenario's turn, refuse its first permission request (later ones are refused too), wait for the
    turn's end: (how it was refused, what the agent did anyway)."""
    p = ctx.probe
    write_readme(ctx.cwd)
    before = sandbox_files(ctx.cwd)
    start, rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    answer, how = _refusal(ask, cancelled)
    answered_at = p.mark
    await p.respond(ask.message["id"], answer)
    p.auto_answer_permissions = True  # any further request of this turn is refused as well
    if p.version == 1:
        await p.response(rid, scenario.timeout, start)
    else:
        await p.settle(sid, answered_at, timeout=scenario.timeout)
    await p.barrier()  # whatever the turn's end made the agent send at once has arrived
    done: list[str] = []
    tool_call = permission_tool_call(ask)
    if tool_call is not None and tool_call_completed(p, sid, tool_call, answered_at):
        done.append(f"tool call {tool_call!r} was reported completed")
    sent = p.find(lambda f: f.is_request and f.method in ACTIONS and f.session_id == sid, answered_at)
    done += [f"it sent {_action(f)}" for f in sent]
    changed = _changes(before, sandbox_files(ctx.cwd))
    if changed:
        done.append(f"the sandbox changed: {', '.join(changed[:5])}" + (" ..." if len(changed) > 5 else ""))
    return how, done


async def _next(p: Probe, event: Callable[[Frame], bool], start: int, deadline: float) -> Frame | None:
    """The next frame ``event`` picks, or None once the deadline passed or, in v2, the agent has been quiet for
    ``QUIET`` seconds (one that never sends the idle update: turn-lifecycle's finding, not this check's). A v1
    turn ends with the prompt's answer, however long the agent pauses before it."""
    if p.version == 1:
        return await p.wait_for(event, max(0.0, deadline - anyio.current_time()), start)
    position = start
    while anyio.current_time() < deadline:
        seen = p.mark
        frame = await p.wait_for(event, min(QUIET, max(0.0, deadline - anyio.current_time())), position)
        if frame is not None or p.mark == seen or p.eof:
            return frame
        position = seen
    return None


def _tool_kinds(frames: list[Frame]) -> dict[Any, str]:
    kinds: dict[Any, str] = {}
    for frame in frames:
        update = frame.update or {}
        if frame.update_kind() in ("tool_call", "tool_call_update") and isinstance(update.get("kind"), str):
            kinds[update.get("toolCallId")] = update["kind"]
        elif frame.method == "session/request_permission":
            call = frame.params.get("toolCall")  # v1 carries the tool call itself
            if isinstance(call, dict) and isinstance(call.get("kind"), str):
                kinds.setdefault(call.get("toolCallId"), call["kind"])
    return kinds


async def unasked_actions(ctx: CheckContext, scenario: Scenario, sid: str) -> tuple[int, list[str]]:
    """Run the scenario's turn approving every permission request: (the tool calls that changed something and
    completed, those of them no permission request asked about before they completed)."""
    p = ctx.probe
    write_readme(ctx.cwd)
    p.auto_answer_permissions = False
    asked: dict[Any, int] = {}  # tool call id (None: a request naming none) -> the frame of its first request
    start = p.mark
    rid = await p.prompt(sid, scenario.text(ctx.cwd))

    def event(frame: Frame) -> bool:
        if frame.is_response and (frame.message or {}).get("id") == rid:
            return frame.error is not None or p.version == 1
        if p.version != 1 and frame.session_id == sid and frame.state() == "idle":
            return True
        return frame.is_request and frame.method == "session/request_permission"

    deadline = anyio.current_time() + scenario.timeout
    frame = await _next(p, event, start, deadline)
    while frame is not None and frame.method == "session/request_permission":
        assert frame.message is not None
        asked.setdefault(permission_tool_call(frame), frame.index)
        options = [o for o in frame.params.get("options") or [] if isinstance(o, dict)]
        allow = [o for o in options if str(o.get("kind", "")).startswith("allow")]
        outcome = {"outcome": "selected", "optionId": allow[0].get("optionId")} if allow else {"outcome": "cancelled"}
        await p.respond(frame.message["id"], {"outcome": outcome})
        frame = await _next(p, event, frame.index + 1, deadline)
    if frame is None:  # the agent went quiet without ending the turn: judge what it did (as Probe.settle does)
        await p.barrier()
        end = p.mark
    elif frame.error is not None:
        if frame.error_code == AUTH_REQUIRED:
            raise LoginRequired("session/prompt", frame.error)
        rule = "prompt-lifecycle.mdx#2-prompt-accepted" if p.version != 1 else "ACP1-012"
        raise Fail(rule, f"the {scenario.describe()} prompt was rejected: {frame.error}")
    else:
        end = frame.index + 1
    turn = p.frames[start:end]
    kinds = _tool_kinds(turn)
    acting: list[Any] = []
    unasked: list[str] = []
    for update in (f for f in turn if f.update_kind() in ("tool_call", "tool_call_update")):
        call = (update.update or {}).get("toolCallId")
        if (update.update or {}).get("status") != "completed" or kinds.get(call) not in ACTING_KINDS:
            continue
        if call in acting:
            continue
        acting.append(call)
        blanket = asked.get(None)  # a request that named no tool call covers what completes after it
        if asked.get(call, update.index) >= update.index and (blanket is None or blanket >= update.index):
            unasked.append(f"tool call {call!r} ({kinds[call]}) completed without a permission request")
    return len(acting), unasked


async def judge_permission_asked(ctx: CheckContext) -> str:
    """``permission-asked``, either version: the refusal scenario's acting tool calls each asked first."""
    scenario = refusal_scenario(ctx)
    sid = await ctx.probe.new_session(ctx.cwd)
    acting, unasked = await unasked_actions(ctx, scenario, sid)
    if not acting:
        raise NotApplicable(f"the {scenario.describe()} scenario completed no edit, delete, move or execute tool call")
    require(not unasked, "tool-calls.mdx#requesting-permission", "; ".join(unasked))
    return f"{acting} acting tool call(s), each asked about first"

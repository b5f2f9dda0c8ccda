"""Helpers shared by the protocol v1 and v2 checks."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1
from acp_session.schema.types import DeleteSessionRequest, ListSessionsRequest, ListSessionsResponse

from ..frames import OUTPUT_KINDS, Frame
from ..outcomes import AUTH_REQUIRED, Fail, LoginRequired, NotApplicable
from ..probe import Probe
from ..registry import CheckContext, require
from ..scenarios import Scenario

HELLO = "Hello! Please answer with one short sentence."
MESSAGE_KINDS = frozenset({"agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk"})


def texts(update: dict[str, Any]) -> str:
    content = update.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))


def known_or_custom(value: Any, known: Iterable[str]) -> bool:
    """A value of an open enum: a known one, or a custom one starting with ``_``."""
    return isinstance(value, str) and (value in known or value.startswith("_"))


def write_readme(cwd: str) -> str:
    path = os.path.join(cwd, "README.md")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("# acp-conformance sandbox\n\nA scratch directory for one conformance check.\n")
    return path


async def start_scenario(
    ctx: CheckContext, scenario: Scenario, sid: str, wanted: Callable[[Frame], bool], what: str
) -> tuple[int, int, Frame]:
    """Send the scenario's prompt and wait for the first frame ``wanted`` picks: ``(start, prompt id, frame)``.

    Not applicable when the turn ends (v2 idle, v1 response) or the scenario's time passes without it; a
    refused prompt raises ``LoginRequired`` (-32000) or fails.
    """
    p = ctx.probe
    start = p.mark
    rid = await p.prompt(sid, scenario.text(ctx.cwd))

    def event(frame: Frame) -> bool:
        if wanted(frame):
            return True
        if frame.is_response and (frame.message or {}).get("id") == rid:
            return frame.error is not None or p.version == 1
        return p.version != 1 and frame.session_id == sid and frame.state() == "idle"

    frame = await p.wait_for(event, scenario.timeout, start)
    if frame is None:
        raise NotApplicable(f"the {scenario.describe()} scenario: {what} within {scenario.timeout:g}s")
    if wanted(frame):
        return start, rid, frame
    if frame.is_response and frame.error is not None:
        if frame.error_code == AUTH_REQUIRED:
            raise LoginRequired("session/prompt", frame.error)
        rule = "prompt-lifecycle.mdx#2-prompt-accepted" if p.version != 1 else "ACP1-012"
        raise Fail(rule, f"the {scenario.describe()} prompt was rejected: {frame.error}")
    raise NotApplicable(f"the {scenario.describe()} scenario's turn ended: {what}")


async def scenario_turn_start(ctx: CheckContext, scenario: Scenario, sid: str) -> tuple[int, int]:
    """Send the scenario's prompt and wait for its first output: ``(start mark, prompt request id)``."""
    start, rid, _ = await start_scenario(
        ctx, scenario, sid, lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, "no output"
    )
    return start, rid


async def wait_permission(ctx: CheckContext, scenario: Scenario, sid: str) -> tuple[int, int, Frame]:
    """Send the scenario's prompt and wait for its permission request, which the probe leaves unanswered for
    the check to answer: ``(start, prompt id, request)``."""
    ctx.probe.auto_answer_permissions = False
    return await start_scenario(
        ctx, scenario, sid, ctx.probe.is_request_for("session/request_permission"), "no session/request_permission"
    )


def permission_tool_call(ask: Frame) -> Any:
    """The tool call id a permission request is about (v2 ``subject.toolCall``, v1 ``toolCall``)."""
    params = ask.params
    subject = params.get("subject")
    tool_call = subject.get("toolCall") if isinstance(subject, dict) else params.get("toolCall")
    return tool_call.get("toolCallId") if isinstance(tool_call, dict) else None


def patch_problems(text: str, changed: set[str]) -> list[str]:
    """ACP2-014/015/016 problems of a ``git_patch`` text whose diff lists the paths ``changed``."""
    problems: list[str] = []
    seen_diff = False
    for line in text.splitlines():
        paths: list[str] = []
        if line.startswith("diff --git "):
            seen_diff = True
            paths = line[len("diff --git ") :].split(" ")
        elif line.startswith(("--- ", "+++ ")) and seen_diff:
            paths = [line[4:].split("\t")[0]]
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            paths = [line.split(" ", 2)[2]]
        elif not seen_diff and re.match(
            r"^(From [0-9a-f]{7,40} |From: |Subject: |Date: |commit [0-9a-f]{7,40}|Author: )", line
        ):
            problems.append(f"ACP2-015: commit metadata or an email envelope in the patch: {line[:60]!r}")
        for path in paths:
            if path == "/dev/null":
                continue
            if path.startswith(("a/", "b/")) or not path.startswith("/"):
                problems.append(f"ACP2-014: patch path {path!r} is not absolute (or has a Git a/ b/ prefix)")
            elif changed and path not in changed:
                problems.append(f"ACP2-016: patch path {path!r} is not among the diff's changes {sorted(changed)}")
    return problems


def first_problem(problems: list[str]) -> None:
    if problems:
        rule, _, message = problems[0].partition(": ")
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise Fail(rule, message + more)


def config_option_problems(options: Any, rule_null: str = "ACP2-032") -> list[str]:
    problems: list[str] = []
    for option in options or []:
        if not isinstance(option, dict) or option.get("type") != "select":
            continue
        values: list[Any] = []
        for entry in option.get("options") or []:
            if not isinstance(entry, dict):
                continue
            if "group" in entry or "groupId" in entry:
                if not entry.get("options"):
                    problems.append(f"ACP2-035: empty group in option {option.get('configId', option.get('id'))!r}")
                values += [o.get("value") for o in entry.get("options") or [] if isinstance(o, dict)]
            else:
                values.append(entry.get("value"))
        name = option.get("configId", option.get("id"))
        if not values or len(values) != len(set(map(str, values))):
            problems.append(f"ACP2-037: option {name!r} has no or duplicate values: {values}")
        elif option.get("currentValue") not in values:
            problems.append(f"ACP2-036: option {name!r}: currentValue {option.get('currentValue')!r} not in {values}")
    return problems


async def list_all(ctx: CheckContext, cwd: str | None, rule: str) -> list[dict[str, Any]]:
    """Every page of ``session/list`` (filtered by ``cwd``), each page checked against the schema."""
    p = ctx.probe
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(50):
        request = ListSessionsRequest(cwd=cwd if cwd is not None else msgspec.UNSET, cursor=cursor or msgspec.UNSET)
        result = await p.call_ok("session/list", request, rule=rule)
        if not isinstance(result, dict) or not isinstance(result.get("sessions"), list):
            raise Fail(rule, f"no sessions array in {result!r}")
        try:
            decoder(ListSessionsResponse if p.version != 1 else v1.ListSessionsResponse)(msgspec.json.encode(result))
        except msgspec.ValidationError as exc:
            raise Fail("schema:ListSessionsResponse", f"session/list result does not match: {exc}") from None
        seen += [s for s in result["sessions"] if isinstance(s, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return seen


async def session_list_common(ctx: CheckContext, rule: str) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    listed = await list_all(ctx, ctx.cwd, rule)
    for info in listed:
        require(
            info.get("cwd") == ctx.cwd,
            rule,
            f"filtered by cwd {ctx.cwd} but got session {info.get('sessionId')!r} with cwd {info.get('cwd')!r}",
        )
    if sid not in [s.get("sessionId") for s in listed]:
        # Whether a session without any prompt is listed yet is the agent's choice.
        ctx.note(f"the new session {sid} (no prompt yet) is not listed")
    empty_dir = os.path.join(ctx.cwd, "no-sessions-here")
    os.makedirs(empty_dir, exist_ok=True)
    empty = await p.call_ok("session/list", ListSessionsRequest(cwd=empty_dir), rule=rule)
    require(
        isinstance(empty, dict) and empty.get("sessions") == [],
        rule,
        f"no session has cwd {empty_dir}, so the list must be an empty array: {empty!r}",
    )
    return None


async def session_delete_common(ctx: CheckContext, capability: Any, rule: str) -> str | None:
    p = ctx.probe
    if capability is None:
        raise NotApplicable("session/delete is not advertised")
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule=rule)
    listed = await list_all(ctx, ctx.cwd, "session-list.mdx")
    ids = [s.get("sessionId") for s in listed]
    require(sid not in ids, rule, f"deleted session {sid} is still listed")
    again = await p.call("session/delete", DeleteSessionRequest(session_id=sid), rule=rule)
    if again.error_code is not None:
        ctx.warn(rule, f"deleting an already-deleted session should succeed silently, got error {again.error_code}")
    return None


async def late_output(p: Probe, sid: str, after: int, kinds: frozenset[str]) -> Frame | None:
    """The first update of ``kinds`` for ``sid`` after frame ``after`` and before any new state update."""
    await p.barrier()
    for frame in p.frames[after + 1 :]:
        if frame.session_id != sid or frame.update is None:
            continue
        if frame.state() is not None:
            return None
        if frame.update_kind() in kinds:
            return frame
    return None


def allow_option(ask: Frame) -> str | None:
    options = [o for o in ask.params.get("options") or [] if isinstance(o, dict)]
    for kind in ("allow_once", "allow_always"):
        for option in options:
            if option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


def tool_call_completed(p: Probe, sid: str, tool_call_id: Any, start: int, stop: int | None = None) -> bool:
    return bool(
        p.find(
            lambda f: (
                f.session_id == sid
                and f.update_kind() in ("tool_call", "tool_call_update")
                and (f.update or {}).get("status") == "completed"
                and (tool_call_id is None or (f.update or {}).get("toolCallId") == tool_call_id)
            ),
            start,
            stop,
        )
    )


async def unknown_method_common(ctx: CheckContext) -> str | None:
    p = ctx.probe
    for method in ("_acp_conformance/unknown", "acp_conformance/unknown"):
        frame = await p.call(method, {}, rule="schema:ErrorCode(-32601)")
        require(frame.error_code == -32601, "schema:ErrorCode(-32601)", f"{method}: got {frame.message}")
    mark = p.mark
    await p.notify("_acp_conformance/notice", {})
    await p.barrier()
    stray = p.find(lambda f: f.is_response and (f.message or {}).get("id") is None, mark)
    if stray:
        # The docs say implementations SHOULD ignore unrecognized notifications (JSON-RPC 2.0 says a server
        # MUST NOT reply to one): a warning, as the ACP text is the yardstick here.
        ctx.warn("extensibility.mdx", f"an unknown notification was answered: {stray[0].raw[:120]!r}")
    return None


def update_schema_problem(frame: Frame, decode: Callable[[bytes], Any], schema: str) -> str | None:
    """Why a ``session/update`` frame's params do not decode with ``decode`` (the ``schema``'s type), or None."""
    try:
        decode(msgspec.json.encode(frame.message.get("params") if frame.message else None))
    except msgspec.ValidationError as exc:
        return f"line {frame.index + 1}: session/update does not match {schema}: {exc}"
    return None


async def invalid_params_common(ctx: CheckContext, params: dict[str, Any]) -> str | None:
    """``session/new`` with a number for ``cwd`` (otherwise the version's valid ``params``) must get -32602."""
    frame = await ctx.probe.call("session/new", params, rule="schema:ErrorCode(-32602)")
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/new", frame.error)
    require(frame.error_code == -32602, "schema:ErrorCode(-32602)", f"session/new with cwd 42: got {frame.message}")
    return None

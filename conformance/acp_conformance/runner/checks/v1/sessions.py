"""Sessions (v1): ``session/new`` (its answer, distinct ids, additional directories), and ``session/list`` and
``/delete`` when advertised, each observation its own check."""

from __future__ import annotations

import os

from acp_session.schema import v1
from acp_session.schema.types import DeleteSessionRequest, ListSessionsRequest

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, list_all
from .base import V1, schema_problem

__all__ = [
    "additional_directories",
    "delete_removes",
    "delete_unknown",
    "distinct_session_ids",
    "list_cwd_filter",
    "list_empty",
    "session_delete",
    "session_list",
    "session_new",
]


@V1(
    "session-new",
    "session/new with an absolute cwd succeeds with a non-empty session id, in the v1 schema's shape",
    "sessions",
    ("ACP1-012", "session-setup.mdx#creating-a-session", "schema:NewSessionResponse"),
    prompts=False,
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    problem = schema_problem(v1.NewSessionResponse, result)
    if problem is not None or not isinstance(result, dict):
        raise Fail("schema:NewSessionResponse", f"session/new result does not match the v1 schema: {problem}")
    sid = result.get("sessionId")
    require(isinstance(sid, str) and bool(sid), "session-setup.mdx#creating-a-session", f"session id {sid!r}")
    return None


@V1(
    "distinct-session-ids",
    "two session/new calls on one connection return two different session ids",
    "sessions",
    ("ACP1-012", "session-setup.mdx#creating-a-session"),
    prompts=False,
)
async def distinct_session_ids(ctx: CheckContext) -> str | None:
    p = ctx.probe
    first = await p.new_session(ctx.cwd)
    second = await p.new_session(ctx.cwd)
    require(
        first != second,
        "session-setup.mdx#creating-a-session",
        f"two session/new calls both answered session id {first!r} (a session id identifies one session)",
    )
    return None


@V1(
    "additional-directories",
    "session/new with an absolute additionalDirectories entry (when advertised) is accepted",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionRequest"),
    prompts=False,
)
async def additional_directories(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("additionalDirectories") is None:
        raise NotApplicable("sessionCapabilities.additionalDirectories is not advertised")
    extra = os.path.join(ctx.cwd, "extra-root")
    os.makedirs(extra, exist_ok=True)
    params = v1.NewSessionRequest(cwd=ctx.cwd, mcp_servers=[], additional_directories=[extra])
    frame = await p.call("session/new", params, rule="session-setup.mdx")
    require(frame.error is None, "session-setup.mdx", f"additionalDirectories [{extra}] was refused: {frame.error}")
    return None


def _list_capability(ctx: CheckContext) -> None:
    if ctx.probe.session_capability("list") is None:
        raise NotApplicable("sessionCapabilities.list is not advertised")


@V1(
    "session-list",
    "session/list without filters (when advertised) answers a sessions array in the v1 schema's shape",
    "sessions",
    ("session-list.mdx", "schema:ListSessionsResponse"),
    prompts=False,
)
async def session_list(ctx: CheckContext) -> str | None:
    _list_capability(ctx)
    p = ctx.probe
    await p.new_session(ctx.cwd)
    result = await p.call_ok("session/list", {}, rule="session-list.mdx")
    require(
        isinstance(result, dict) and isinstance(result.get("sessions"), list),
        "session-list.mdx",
        f"no sessions array in {result!r}",
    )
    problem = schema_problem(v1.ListSessionsResponse, result)
    require(problem is None, "schema:ListSessionsResponse", f"session/list result does not match: {problem}")
    return f"{len(result['sessions'])} session(s) on the first page"


@V1(
    "list-cwd-filter",
    "session/list filtered by cwd (when advertised) lists only sessions of exactly that directory",
    "sessions",
    ("session-list.mdx",),
    prompts=False,
)
async def list_cwd_filter(ctx: CheckContext) -> str | None:
    _list_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    inner = os.path.join(ctx.cwd, "inner")
    os.makedirs(inner, exist_ok=True)
    await p.new_session(inner)  # a session in a subdirectory: not one of cwd's
    listed = await list_all(ctx, ctx.cwd, "session-list.mdx")
    if not listed:
        # Whether a session without any prompt is listed yet is the agent's choice.
        raise NotApplicable(f"no session listed for {ctx.cwd} (none had a prompt yet): the filter was not exercised")
    for info in listed:
        require(
            info.get("cwd") == ctx.cwd,
            "session-list.mdx",
            f"filtered by cwd {ctx.cwd} but got session {info.get('sessionId')!r} with cwd {info.get('cwd')!r}",
        )
    if sid not in [s.get("sessionId") for s in listed]:
        # Whether a session without any prompt is listed yet is the agent's choice.
        ctx.note(f"the new session {sid} (no prompt yet) is not listed")
    return f"{len(listed)} session(s) with cwd {ctx.cwd}"


@V1(
    "list-empty",
    "session/list filtered by a cwd no session has (when advertised) answers an empty sessions array",
    "sessions",
    ("session-list.mdx",),
    prompts=False,
)
async def list_empty(ctx: CheckContext) -> str | None:
    _list_capability(ctx)
    p = ctx.probe
    await p.new_session(ctx.cwd)
    empty_dir = os.path.join(ctx.cwd, "no-sessions-here")
    os.makedirs(empty_dir, exist_ok=True)
    frame = await p.call("session/list", ListSessionsRequest(cwd=empty_dir), rule="session-list.mdx")
    require(
        frame.error is None and isinstance(frame.result, dict) and frame.result.get("sessions") == [],
        "session-list.mdx",
        f"no session has cwd {empty_dir}, so the answer must be an empty sessions array: "
        f"{frame.error or frame.result!r}",
    )
    return None


def _delete_capability(ctx: CheckContext) -> None:
    if ctx.probe.session_capability("delete") is None:
        raise NotApplicable("sessionCapabilities.delete is not advertised")


@V1(
    "session-delete",
    "session/delete of a session of this connection (when advertised) succeeds with an empty result",
    "sessions",
    ("session-delete.mdx", "schema:DeleteSessionResponse"),
    prompts=False,
)
async def session_delete(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    result = await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    problem = schema_problem(v1.DeleteSessionResponse, result)
    require(problem is None, "schema:DeleteSessionResponse", f"session/delete result does not match: {problem}")
    return None


@V1(
    "delete-removes",
    "a deleted session (when delete and list are advertised) is no longer listed",
    "sessions",
    ("session-delete.mdx",),
)
async def delete_removes(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    _list_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    listed = await list_all(ctx, ctx.cwd, "session-list.mdx")
    require(sid not in [s.get("sessionId") for s in listed], "session-delete.mdx", f"deleted session {sid} is listed")
    return None


@V1(
    "delete-unknown",
    "deleting an already deleted or never created session (when advertised) succeeds silently",
    "sessions",
    ("session-delete.mdx",),
    prompts=False,
)
async def delete_unknown(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    for what, target in (("an already deleted", sid), ("a never created", "acp-conformance-no-such-session")):
        frame = await p.call("session/delete", DeleteSessionRequest(session_id=target), rule="session-delete.mdx")
        require(
            frame.error is None,
            "session-delete.mdx",
            f"deleting {what} session should succeed silently, got {frame.error}",
        )
    return None

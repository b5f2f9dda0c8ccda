"""Sessions (v2): ``session/new`` (its answer, distinct ids, its commands), ``session/list`` (unfiltered, filtered
to nothing, filtered by a cwd, absolute paths), ``session/delete`` (its answer, the listing after, deleting
again), MCP transports the agent does not offer, and the optional fields in both their forms."""

from __future__ import annotations

import os
import re
from typing import Any

from acp_session.schema.types import (
    DeleteSessionRequest,
    DeleteSessionResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    McpServerHttp,
    NewSessionResponse,
)

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ...remote_agent import refused_unknown_session
from ..common import HELLO
from .base import V2, strict

__all__ = [
    "additional_directories",
    "available_commands",
    "optional_forms",
    "resume_additional_directories",
    "session_delete",
    "session_delete_again",
    "session_delete_unlisted",
    "session_ids_distinct",
    "session_list",
    "session_list_absolute",
    "session_list_cwd",
    "session_list_empty",
    "session_new",
    "unsupported_mcp",
]


@V2(
    "session-new",
    "session/new (absolute cwd, no mcpServers) answers a non-empty session id in the schema's shape",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionResponse"),
    prompts=False,
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    require(
        isinstance(result, dict) and isinstance(result.get("sessionId"), str) and result["sessionId"] != "",
        "schema:NewSessionResponse",
        f"no session id in {result!r}",
    )
    strict(result, NewSessionResponse, "schema:NewSessionResponse", "the session/new result")
    return None


@V2(
    "session-ids-distinct",
    "two session/new calls on one connection answer two different session ids",
    "sessions",
    ("session-setup.mdx", "schema:SessionId"),
    prompts=False,
)
async def session_ids_distinct(ctx: CheckContext) -> str | None:
    p = ctx.probe
    first, second = await p.new_session(ctx.cwd), await p.new_session(ctx.cwd)
    require(first != second, "session-setup.mdx", f"two session/new calls both answered session id {first!r}")
    return None


@V2(
    "available-commands",
    "the commands session/new lists (an array, not null) have unique names without whitespace",
    "sessions",
    ("ACP2-032", "ACP2-038"),
    prompts=False,
)
async def available_commands(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    commands = result.get("availableCommands", []) if isinstance(result, dict) else []
    require(commands is not None, "ACP2-032", "availableCommands is null; senders must use an array")
    names = [c.get("name") for c in commands if isinstance(c, dict)] if isinstance(commands, list) else []
    for name in names:
        require(isinstance(name, str) and not re.search(r"\s", name), "ACP2-038", f"command name {name!r}")
    require(len(names) == len(set(map(str, names))), "ACP2-038", f"duplicate command names in {names}")
    if not names:
        raise NotApplicable("session/new lists no commands")
    return f"{len(names)} command(s)"


async def _pages(ctx: CheckContext, cwd: str | None, rule: str) -> list[dict[str, Any]]:
    """Every page of ``session/list`` (filtered by ``cwd``), following ``nextCursor``; each page must succeed."""
    p = ctx.probe
    seen: list[dict[str, Any]] = []
    cursor: Any = None
    for _ in range(50):
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = cwd
        if cursor:
            params["cursor"] = cursor
        result = await p.call_ok("session/list", params, rule=rule)
        sessions = result.get("sessions") if isinstance(result, dict) else None
        if not isinstance(sessions, list):
            raise Fail(rule, f"no sessions array in {result!r}")
        seen += [s for s in sessions if isinstance(s, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return seen


@V2(
    "session-list",
    "session/list without a filter answers a sessions array in the schema's shape, page after page",
    "sessions",
    ("session-list.mdx", "schema:ListSessionsResponse"),
    prompts=False,
)
async def session_list(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await p.new_session(ctx.cwd)
    result = await p.call_ok("session/list", ListSessionsRequest(), rule="session-list.mdx")
    require(
        isinstance(result, dict) and isinstance(result.get("sessions"), list),
        "session-list.mdx",
        f"no sessions array in {result!r}",
    )
    strict(result, ListSessionsResponse, "schema:ListSessionsResponse", "the session/list result")
    listed = await _pages(ctx, None, "session-list.mdx")
    return f"{len(listed)} session(s) listed"


@V2(
    "session-list-empty",
    "session/list filtered by a directory without sessions answers an empty array",
    "sessions",
    ("session-list.mdx",),
    prompts=False,
)
async def session_list_empty(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await p.new_session(ctx.cwd)
    empty = os.path.join(ctx.cwd, "no-sessions-here")
    os.makedirs(empty, exist_ok=True)
    result = await p.call_ok("session/list", ListSessionsRequest(cwd=empty), rule="session-list.mdx")
    require(
        isinstance(result, dict) and result.get("sessions") == [],
        "session-list.mdx",
        f"no session has cwd {empty}, so the list must be an empty array: {result!r}",
    )
    return None


@V2(
    "session-list-cwd",
    "session/list filtered by a cwd lists only sessions with exactly that cwd",
    "sessions",
    ("session-list.mdx",),
    prompts=False,
)
async def session_list_cwd(ctx: CheckContext) -> str | None:
    p = ctx.probe
    inner = os.path.join(ctx.cwd, "inner")
    os.makedirs(inner, exist_ok=True)
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)  # some agents list a session only once it has a prompt
    await p.new_session(inner)  # a session below the filter's directory, which the filter must not match
    listed = await _pages(ctx, ctx.cwd, "session-list.mdx")
    if not listed:
        raise NotApplicable(f"session/list filtered by {ctx.cwd} listed nothing, not even the session prompted there")
    for info in listed:
        require(
            info.get("cwd") == ctx.cwd,
            "session-list.mdx",
            f"filtered by cwd {ctx.cwd} but got session {info.get('sessionId')!r} with cwd {info.get('cwd')!r}",
        )
    if sid not in [s.get("sessionId") for s in listed]:
        ctx.note(f"the new session {sid} (no prompt yet) is not listed")  # the agent's choice
    return None


@V2(
    "session-list-absolute",
    "every session session/list reports has an absolute cwd",
    "sessions",
    ("session-list.mdx", "overview.mdx"),
    prompts=False,
)
async def session_list_absolute(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await p.new_session(ctx.cwd)
    unfiltered = await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    if unfiltered.error is None:
        listed = await _pages(ctx, None, "session-list.mdx")
    else:  # listing everything failed (session-list's subject): the sessions of this directory, then
        listed = await _pages(ctx, ctx.cwd, "session-list.mdx")
    if not listed:
        raise NotApplicable("session/list listed no session")
    for info in listed:
        cwd = info.get("cwd")
        require(
            isinstance(cwd, str) and os.path.isabs(cwd),
            "session-list.mdx",
            f"session {info.get('sessionId')!r} is listed with a cwd that is not absolute: {cwd!r}",
        )
    return f"{len(listed)} session(s)"


def _delete_capability(ctx: CheckContext) -> None:
    if ctx.probe.session_capability("delete") is None:
        raise NotApplicable("session/delete is not advertised")


@V2(
    "session-delete",
    "session/delete of a session answers an empty object",
    "sessions",
    ("session-delete.mdx", "schema:DeleteSessionResponse"),
)
async def session_delete(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    result = await p.call_ok("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    strict(result, DeleteSessionResponse, "schema:DeleteSessionResponse", "the session/delete result")
    extra = sorted(k for k in result if k != "_meta")
    require(not extra, "session-delete.mdx", f"the session/delete result should be empty, has {extra}")
    return None


@V2(
    "session-delete-unlisted",
    "a deleted session is no longer listed by session/list",
    "sessions",
    ("session-delete.mdx",),
)
async def session_delete_unlisted(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    if sid not in [s.get("sessionId") for s in await _pages(ctx, ctx.cwd, "session-list.mdx")]:
        raise NotApplicable(f"session {sid} was never listed, so its absence after deleting says nothing")
    deleted = await p.call("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    if deleted.error is not None:
        raise NotApplicable(f"session/delete failed ({deleted.error}): session-delete's subject")
    ids = [s.get("sessionId") for s in await _pages(ctx, ctx.cwd, "session-list.mdx")]
    require(sid not in ids, "session-delete.mdx", f"deleted session {sid} is still listed")
    return None


@V2(
    "session-delete-again",
    "session/delete of a deleted or unknown session succeeds silently (SHOULD)",
    "sessions",
    ("session-delete.mdx",),
)
async def session_delete_again(ctx: CheckContext) -> str | None:
    _delete_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.call("session/delete", DeleteSessionRequest(session_id=sid), rule="session-delete.mdx")
    for target, what in ((sid, "an already deleted session"), ("acp-conformance-no-such-session", "an unknown one")):
        try:
            again = await p.call("session/delete", DeleteSessionRequest(session_id=target), rule="session-delete.mdx")
        except Fail:
            if refused_unknown_session(p.agent):
                raise NotApplicable(
                    f"over HTTP the server refused session/delete of {what} with 404 (a session it does not know) "
                    "before the agent could answer"
                ) from None
            raise
        require(again.error is None, "session-delete.mdx", f"deleting {what} should succeed, got {again.error}")
    return None


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


@V2(
    "optional-forms",
    "session/new takes mcpServers omitted and mcpServers: [] alike",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionRequest"),
    prompts=False,
)
async def optional_forms(ctx: CheckContext) -> str | None:
    p = ctx.probe
    for params, what in (({"cwd": ctx.cwd}, "mcpServers omitted"), ({"cwd": ctx.cwd, "mcpServers": []}, "[]")):
        answer = await p.call("session/new", params, rule="schema:NewSessionRequest")
        require(answer.error is None, "schema:NewSessionRequest", f"session/new with {what} failed: {answer.error}")
    return None


def _extra_directory(ctx: CheckContext) -> str:
    if ctx.probe.session_capability("additionalDirectories") is None:
        raise NotApplicable("additionalDirectories is not advertised")
    extra = os.path.join(ctx.cwd, "extra")
    os.makedirs(extra, exist_ok=True)
    return extra


@V2(
    "additional-directories",
    "session/new takes an absolute additionalDirectories entry when advertised",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionRequest"),
    prompts=False,
)
async def additional_directories(ctx: CheckContext) -> str | None:
    extra = _extra_directory(ctx)
    params = {"cwd": ctx.cwd, "additionalDirectories": [extra]}
    answer = await ctx.probe.call("session/new", params, rule="session-setup.mdx")
    require(answer.error is None, "session-setup.mdx", f"session/new with additionalDirectories failed: {answer.error}")
    return None


@V2(
    "resume-additional-directories",
    "session/resume takes an absolute additionalDirectories entry when advertised",
    "sessions",
    ("session-setup.mdx", "schema:ResumeSessionRequest"),
    prompts=False,
)
async def resume_additional_directories(ctx: CheckContext) -> str | None:
    extra = _extra_directory(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    params = {"sessionId": sid, "cwd": ctx.cwd, "additionalDirectories": [extra]}
    resumed = await p.call("session/resume", params, rule="schema:ResumeSessionRequest")
    require(
        resumed.error is None,
        "schema:ResumeSessionRequest",
        f"session/resume with additionalDirectories failed: {resumed.error}",
    )
    return None

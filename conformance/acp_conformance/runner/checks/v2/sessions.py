"""Sessions (v2): ``session/new``, ``/list`` and ``/delete``, MCP transports the agent does not offer, the optional
fields in both their forms."""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema.types import McpServerHttp, NewSessionResponse

from ...outcomes import Fail
from ...registry import CheckContext, require
from ..common import config_option_problems, first_problem, session_delete_common, session_list_common
from .base import V2

__all__ = ["optional_forms", "session_delete", "session_list", "session_new", "unsupported_mcp"]


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


@V2(
    "optional-forms",
    "session/new takes mcpServers omitted or []; additionalDirectories on new and resume when advertised",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionRequest", "schema:ResumeSessionRequest"),
    prompts=False,
)
async def optional_forms(ctx: CheckContext) -> str | None:
    p = ctx.probe
    done = ["mcpServers omitted"]  # every other check's session/new omits it
    answer = await p.call("session/new", {"cwd": ctx.cwd, "mcpServers": []}, rule="schema:NewSessionRequest")
    require(answer.error is None, "schema:NewSessionRequest", f"session/new with mcpServers: [] failed: {answer.error}")
    done.append("mcpServers: []")
    if p.session_capability("additionalDirectories") is None:
        return ", ".join(done) + " (no additionalDirectories advertised)"
    extra = os.path.join(ctx.cwd, "extra")
    os.makedirs(extra, exist_ok=True)
    params = {"cwd": ctx.cwd, "additionalDirectories": [extra]}
    answer = await p.call("session/new", params, rule="session-setup.mdx")
    require(answer.error is None, "session-setup.mdx", f"session/new with additionalDirectories failed: {answer.error}")
    sid = (answer.result or {}).get("sessionId") if isinstance(answer.result, dict) else None
    done.append("additionalDirectories on session/new")
    if isinstance(sid, str):  # session/resume is part of the v2 session baseline
        resumed = await p.call("session/resume", {"sessionId": sid, **params}, rule="schema:ResumeSessionRequest")
        require(
            resumed.error is None,
            "schema:ResumeSessionRequest",
            f"session/resume with additionalDirectories failed: {resumed.error}",
        )
        done.append("on session/resume")
    return ", ".join(done)

"""The scenarios beyond the baseline protocol: ``/mcp`` (the session's MCP servers), ``/elicit`` (a question to
the user) and the Preview ones (turn usage, system prompts, auth pushes, subagents). Registered after the
baseline's, in this order."""

from __future__ import annotations

import json

import anyio

from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    AgentMessageChunk,
    Content,
    Error,
    PermissionOption,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    TextContent,
    ToolCallContentChunk,
    ToolCallPermissionSubject,
    ToolCallUpdate,
    ToolCallUpdated,
    UsageUpdate,
)

from ..sessions import Session
from ..workspace import WorkspaceError
from .engine import TurnContext, TurnFailed, scenario

__all__ = ["auth_change", "elicit", "mcp", "subagent", "system", "turn_usage"]


@scenario("mcp", "Use the session's MCP servers: list their tools; with SERVER TOOL [JSON-ARGS], call that tool")
async def mcp(ctx: TurnContext) -> str | None:
    from .. import mcp_client

    servers = ctx.session.mcp_servers
    if not servers:
        await ctx.say("This session has no MCP servers.")
        return "end_turn"
    if not mcp_client.available():
        raise TurnFailed(Error(code=-32603, message="the reference agent's MCP client needs the 'mcp' extra"))
    words = ctx.args.split(" ", 2)
    wanted = words[0] if words[0] else None
    tool_name = words[1] if len(words) > 1 else None
    try:
        arguments = json.loads(words[2]) if len(words) > 2 else {}
    except ValueError as exc:
        raise TurnFailed(Error(code=-32602, message=f"/mcp: the tool arguments are not JSON: {exc}")) from None
    chosen = [s for s in servers if wanted is None or s.get("name") == wanted]
    if not chosen:
        raise TurnFailed(Error(code=-32602, message=f"/mcp: no MCP server named {wanted!r}"))
    for server in chosen:
        name = str(server.get("name"))
        tc = ctx.session.next_id("tc-mcp")
        title = f"{name}: {tool_name}" if tool_name else f"{name}: list tools"
        await ctx.tool(
            tc,
            name=tool_name or "tools/list",
            title=title,
            kind="other",
            status="in_progress",
            raw_input={"server": name, "transport": server.get("type", "stdio"), "arguments": arguments},
        )
        try:
            async with mcp_client.connect(ctx.connection, server) as client:
                listed = await client.list_tools()
                tools = [tool.name for tool in listed.tools]
                if tool_name is None:
                    await ctx.tool(tc, status="completed", raw_output={"tools": tools})
                    await ctx.say(f"MCP server {name} offers: {', '.join(tools) or 'no tools'}.")
                    continue
                result = await client.call_tool(tool_name, arguments)
        except Exception as exc:  # a server that cannot be reached fails its tool call, not the agent
            cause: BaseException = exc
            while len(getattr(cause, "exceptions", ())) == 1:  # the SDK's task groups wrap the real error
                cause = cause.exceptions[0]  # type: ignore[attr-defined]
            await ctx.tool(tc, status="failed", raw_output={"error": f"{type(cause).__name__}: {cause}"})
            await ctx.say(f"MCP server {name} failed: {type(cause).__name__}: {cause}")
            continue
        texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
        output = {"tools": tools, "content": texts, "isError": bool(result.is_error)}
        if result.structured_content is not None:
            output["structuredContent"] = result.structured_content
        await ctx.emit(
            ToolCallContentChunk(tool_call_id=tc, content=Content(content=TextContent(text="\n".join(texts))))
        )
        await ctx.tool(tc, status="failed" if result.is_error else "completed", raw_output=output)
        await ctx.say(f"{name}.{tool_name}: {' '.join(texts)}")
    return "end_turn"


@scenario(
    "elicit",
    "Ask the user a question through the client's form elicitation, when the client offers it (argument url: send "
    "the user to a page through URL elicitation, v2)",
)
async def elicit(ctx: TurnContext) -> str | None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "title": "A name for this session"}},
        "required": ["name"],
    }
    url = ctx.args == "url"
    try:
        if url:
            answer = await ctx.workspace.elicit_url("Sign in to continue", "https://example.invalid/sign-in")
        else:
            answer = await ctx.workspace.elicit("What should I call this session?", schema)
    except WorkspaceError as exc:
        await ctx.say(f"Asking you failed: {exc}", words=False)
        return "end_turn"
    if answer is None:
        mode = "URL" if url else "form"
        await ctx.say(f"This client offers no {mode} elicitation, so I did not ask.", words=False)
    else:
        await ctx.say(f"You answered the question with {answer.get('action')!r}.", words=False)
    return "end_turn"


@scenario("turn-usage", "Report this turn's token usage on the idle state update (Preview usage)")
async def turn_usage(ctx: TurnContext) -> str | None:
    await ctx.say("Counting tokens.")
    await ctx.emit(UsageUpdate(used=2400, size=200000, meta={"source": "reference"}))
    ctx.idle_meta = {"quota": {"remaining": 42}}
    ctx.turn_usage = mu.Usage(
        total_tokens=150, input_tokens=100, output_tokens=40, thought_tokens=10, cached_read_tokens=60
    )
    return "end_turn"


@scenario("system", "Say which system prompt (Preview) the session was given")
async def system(ctx: TurnContext) -> str | None:
    prompt = ctx.session.system_prompt
    if prompt is None:
        await ctx.say("No system prompt.", words=False)
    else:
        text = " ".join(b.text for b in prompt.content if isinstance(b, TextContent))
        await ctx.say(f"System prompt ({prompt.mode}): {text}", words=False)
    return "end_turn"


@scenario("auth-change", "Push auth/status_update notifications (Preview): logged out, then logged in")
async def auth_change(ctx: TurnContext) -> str | None:
    if ctx.notify is not None:
        await ctx.notify("auth/status_update", mu.AuthStatusUpdateNotification(state="unauthenticated"))
        # The extension codex-acp and claude-agent-acp push (not the schema's shape).
        identity = {"kind": "account", "label": "Reference user", "email": "user@example.invalid"}
        await ctx.notify("_auth/status_update", {"authStatus": identity})
    await ctx.say("Auth state changed twice.")
    return "end_turn"


@scenario(
    "subagent",
    "Delegate to a subagent (child session) that runs a tool call (argument slow: to cancel it; ask: the subagent "
    "asks permission first)",
)
async def subagent(ctx: TurnContext) -> str | None:
    parent = ctx.session
    child_id = f"{parent.session_id}-sub-{parent.next_id('sub')}"
    child = Session(child_id, parent.cwd, parent.emit_raw)
    parent.subagents[child_id] = child
    slow, ask = ctx.args == "slow", ctx.args == "ask"
    tc = parent.next_id("tc")
    await ctx.tool(tc, name="delegate", title="Delegating to a subagent", kind="think", status="in_progress")
    # The child is announced on the parent before anything bears its id.
    await ctx.emit(
        mu.SubagentUpdate(
            session_id=child_id,
            title="Explorer",
            description="Lists the files of the workspace",
            capabilities=mu.SubagentSessionCapabilities(cancel=mu.SessionCancelCapabilities()),
            state=mu.StateUpdate(state="running"),
            meta={"parentToolCallId": tc},
        )
    )
    await ctx.emit(
        ToolCallUpdated(tool_call_id=tc, content=[{"type": "session", "sessionId": child_id}])  # type: ignore[list-item]
    )
    task = "List the files of the workspace."
    out_id, in_id = parent.next_id("msg-out"), child.next_id("msg-in")
    await ctx.emit(
        mu.SessionMessage(
            message_id=out_id,
            recipient_session_id=child_id,
            recipient_message_id=in_id,
            content=[TextContent(text=task)],
        )
    )
    await child.set_state("running")
    await child.emit(mu.SessionMessage(message_id=in_id, sender_session_id=parent.session_id, sender_message_id=out_id))
    await child.emit(mu.SessionMessageChunk(message_id=in_id, content=TextContent(text=task)))
    stop = "end_turn"
    child_tc = child.next_id("tc")
    await child.emit(
        ToolCallUpdated(tool_call_id=child_tc, name="ls", title="Listing files", kind="read", status="in_progress")
    )
    child_scope = anyio.CancelScope()
    child.work_scope = child_scope
    denied = False
    with child_scope:
        if slow:
            await anyio.sleep(30)
        denied = ask and not await _child_allowed(ctx, child, child_tc)
        if not denied:
            await child.emit(
                ToolCallUpdated(
                    tool_call_id=child_tc,
                    status="completed",
                    content=[Content(content=TextContent(text="greeting.txt\nnotes.md"))],
                )
            )
            reply_id = child.next_id("msg-agent")
            await child.emit(AgentMessageChunk(message_id=reply_id, content=TextContent(text="Found 2 files.")))
    child.work_scope = None
    if denied:
        await child.emit(ToolCallUpdated(tool_call_id=child_tc, status="failed"))
        idle = mu.StateUpdate(state="idle", stop_reason="end_turn")
    elif child_scope.cancelled_caught:
        stop = "cancelled"
        await child.emit(ToolCallUpdated(tool_call_id=child_tc, status="cancelled"))
        idle = mu.StateUpdate(state="idle", stop_reason="cancelled")
    else:
        usage = mu.Usage(total_tokens=30, input_tokens=20, output_tokens=10)
        idle = mu.StateUpdate(state="idle", stop_reason="end_turn", usage=usage)
    child.state, child.last_stop_reason = "idle", stop
    await child.emit(idle)
    await ctx.emit(mu.SubagentUpdate(session_id=child_id, state=idle))  # mirrored on the parent
    back_id = parent.next_id("msg-in")
    summary = "The subagent found 2 files." if stop == "end_turn" else "The subagent was cancelled."
    if denied:
        summary = "The subagent was not allowed to list the files."
    await ctx.emit(
        mu.SessionMessage(message_id=back_id, sender_session_id=child_id, content=[TextContent(text=summary)])
    )
    await ctx.tool(tc, status="completed")
    await ctx.say(summary)
    ctx.turn_usage = mu.Usage(total_tokens=70, input_tokens=50, output_tokens=20)
    return "end_turn"


async def _child_allowed(ctx: TurnContext, child: Session, tool_call_id: str) -> bool:
    """The subagent asks permission for its tool call (the request names the child session, which reports
    ``requires_action`` meanwhile); only a selected allow option allows."""
    options = [
        PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
        PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
    ]
    request = RequestPermissionRequest(
        session_id=child.session_id,
        title="List the files of the workspace?",
        options=options,
        subject=ToolCallPermissionSubject(tool_call=ToolCallUpdate(tool_call_id=tool_call_id)),
    )
    answer = await ctx.request_permission(request)
    await child.set_state("running")
    outcome = None if answer is None else answer.outcome
    return isinstance(outcome, SelectedPermissionOutcome) and outcome.option_id == "allow-once"

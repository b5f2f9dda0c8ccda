"""The baseline scenarios, registered first: what a prompt ``/name args`` makes the agent do with the baseline
protocol (stream slowly, call tools and edit files, ask permission, plan, report usage, notices, thoughts and
compaction, run terminals and background work, end a turn with each stop reason, echo, answer in Markdown)."""

from __future__ import annotations

import base64
import difflib
import os
from typing import Any

import anyio

from acp_session.schema.types import (
    AgentMessage,
    AgentMessageChunk,
    AgentThoughtChunk,
    BackgroundTerminal,
    CompactionSummaryChunk,
    CompactionUpdate,
    Content,
    Cost,
    DiffAdd,
    DiffModify,
    Error,
    Notice,
    PermissionOption,
    PlanEntry,
    PlanItems,
    PlanUpdate,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    Terminal,
    TerminalExitStatus,
    TerminalOutputChunk,
    TerminalUpdate,
    TextContent,
    ToolCallContentChunk,
    ToolCallLocation,
    ToolCallPermissionSubject,
    ToolCallUpdate,
    UsageUpdate,
)

from ..workspace import Workspace, WorkspaceError
from .engine import TurnContext, TurnFailed, scenario

__all__ = ["EDITS", "EDIT_DIR", "LOCKED", "MARKDOWN_REPLY", "TOOL_FILE"]


@scenario("slow", "Stream a long answer slowly (argument: number of chunks, default 40); good for cancelling")
async def slow(ctx: TurnContext) -> str | None:
    count = int(ctx.args) if ctx.args.isdigit() else 40
    message_id = ctx.session.next_id("msg-agent")
    for index in range(count):
        await ctx.emit(AgentMessageChunk(message_id=message_id, content=TextContent(text=f"chunk {index + 1}. ")))
        await anyio.sleep(0.1)
    return "end_turn"


TOOL_FILE = "example.txt"
"""What ``/tool`` edits in the session's cwd: its first line becomes ``new`` (``old`` when it already was)."""


def _next_text(old: str | None) -> str:
    """``/tool``'s change: the first line becomes ``new`` (``old`` when it already was)."""
    lines = (old or "").splitlines(keepends=True)
    first = "old\n" if lines and lines[0].rstrip("\r\n") == "new" else "new\n"
    return first + "".join(lines[1:])


def _absolute_patch(path: str, old: str | None, new: str) -> str:
    """A git patch whose headers name ``path`` itself (absolute, no ``a/`` ``b/`` prefix: ACP2-014)."""
    before = "/dev/null" if old is None else path
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True), fromfile=before, tofile=path
    )
    return f"diff --git {path} {path}\n" + ("new file mode 100644\n" if old is None else "") + "".join(lines)


@scenario("tool", f"Run a tool call with streamed content and a diff (changes one line of <cwd>/{TOOL_FILE})")
async def tool(ctx: TurnContext) -> str | None:
    tc = ctx.session.next_id("tc")
    path = os.path.join(ctx.session.cwd, TOOL_FILE)
    await ctx.tool(tc, name="edit_file", title="Editing example.txt", kind="edit", status="pending")
    await ctx.tool(tc, status="in_progress")
    for line in ("reading example.txt", "computing the change", "writing example.txt"):
        await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=Content(content=TextContent(text=line))))
    try:
        old = await ctx.workspace.read_text(path)
        text = _next_text(old)
        await ctx.workspace.write_text(path, text)
    except WorkspaceError as exc:
        await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=Content(content=TextContent(text=str(exc)))))
        await ctx.tool(tc, status="failed")
        await ctx.say(f"I could not write example.txt: {exc}")
        return "end_turn"
    change = (DiffAdd if old is None else DiffModify)(path=path, mime_type="text/plain")
    diff = ctx.diff([change], _absolute_patch(path, old, text), [(path, old, text)])
    await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=diff))
    await ctx.tool(tc, status="completed", raw_output={"changed": 1})
    await ctx.say("I changed one line in example.txt.")
    return "end_turn"


EDIT_DIR = "acp-reference-edit"
"""Where ``/edit`` writes, under the session's cwd."""
EDITS = (
    ("greeting.txt", "text/plain", "Hello from the ACP reference agent.\n"),
    ("notes.md", "text/markdown", "# Notes\n\n- written by the /edit scenario\n"),
)
"""``/edit``'s files: name, media type, the text it writes."""
LOCKED = "locked.txt"
"""The file ``/edit`` tries to edit and fails (it is never written)."""


async def _write_edits(workspace: Workspace, directory: str) -> list[str | None]:
    """Write ``EDITS`` into ``directory`` (created if missing, never its parent: the session's cwd must exist);
    the old texts (None: the file was new)."""
    olds: list[str | None] = []
    for name, _, text in EDITS:
        path = os.path.join(directory, name)
        olds.append(await workspace.read_text(path))
        await workspace.write_text(path, text)
    return olds


def _git_patch(path: str, old: str | None, new: str) -> str:
    before = "/dev/null" if old is None else f"a{path}"
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True), fromfile=before, tofile=f"b{path}"
    )
    return f"diff --git a{path} b{path}\n" + ("new file mode 100644\n" if old is None else "") + "".join(lines)


@scenario(
    "edit",
    f"Edit two files through diffs (written under <cwd>/{EDIT_DIR}/), then fail to edit a third (argument ask: "
    "ask permission first, and write only when allowed)",
)
async def edit(ctx: TurnContext) -> str | None:
    directory = os.path.join(ctx.session.cwd, EDIT_DIR)
    paths = [os.path.join(directory, name) for name, _, _ in EDITS]
    tc = ctx.session.next_id("tc")
    ask = ctx.args.strip() == "ask" and "edit-unasked" not in ctx.broken  # --broken edit-unasked: never asks
    await ctx.tool(
        tc,
        name="edit_files",
        title="Editing " + " and ".join(name for name, _, _ in EDITS),
        kind="edit",
        status="pending" if ask else "in_progress",
        locations=[ToolCallLocation(path=path) for path in paths],
    )
    if ask and not await _allowed(ctx, tc, f"Edit {' and '.join(name for name, _, _ in EDITS)}?"):
        await ctx.tool(tc, status="failed", content=[Content(content=TextContent(text="permission not granted"))])
        await ctx.say("Permission was not granted, so I wrote nothing.")
        return "end_turn"
    if ask:
        await ctx.tool(tc, status="in_progress")
    try:
        olds = await _write_edits(ctx.workspace, directory)
    except WorkspaceError as exc:
        await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=Content(content=TextContent(text=str(exc)))))
        await ctx.tool(tc, status="failed")
        await ctx.say(f"I could not write the files: {exc}")
        return "end_turn"
    changes: list[Any] = []
    patches: list[str] = []
    for path, old, (_, mime_type, text) in zip(paths, olds, EDITS, strict=True):
        changes.append((DiffAdd if old is None else DiffModify)(path=path, mime_type=mime_type))
        patches.append(_git_patch(path, old, text))
    files = [(path, old, text) for path, old, (_, _, text) in zip(paths, olds, EDITS, strict=True)]
    diff = ctx.diff(changes, "".join(patches), files)
    await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=diff))
    await ctx.tool(tc, status="completed", raw_output={"changed": len(paths)})

    # The failed edit: its diff is reported, then the tool call fails and nothing is written.
    locked = os.path.join(directory, LOCKED)
    failed = ctx.session.next_id("tc")
    proposed = ctx.diff(
        [DiffModify(path=locked, mime_type="text/plain")],
        _git_patch(locked, "locked\n", "unlocked\n"),
        [(locked, "locked\n", "unlocked\n")],
    )
    await ctx.tool(
        failed,
        name="edit_files",
        title=f"Editing {LOCKED}",
        kind="edit",
        status="in_progress",
        locations=[ToolCallLocation(path=locked)],
        content=[proposed],
    )
    reason = f"{LOCKED} is locked: nothing was written"
    await ctx.emit(ToolCallContentChunk(tool_call_id=failed, content=Content(content=TextContent(text=reason))))
    await ctx.tool(failed, status="failed")
    await ctx.say(f"I edited {' and '.join(name for name, _, _ in EDITS)}; {reason}.")
    return "end_turn"


async def _allowed(ctx: TurnContext, tool_call_id: str, title: str) -> bool:
    """Ask permission for the tool call; only a selected allow option allows (ACP2-086, ACP2-087, ACP2-088)."""
    options = [
        PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
        PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
    ]
    request = RequestPermissionRequest(
        session_id=ctx.session.session_id,
        title=title,
        options=options,
        subject=ToolCallPermissionSubject(tool_call=ToolCallUpdate(tool_call_id=tool_call_id)),
    )
    answer = await ctx.request_permission(request)
    await ctx.running()
    outcome = None if answer is None else answer.outcome
    allowed = {o.option_id for o in options if o.kind.startswith("allow")}
    return isinstance(outcome, SelectedPermissionOutcome) and outcome.option_id in allowed


@scenario(
    "permission",
    "Ask permission before a tool call; proceeds only when an allow option is selected (arguments KIND PATH: a "
    "tool call of that kind on <cwd>/PATH instead of `rm -rf build/`)",
)
async def permission(ctx: TurnContext) -> str | None:
    tc = ctx.session.next_id("tc")
    kind, _, target = ctx.args.partition(" ")
    if kind and target.strip():  # e.g. "/permission edit src/app.py": what a policy's kind and path rules judge
        path = os.path.join(ctx.session.cwd, target.strip())
        await ctx.tool(
            tc,
            name=kind,
            title=f"{kind} {target.strip()}",
            kind=kind,
            status="pending",
            locations=[ToolCallLocation(path=path)],
        )
    else:
        await ctx.tool(tc, name="run_command", title="rm -rf build/", kind="execute", status="pending")
    given = kind and target.strip()
    title = f"{kind} {target.strip()}?" if given else "Run `rm -rf build/`?"
    if await _allowed(ctx, tc, title):
        await ctx.tool(tc, status="in_progress")
        done = "done" if given else "removed"
        await ctx.emit(ToolCallContentChunk(tool_call_id=tc, content=Content(content=TextContent(text=done))))
        await ctx.tool(tc, status="completed")
        await ctx.say(f"Done: {kind} {target.strip()}." if given else "Done: build/ was removed.")
    else:
        await ctx.tool(tc, status="failed", content=[Content(content=TextContent(text="permission not granted"))])
        await ctx.say("Permission was not granted, so I did nothing.")
    return "end_turn"


@scenario("plan", "Report a plan and work through its entries")
async def plan(ctx: TurnContext) -> str | None:
    plan_id = ctx.session.next_id("plan")
    steps = ["Read the code", "Write the change", "Run the tests"]
    for done in range(len(steps) + 1):
        entries = [
            PlanEntry(
                content=step,
                priority="high" if index == 0 else "medium",
                status="completed" if index < done else ("in_progress" if index == done else "pending"),
            )
            for index, step in enumerate(steps)
        ]
        await ctx.emit(PlanUpdate(plan=PlanItems(plan_id=plan_id, entries=entries)))
    await ctx.say("All three plan steps are done.")
    return "end_turn"


@scenario("usage", "Report context usage and cost")
async def usage(ctx: TurnContext) -> str | None:
    await ctx.emit(UsageUpdate(used=1200, size=200000, cost=Cost(amount=0.0042, currency="USD")))
    await ctx.say("Usage reported.")
    return "end_turn"


@scenario("notice", "Send a live notice (not replayed)")
async def notice(ctx: TurnContext) -> str | None:
    await ctx.emit(Notice(severity="warning", title="Reference notice", description="Nothing is actually wrong."))
    await ctx.say("I sent a notice.")
    return "end_turn"


@scenario("thought", "Stream agent thoughts before answering")
async def thought(ctx: TurnContext) -> str | None:
    message_id = ctx.session.next_id("msg-thought")
    for piece in ("Let me think. ", "The answer is 42."):
        await ctx.emit(AgentThoughtChunk(message_id=message_id, content=TextContent(text=piece)))
    await ctx.say("42.")
    return "end_turn"


@scenario("compact", "Compact the context with a streamed summary")
async def compact(ctx: TurnContext) -> str | None:
    cid = ctx.session.next_id("cmp")
    await ctx.emit(CompactionUpdate(compaction_id=cid, status="in_progress"))
    for piece in ("Earlier, the user greeted the agent. ", "Nothing else happened."):
        await ctx.emit(CompactionSummaryChunk(compaction_id=cid, content=TextContent(text=piece)))
    await ctx.emit(CompactionUpdate(compaction_id=cid, status="completed"))
    await ctx.say("Context compacted.")
    return "end_turn"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@scenario("terminal", "Run a command in a display-only terminal with streamed output")
async def terminal(ctx: TurnContext) -> str | None:
    if ctx.workspace.runs_commands:
        return await _client_terminal(ctx)
    tc = ctx.session.next_id("tc")
    term = ctx.session.next_id("term")
    await ctx.tool(
        tc,
        name="run_tests",
        title="pytest -q",
        kind="execute",
        status="in_progress",
        content=[Terminal(terminal_id=term)],
    )
    await ctx.emit(TerminalUpdate(terminal_id=term, command="pytest -q", cwd=ctx.session.cwd))
    for chunk in (b"..", b"..", b"\r\n4 passed\r\n"):
        await ctx.emit(TerminalOutputChunk(terminal_id=term, data=_b64(chunk)))
    await ctx.emit(TerminalUpdate(terminal_id=term, exit_status=TerminalExitStatus(exit_code=0)))
    await ctx.tool(tc, status="completed")
    await ctx.say("4 tests passed.")
    return "end_turn"


async def _client_terminal(ctx: TurnContext) -> str | None:
    """``/terminal`` for a v1 client with terminals: the client runs the command (terminal/*)."""
    tc = ctx.session.next_id("tc")
    await ctx.tool(tc, name="run_tests", title="echo 4 passed", kind="execute", status="pending")
    try:
        term = await ctx.workspace.start_command("echo", ["4 passed"], ctx.session.cwd)
        await ctx.tool(tc, status="in_progress", content=[Terminal(terminal_id=term)])
        result = await ctx.workspace.finish_command(term)
    except WorkspaceError as exc:
        await ctx.tool(tc, status="failed", content=[Content(content=TextContent(text=str(exc)))])
        await ctx.say(f"I could not run the command: {exc}")
        return "end_turn"
    await ctx.tool(
        tc, status="completed" if result.exit_code == 0 else "failed", raw_output={"exitCode": result.exit_code}
    )
    await ctx.say(f"The command printed: {result.output.strip()}")
    return "end_turn"


@scenario("background", "Start a background terminal that outlives the turn (argument: seconds, default 0.5)")
async def background(ctx: TurnContext) -> str | None:
    session = ctx.session
    seconds = float(ctx.args) if ctx.args.replace(".", "", 1).isdigit() else 0.5
    term = session.next_id("term")
    tc = session.next_id("tc")
    # Announce the terminal before the first snapshot that lists it (ACP2-041).
    await ctx.tool(
        tc,
        name="watch",
        title="npm run watch",
        kind="execute",
        status="in_progress",
        content=[Terminal(terminal_id=term)],
    )
    await ctx.emit(TerminalUpdate(terminal_id=term, command="npm run watch", cwd=session.cwd))
    await ctx.tool(tc, status="completed", raw_output={"detached": True})
    item = BackgroundTerminal(terminal_id=term)
    session.background = [*(session.background or []), item]
    await session.set_state(session.state)  # a repeated snapshot carrying the new background list

    async def work() -> None:
        for index in range(3):
            await anyio.sleep(seconds / 3)
            await session.emit(TerminalOutputChunk(terminal_id=term, data=_b64(f"rebuild {index + 1}\r\n".encode())))
        # Report the exit status before the snapshot that removes the item (ACP2-041).
        await session.emit(TerminalUpdate(terminal_id=term, exit_status=TerminalExitStatus(exit_code=0)))
        session.background = [b for b in (session.background or []) if b is not item]
        await session.set_state(session.state)

    ctx.start_background(work)
    await ctx.say("Started `npm run watch` in the background.")
    return "end_turn"


@scenario("all", "Plan, thought, tool call, terminal, usage, notice and compaction in one turn")
async def everything(ctx: TurnContext) -> str | None:
    for step in (plan, thought, tool, terminal, usage, notice, compact):
        await step(ctx)
    return "end_turn"


@scenario("refuse", "End the turn with the refusal stop reason")
async def refuse(ctx: TurnContext) -> str | None:
    await ctx.say("I will not do that.")
    return "refusal"


@scenario("max_tokens", "End the turn with the max_tokens stop reason")
async def max_tokens(ctx: TurnContext) -> str | None:
    await ctx.say("This answer is cut off because")
    return "max_tokens"


@scenario("max_turn_requests", "End the turn with the max_turn_requests stop reason")
async def max_turn_requests(ctx: TurnContext) -> str | None:
    await ctx.say("Too many model requests.")
    return "max_turn_requests"


@scenario("fail", "Fail the work: the turn ends with the error stop reason")
async def fail(ctx: TurnContext) -> str | None:
    await ctx.say("Something is about to go wrong.")
    raise TurnFailed(Error(code=-32603, message="the reference agent failed on purpose"))


@scenario("echo", "Echo the prompt's blocks back verbatim as one message")
async def echo(ctx: TurnContext) -> str | None:
    await ctx.emit(AgentMessage(message_id=ctx.session.next_id("msg-agent"), content=list(ctx.blocks)))
    return "end_turn"


MARKDOWN_REPLY = (
    "# A Markdown reply\n\n"
    "Clients may render **Markdown**: a heading, a list and a code block.\n\n"
    "- first item\n"
    "- second item with `inline code`\n\n"
    "```python\n"
    "def greet(name: str) -> str:\n"
    '    return f"Hello, {name}!"\n'
    "```\n"
)
"""What ``/markdown`` answers, streamed in small pieces (a front end can render it as it arrives)."""


@scenario("markdown", "Answer in Markdown (a heading, a list, a code block), streamed in small pieces")
async def markdown(ctx: TurnContext) -> str | None:
    message_id = ctx.session.next_id("msg-agent")
    for start in range(0, len(MARKDOWN_REPLY), 16):
        piece = MARKDOWN_REPLY[start : start + 16]
        await ctx.emit(AgentMessageChunk(message_id=message_id, content=TextContent(text=piece)))
        await anyio.sleep(0.005)
    return "end_turn"

"""The scenario engine: what a scenario gets to work with during one turn (``TurnContext``), the registry of
scenarios by name (``SCENARIOS``, filled by ``@scenario``), how a prompt picks one, and the offline assistant's
reply when it picks none."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from msgspec import UNSET

from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    Command,
    ContentBlock,
    Diff,
    DiffPatch,
    Error,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResourceLink,
    SessionInfoUpdate,
    TextCommandInput,
    TextContent,
    ToolCallUpdated,
)

from ..sessions import Session
from ..v1_wire import V1_DIFFS_META
from ..workspace import Workspace

__all__ = [
    "SCENARIOS",
    "Scenario",
    "TurnContext",
    "TurnFailed",
    "available_commands",
    "offline_reply",
    "parse_prompt",
    "scenario",
]


class TurnFailed(Exception):
    """The work failed: the turn ends with the ``error`` stop reason carrying ``error``."""

    def __init__(self, error: Error) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(eq=False)
class TurnContext:
    """What a scenario can do during one turn of foreground work."""

    session: Session
    message_id: str  # the user message that started the turn
    args: str
    blocks: list[ContentBlock]
    request_permission: Callable[[RequestPermissionRequest], Awaitable[RequestPermissionResponse | None]]
    start_background: Callable[[Callable[[], Awaitable[None]]], None]
    open_tool_calls: set[str] = field(default_factory=set)
    delay: float = 0.0
    connection: Any = None  # the ACP connection (``/mcp`` reaches MCP-over-ACP servers through it)
    notify: Callable[[str, Any], Awaitable[None]] | None = None  # an agent->client notification (not an update)
    turn_usage: mu.Usage | None = None  # reported on the idle state_update that ends the turn (Preview)
    idle_meta: dict[str, Any] | None = None  # the _meta of that idle state_update
    workspace: Workspace = field(default_factory=Workspace)  # files and commands: local, or a v1 client's
    protocol_version: int = 2  # the negotiated version (the engine speaks the model; v1_front.py maps it)
    broken: frozenset[str] = frozenset()  # the agent's --broken modes (a scenario that misbehaves on purpose)

    def diff(self, changes: list[Any], patch: str, files: list[tuple[str, str | None, str]]) -> Diff:
        """A diff of ``files`` (path, old text or None, new text); for v1 it also carries the texts, v1's shape."""
        meta: Any = UNSET
        if self.protocol_version == 1:
            meta = {V1_DIFFS_META: [{"path": p, "oldText": old, "newText": new} for p, old, new in files]}
        return Diff(changes=changes, patch=DiffPatch(format="git_patch", text=patch), meta=meta)

    async def emit(self, update: Any) -> None:
        await self.session.emit(update)

    async def say(self, text: str, *, words: bool = True) -> None:
        """Stream ``text`` as agent message chunks (one per word) under a fresh message id."""
        message_id = self.session.next_id("msg-agent")
        pieces = [w + " " for w in text.split(" ")] if words else [text]
        pieces[-1] = pieces[-1].rstrip(" ")
        for piece in pieces:
            await self.emit(AgentMessageChunk(message_id=message_id, content=TextContent(text=piece)))
            if self.delay:
                await anyio.sleep(self.delay)

    async def think(self, text: str) -> None:
        message_id = self.session.next_id("msg-thought")
        await self.emit(AgentThoughtChunk(message_id=message_id, content=TextContent(text=text)))

    async def tool(self, tool_call_id: str, **fields: Any) -> None:
        """Upsert a tool call; remembers which ones have not reached a final status."""
        status = fields.get("status")
        if status in ("completed", "failed", "cancelled"):
            self.open_tool_calls.discard(tool_call_id)
        elif status is not None:
            self.open_tool_calls.add(tool_call_id)
        await self.emit(ToolCallUpdated(tool_call_id=tool_call_id, **fields))

    async def running(self) -> None:
        if self.session.state != "running":
            await self.session.set_state("running")


Scenario = Callable[[TurnContext], Awaitable[str | None]]
SCENARIOS: dict[str, tuple[str, Scenario]] = {}


def scenario(name: str, description: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = (description, fn)
        return fn

    return register


def parse_prompt(blocks: list[ContentBlock]) -> tuple[str | None, str]:
    """``(scenario name or None, the rest)`` from the prompt's text."""
    text = " ".join(block.text for block in blocks if isinstance(block, TextContent)).strip()
    if text.startswith("/"):
        name, _, rest = text[1:].partition(" ")
        if name in SCENARIOS:
            return name, rest.strip()
    return None, text


def available_commands() -> list[AvailableCommand]:
    return [
        Command(name=name, description=description, input=TextCommandInput(hint="optional argument"))
        for name, (description, _) in SCENARIOS.items()
    ]


def _summary(blocks: list[ContentBlock]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.name}]")
        else:
            parts.append(f"[{getattr(block, 'type', None) or type(block).__name__}]")
    return " ".join(parts).strip()


async def offline_reply(ctx: TurnContext, text: str) -> str | None:
    """The default behaviour: a short deterministic reply, like a tiny offline assistant."""
    session = ctx.session
    if session.title is None:
        session.title = (text[:40] or "untitled").strip()
        await ctx.emit(SessionInfoUpdate(title=session.title))
    if session.config.thoughts:
        await ctx.think(f"The user wrote {len(text.split())} word(s); replying in {session.config.mode} mode.")
    lowered = text.lower().rstrip("?!. ")
    if lowered in ("hi", "hello", "hey"):
        reply = "Hello! I am the ACP reference agent. Type `/help` to see what I can demonstrate."
    elif lowered == "/help" or lowered == "help":
        reply = "Scenarios: " + ", ".join("/" + name for name in SCENARIOS) + "."
    elif session.config.mode == "review":
        reply = f"Review of your message ({len(text)} characters): looks fine to me."
    elif session.config.mode == "ask":
        reply = f"You asked: {text}" if text else "You sent no text."
    else:
        reply = f"You said: {_summary(ctx.blocks)}" if ctx.blocks else "You sent no text."
    await ctx.say(reply)
    return "end_turn"

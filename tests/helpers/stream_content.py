"""Reading ``receive_steps()`` / ``receive_chunks()`` streams in reconnect tests, and what a consumer ends up with.

``Reader`` collects what each stream yields (recording, as it reads, what a consumer can only read then: a step's
appended text). ``chunk_content`` and ``step_content`` are what a consumer rebuilds from them, with the entities
numbered in order of appearance (two runs of the same turn give different ids), so an uncut run and a cut one can
be compared; each also asserts that nothing was shown twice and that the marker of each reconnect is followed by
the items it caught up (``replayed``) and only those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from acp_session.conversation import (
    ChunkStream,
    Conversation,
    MessageChanged,
    StateChanged,
    Step,
    StepStream,
    StreamOverflow,
    StreamReconnected,
    TextChunk,
    ThoughtChunk,
    ToolCallChunk,
)

__all__ = ["Reader", "chunk_content", "step_content", "streamed"]


class Reader:
    """Both streams of a conversation, read in tasks of their own until closed."""

    def __init__(self, conversation: Conversation) -> None:
        self.steps: StepStream = conversation.receive_steps()
        self.chunks: ChunkStream = conversation.receive_chunks()
        self.step_items: list[Any] = []
        self.chunk_items: list[Any] = []
        self.step_texts: list[str | None] = []  # per step item: the text its MessageChanged appended, read then

    async def _read_steps(self) -> None:
        async for item in self.steps:
            self.step_items.append(item)
            event = item.event if isinstance(item, Step) else None
            appended = getattr(event, "appended", None) if isinstance(event, MessageChanged) else None
            self.step_texts.append(getattr(appended, "text", None))

    async def _read_chunks(self) -> None:
        async for item in self.chunks:
            self.chunk_items.append(item)

    async def run(self, body: Callable[[], Any]) -> None:
        """Read both streams while ``body`` runs; then let the last items arrive and close them."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read_steps)
            tg.start_soon(self._read_chunks)
            await body()
            await anyio.sleep(0.3)  # the turn's last updates are folded before its answer settles it
            self.steps.close()
            self.chunks.close()


def _check_markers(items: list[Any]) -> int:
    """Each ``StreamReconnected`` is followed by replayed items only, then by live ones; none replayed elsewhere.
    Returns how many markers there were."""
    markers = 0
    catching_up = False
    for item in items:
        assert not isinstance(item, StreamOverflow), "the reader fell behind"
        if isinstance(item, StreamReconnected):
            markers += 1
            assert item.forgotten == 0
            catching_up = True
            continue
        replayed = bool(getattr(item, "replayed", False))
        if not replayed:
            catching_up = False
        assert replayed == catching_up, f"{item!r} replayed={replayed} outside/inside a catch-up"
    return markers


def chunk_content(items: list[Any]) -> tuple[list[tuple[str, str]], int]:
    """What a ``receive_chunks()`` consumer shows: each message's text and each tool call's title, in order of
    appearance (kind, text); and how many reconnect markers came."""
    markers = _check_markers(items)
    shown: dict[tuple[str, str], str] = {}
    for item in items:
        if isinstance(item, (TextChunk, ThoughtChunk)):
            key = (item.kind, item.message_id)
            shown[key] = item.text if item.replaced else shown.get(key, "") + item.text
        elif isinstance(item, ToolCallChunk):
            key = ("tool_call", item.tool_call.tool_call_id)
            assert key not in shown, f"tool call {key} shown twice"
            shown[key] = item.tool_call.title or ""
    return [(kind, text) for (kind, _), text in shown.items()], markers


def step_content(reader: Reader) -> tuple[list[tuple[str, ...]], list[tuple[str, bool]], list[str | None]]:
    """What a ``receive_steps()`` consumer rebuilds: the entities in creation order, a message with the text its
    steps appended ((kind, role or status, text)); the foreground states reported ((state, completed), repeats
    collapsed); the stop reasons of the completions."""
    _check_markers(reader.step_items)
    order: list[Any] = []
    texts: dict[int, str] = {}
    created: set[int] = set()
    states: list[tuple[str, bool]] = []
    stops: list[str | None] = []
    for item, text in zip(reader.step_items, reader.step_texts, strict=True):
        if not isinstance(item, Step):
            continue
        event = item.event
        entry = item.entry
        if entry is not None and getattr(event, "created", False):
            assert id(entry) not in created, f"{entry!r} created twice"
            created.add(id(entry))
            order.append(entry)
        if isinstance(event, MessageChanged):
            key = id(event.message)
            if text is not None:
                texts[key] = texts.get(key, "") + text
            elif not event.created:
                texts[key] = event.message.text  # rewritten: the whole message
        elif isinstance(event, StateChanged):
            if not states or states[-1][0] != event.state or event.completed:
                states.append((event.state, event.completed))
            if event.completed:
                stops.append(event.stop_reason)
    entities: list[tuple[str, ...]] = []
    for entry in order:
        role = getattr(entry, "role", None)
        if role is not None:
            entities.append(("message", role, texts.get(id(entry), entry.text)))
        else:
            entities.append((type(entry).__name__, getattr(entry, "status", "")))
    return entities, states, stops


async def streamed(conversation: Conversation, body: Callable[[], Any]) -> Reader:
    """Run ``body`` with both streams of ``conversation`` open and read; the reader, done."""
    reader = Reader(conversation)
    await reader.run(body)
    return reader

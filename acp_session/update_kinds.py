"""Every kind of ``session/update`` this library knows, in one table.

A kind is named by its wire tag (``sessionUpdate``) and carried by one or more model types (the stable and
unstable schema's; a protocol adapter's subtypes are registered onto their kind). The table says what a kind
is to the layers above: whether the connection tracks it for the session handle (``tracked``, read by
``SessionTrack.apply``) and which message store a chunk kind appends to (``chunk_role``). The fold
(``conversation/state.py``) keys its handlers by tag and checks at import that it covers every kind here.
A new update kind is a row here, a handler there (docs/design.md, "Where changes go").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .schema import (
    AgentMessage,
    AgentMessageChunk,
    AgentThought,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    Notice,
    PlanUpdate,
    SessionInfoUpdate,
    StateUpdate,
    TerminalOutputChunk,
    TerminalUpdate,
    ToolCallContentChunk,
    ToolCallUpdated,
    UsageUpdate,
    UserMessage,
    UserMessageChunk,
    unstable,
)

__all__ = ["KINDS", "TRACKED_UPDATES", "UpdateKind", "chunk_types", "kind_of", "register_subtype"]

ChunkRole = Literal["user", "agent", "thought"]


@dataclass(frozen=True, slots=True)
class UpdateKind:
    """One ``sessionUpdate`` kind: its tag, the model types that carry it, and what the layers above do with it."""

    tag: str
    types: tuple[type, ...]
    tracked: bool = False
    """``SessionTrack.apply`` reads it (state, tool calls, terminals, user messages, config options)."""
    chunk_role: ChunkRole | None = None
    """For a message chunk kind: the role of the message it appends to."""


def _kind(*types: type, tracked: bool = False, chunk_role: ChunkRole | None = None) -> UpdateKind:
    tag = types[0].__struct_config__.tag  # type: ignore[attr-defined]
    assert all(t.__struct_config__.tag == tag for t in types), types  # type: ignore[attr-defined]
    return UpdateKind(str(tag), types, tracked, chunk_role)


KINDS: tuple[UpdateKind, ...] = (
    _kind(UserMessageChunk, tracked=True, chunk_role="user"),  # an echo of a prompt joins it (SessionTrack)
    _kind(UserMessage, tracked=True),
    _kind(AgentMessageChunk, chunk_role="agent"),
    _kind(AgentMessage),
    _kind(AgentThoughtChunk, chunk_role="thought"),
    _kind(AgentThought),
    _kind(StateUpdate, unstable.StateUpdate, tracked=True),
    _kind(ToolCallUpdated, tracked=True),
    _kind(ToolCallContentChunk),
    _kind(TerminalUpdate, tracked=True),
    _kind(TerminalOutputChunk),
    _kind(PlanUpdate, unstable.PlanUpdate),
    _kind(unstable.PlanRemoved),
    _kind(AvailableCommandsUpdate),
    _kind(ConfigOptionUpdate, tracked=True),
    _kind(SessionInfoUpdate),
    _kind(UsageUpdate),
    _kind(Notice),
    _kind(CompactionUpdate),
    _kind(CompactionSummaryChunk),
    _kind(unstable.SubagentUpdate, tracked=True),  # the connection tracks the child session it announces
    _kind(unstable.SessionMessage),
    _kind(unstable.SessionMessageChunk),
)
"""Every update kind with a meaning here; anything else is kept raw (``UnknownSessionUpdate``)."""

_KIND_OF: dict[type, UpdateKind] = {t: kind for kind in KINDS for t in kind.types}

TRACKED_UPDATES: set[type] = {t for kind in KINDS if kind.tracked for t in kind.types}
"""Update types ``SessionTrack.apply`` reads; the connection skips the call for everything else (a set probe)."""

_chunk_types: tuple[tuple[type, ChunkRole], ...] = tuple(
    (t, kind.chunk_role) for kind in KINDS if kind.chunk_role is not None for t in kind.types
)


def kind_of(update_type: type) -> UpdateKind | None:
    """The kind an update type carries (its model type's, for a registered subtype); None when unknown."""
    return _KIND_OF.get(update_type)


def chunk_types() -> tuple[tuple[type, ChunkRole], ...]:
    """Every message chunk type (model types and registered subtypes) with the role it appends to."""
    return _chunk_types


def register_subtype(subtype: type, model: type) -> None:
    """Make ``subtype`` (a protocol adapter's subclass of the model type ``model``) count as ``model``'s kind
    everywhere: the fold, the tracking and the chunk fast path."""
    global _chunk_types
    kind = _KIND_OF[model]
    if not issubclass(subtype, model):
        raise TypeError(f"{subtype.__name__} is not a subtype of {model.__name__}")
    _KIND_OF[subtype] = kind
    if kind.tracked:
        TRACKED_UPDATES.add(subtype)
    if kind.chunk_role is not None:
        _chunk_types = (*_chunk_types, (subtype, kind.chunk_role))

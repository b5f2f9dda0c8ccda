"""Build session updates from wire JSON, so the tests fold what the decoder really produces."""

from __future__ import annotations

from typing import Any

from acp_session import codec
from acp_session.conversation import SessionState, StateEvent
from acp_session.schema import SessionUpdate, unstable

OMIT: Any = object()
"""Marks a field left out of the JSON object (distinct from ``None``, which is JSON null)."""


def update(obj: dict[str, Any]) -> Any:
    """A stable ``SessionUpdate`` decoded from a JSON object (OMIT values are dropped)."""
    return codec.convert(_clean(obj), SessionUpdate)


def unstable_update(obj: dict[str, Any]) -> Any:
    return codec.convert(_clean(obj), unstable.SessionUpdate)


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if value is not OMIT}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def joined(blocks: list[str], chunk_text: str, limit: int = 1024) -> list[str]:
    """Reference model of the fold's joining rule for plain text chunks (``entities.join_chunks``): a chunk
    joins the last block while that block is shorter than ``limit``, else it starts a new block."""
    if blocks and len(blocks[-1]) < limit:
        return [*blocks[:-1], blocks[-1] + chunk_text]
    return [*blocks, chunk_text]


def joined_all(chunks: list[str], start: list[str] | None = None) -> list[str]:
    blocks = list(start or [])
    for item in chunks:
        blocks = joined(blocks, item)
    return blocks


def chunk(message_id: str, value: str | dict[str, Any], kind: str = "agent_message", meta: Any = OMIT) -> Any:
    block = text(value) if isinstance(value, str) else value
    return update({"sessionUpdate": f"{kind}_chunk", "messageId": message_id, "content": block, "_meta": meta})


def upsert(message_id: str, content: Any = OMIT, kind: str = "agent_message", meta: Any = OMIT) -> Any:
    if isinstance(content, list):
        content = [text(item) if isinstance(item, str) else item for item in content]
    return update({"sessionUpdate": kind, "messageId": message_id, "content": content, "_meta": meta})


def tool(tool_call_id: str, **fields: Any) -> Any:
    return update({"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, **fields})


def tool_chunk(tool_call_id: str, content: dict[str, Any]) -> Any:
    return update({"sessionUpdate": "tool_call_content_chunk", "toolCallId": tool_call_id, "content": content})


def state(value: str, **fields: Any) -> Any:
    return update({"sessionUpdate": "state_update", "state": value, **fields})


def fold(updates: list[Any], into: SessionState | None = None) -> SessionState:
    target = SessionState() if into is None else into
    for item in updates:
        target.apply(item)
    return target


def fold_events(target: SessionState, updates: list[Any]) -> list[StateEvent]:
    return [target.apply(item) for item in updates]

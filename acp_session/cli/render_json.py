"""``--json`` output: one JSON object per line for each chat event, tool call and notice (docs/cli.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from acp_session.codec import to_builtins
from acp_session.conversation import (
    ChatDone,
    ChatError,
    ChatEvent,
    ChatFile,
    ChatNotice,
    ChatProgress,
    ChatReconnected,
    ChatReconnecting,
    ChatSessionLost,
    ChatStart,
    ChatSubagentEnd,
    ChatSubagentStart,
    ChatSubagentUpdate,
    ChatText,
    ChatThought,
    ChatToolBegin,
    ChatToolEnd,
    ChatToolUpdate,
    ContextUsage,
    Message,
    Plan,
    TimelineEntry,
    ToolCall,
)

from .messages import describe, error_record
from .render import ContentTracker, Renderer, context_usage_json
from .safe_text import json_safe
from .screen import Screen

__all__ = ["JsonRenderer"]


def _tool_fields(call: ToolCall) -> dict[str, Any]:
    """The tool call's fields a record carries besides its content (``raw_input`` / ``raw_output`` as the agent
    sent them)."""
    return {
        "name": call.name,
        "title": call.title,
        "kind": call.kind,
        "status": call.status,
        "locations": to_builtins(call.locations),
        "raw_input": call.raw_input,
        "raw_output": call.raw_output,
    }


class _ToolRecords:
    """A tool call's ``--json`` record: every field in its first record, then only what changed (and content
    items not reported before)."""

    def __init__(self) -> None:
        self._content = ContentTracker()
        self._sent: dict[str, dict[str, Any]] = {}

    def record(self, call: ToolCall, *, full: bool = False) -> dict[str, Any]:
        fields = _tool_fields(call)
        sent = self._sent.get(call.tool_call_id)
        self._sent[call.tool_call_id] = fields
        record: dict[str, Any] = {"id": call.tool_call_id}
        if full or sent is None:
            record.update(fields)
        else:
            record.update({key: value for key, value in fields.items() if sent.get(key) != value})
        items, replaced = self._content.new_items(call)
        if items or full or sent is None:
            record["content"] = [to_builtins(item) for item in items]
        if replaced:
            record["content_replaced"] = True
        return record


class JsonRenderer(Renderer):
    """One JSON object per line on stdout, each with an ``event`` key; the stream of a turn ends with ``done``
    or ``error``."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self._tools = _ToolRecords()
        self._child_tools: dict[str, _ToolRecords] = {}  # by subagent session id
        self.context: Callable[[], ContextUsage | None] = lambda: None
        """The session's latest context usage (set by the CLI), for the ``done`` record's ``context``."""

    def emit(self, record: dict[str, Any]) -> None:
        self.before_output()
        self.out.write(json_safe(json.dumps(record, ensure_ascii=False, default=str)) + "\n")
        self.out.flush()

    def event(self, event: ChatEvent) -> None:
        record: dict[str, Any] = {"event": event.kind}
        if isinstance(event, ChatStart):
            record["message_id"] = event.message_id
        elif isinstance(event, (ChatText, ChatThought)):
            record.update(text=event.text, message_id=event.message_id, replaced=event.replaced)
        elif isinstance(event, (ChatToolBegin, ChatToolUpdate)):
            record["tool_call"] = self._tools.record(event.tool_call, full=isinstance(event, ChatToolBegin))
        elif isinstance(event, ChatToolEnd):
            record.update(tool_call=self._tools.record(event.tool_call), status=event.status)
        elif isinstance(event, ChatProgress):
            record.update(plan_id=event.plan.plan_id, entries=to_builtins(event.entries), removed=event.removed)
        elif isinstance(event, ChatFile):
            record.update(
                path=event.path,
                text=event.text,
                tool_call_id=event.tool_call_id,
                mime_type=event.mime_type,
                operation=event.operation,
                old_path=event.old_path,
                patch=event.patch,
                source=event.source,
            )
        elif isinstance(event, ChatNotice):
            record["notice"] = to_builtins(event.notice)
        elif isinstance(event, ChatDone):
            response = event.response
            record.update(
                stop_reason=response.stop_reason,
                text=response.text,
                error=to_builtins(response.error) if response.error is not None else None,
                usage=to_builtins(response.usage) if response.usage is not None else None,
            )
            context = self.context()
            record["context"] = context_usage_json(context) if context is not None else None
        elif isinstance(event, ChatError):
            record = error_record(describe(event.error, stderr_tail=self.stderr_tail()))
        elif isinstance(event, ChatReconnecting):
            record.update(attempt=event.attempt, attempts=event.attempts, reason=describe(event.error).message)
        elif isinstance(event, ChatReconnected):
            record["attempt"] = event.attempt
        elif isinstance(event, ChatSessionLost):
            record.update(session_id=getattr(event.error, "session_id", None), message=describe(event.error).message)
        elif isinstance(event, (ChatSubagentStart, ChatSubagentUpdate, ChatSubagentEnd)):
            child = event.subagent
            record.update(session_id=child.session_id, title=child.title, tool_call_id=child.tool_call_id)
            if isinstance(event, ChatSubagentUpdate):
                call = getattr(event.change, "tool_call", None)
                if not isinstance(call, ToolCall):
                    return  # only a child's tool calls are reported line by line; its text comes with its end
                # A child's tool call ids are its own (they may repeat the parent's): one record keeper per child.
                records = self._child_tools.setdefault(child.session_id, _ToolRecords())
                record["tool_call"] = records.record(call)
            elif isinstance(event, ChatSubagentEnd):
                replies = [m.text for m in child.state.messages("agent").values() if m.text]
                record.update(
                    stop_reason=event.stop_reason,
                    text=replies[-1] if replies else "",
                    usage=to_builtins(event.usage) if event.usage is not None else None,
                )
        if getattr(event, "replayed", False):
            record["replayed"] = True  # produced while the connection was down: from the agent's replay
        self.emit(record)

    def history(self, entries: list[TimelineEntry]) -> None:
        for entry in entries:
            if isinstance(entry, Message):
                self.emit({"event": "history", "type": "message", "role": entry.role, "text": entry.text})
            elif isinstance(entry, ToolCall):
                tool_call = self._tools.record(entry, full=True)
                self.emit({"event": "history", "type": "tool_call", "tool_call": tool_call})
            elif isinstance(entry, Plan):
                self.emit({"event": "history", "type": "plan", "entries": to_builtins(entry.entries)})

    def info(self, text: str) -> None:
        Screen(sys.stderr).line(text)

    def usage(self, usage: ContextUsage) -> None:
        self.emit({"event": "usage", **context_usage_json(usage)})

    def permission(
        self, title: str, options: list[tuple[str, str, str]], answer: str | None, *, reason: str | None = None
    ) -> None:
        record: dict[str, Any] = {
            "event": "permission",
            "title": title,
            "options": [{"id": i, "name": n, "kind": k} for i, n, k in options],
            "answer": answer,
        }
        if reason is not None:
            record["reason"] = reason  # the question could not be asked: answered cancelled
        self.emit(record)

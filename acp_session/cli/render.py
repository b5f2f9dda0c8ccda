"""Rendering chat events: a streaming terminal view (plain ANSI escapes) or one JSON object per line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from acp_session.codec import to_builtins
from acp_session.conversation import (
    ChatDone,
    ChatError,
    ChatEvent,
    ChatFile,
    ChatNotice,
    ChatProgress,
    ChatStart,
    ChatText,
    ChatThought,
    ChatToolBegin,
    ChatToolEnd,
    ChatToolUpdate,
    Compaction,
    Message,
    Plan,
    TimelineEntry,
    ToolCall,
)
from acp_session.schema import PlanEntry

__all__ = ["JsonRenderer", "Renderer", "TerminalRenderer", "color_enabled"]

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
CYAN = "\x1b[36m"

_STATUS_COLOR = {"completed": GREEN, "failed": RED, "cancelled": YELLOW, "in_progress": CYAN}
_PLAN_MARK = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def color_enabled(stream: TextIO) -> bool:
    """ANSI styling only on a terminal, and never with ``NO_COLOR`` set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _tool_label(call: ToolCall) -> str:
    return call.title or call.name or call.tool_call_id


class Renderer:
    """What the chat loop talks to; both renderers implement every method."""

    def event(self, event: ChatEvent) -> None:
        raise NotImplementedError

    def history(self, entries: list[TimelineEntry]) -> None:
        raise NotImplementedError

    def info(self, text: str) -> None:
        raise NotImplementedError

    def permission(self, title: str, options: list[tuple[str, str, str]], answer: str | None) -> None:
        """A permission question was answered (``options``: id, name, kind; ``answer``: an option id or None)."""
        raise NotImplementedError

    def break_line(self) -> None:
        """End a partly written line (before a question or a prompt is printed)."""

    def partial_line(self) -> None:
        """Something else (a question, the input prompt) left the cursor mid-line on this output."""

    def line_start(self) -> None:
        """Something else (an echoed input line) moved the cursor to the start of a line."""


class TerminalRenderer(Renderer):
    """Streams text as it arrives; thoughts dimmed, tool calls with their status, the plan, notices."""

    def __init__(self, out: TextIO | None = None, *, color: bool | None = None, err: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err  # progress and hints (``info``); None: sys.stderr at the time
        self.color = color_enabled(self.out) if color is None else color
        self._stream: tuple[str, str] | None = None  # (kind, message id) of the fragment stream being written
        self._col0 = True  # the cursor is at the start of a line
        self._tool_status: dict[str, str] = {}
        self._files: dict[str, str | None] = {}  # path -> text of the files shown in this turn

    def _style(self, text: str, *styles: str) -> str:
        styles = tuple(style for style in styles if style)
        if not self.color or not styles:
            return text
        return "".join(styles) + text + RESET

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._col0 = text.endswith("\n")
            self.out.flush()

    def break_line(self) -> None:
        if not self._col0:
            self._write("\n")
        self._stream = None

    def partial_line(self) -> None:
        self._col0 = False
        self._stream = None

    def line_start(self) -> None:
        self._col0 = True
        self._stream = None

    def _line(self, text: str, *styles: str) -> None:
        self.break_line()
        self._write(self._style(text, *styles) + "\n")

    def _fragment(self, kind: str, message_id: str, text: str, replaced: bool) -> None:
        key = (kind, message_id)
        if self._stream != key or replaced:
            self.break_line()
            self._stream = key
            if kind == "thought":
                self._write(self._style("(thinking) ", DIM))
        self._write(self._style(text, DIM) if kind == "thought" else text)

    def _tool(self, call: ToolCall, status: str, *, force: bool = False) -> None:
        if not force and self._tool_status.get(call.tool_call_id) == status:
            return
        self._tool_status[call.tool_call_id] = status
        label = self._style(_tool_label(call), BOLD)
        state = self._style(status, _STATUS_COLOR.get(status, ""))
        self._line(f"[tool] {label} ({call.kind}): {state}")

    def _file(self, file: ChatFile) -> None:
        # A v1 agent that writes through the client and then reports the diff tells of one write twice, with
        # the same path and text: show it once.
        if file.text is not None and file.path in self._files and self._files[file.path] == file.text:
            return
        self._files[file.path] = file.text
        if file.deleted:
            suffix = " (deleted)"
        elif file.old_path is not None and file.operation in ("move", "copy"):
            suffix = f" ({'moved' if file.operation == 'move' else 'copied'} from {file.old_path})"
        else:
            suffix = ""
        self._line(f"[file] {file.path}{suffix}", CYAN)

    def _plan(self, entries: list[PlanEntry], removed: bool) -> None:
        if removed:
            self._line("[plan] removed", DIM)
            return
        self._line("[plan]", BOLD)
        for entry in entries:
            mark = _PLAN_MARK.get(entry.status, "[?]")
            text = f"  {mark} {entry.content}"
            self._line(text, DIM) if entry.status == "completed" else self._line(text)

    def event(self, event: ChatEvent) -> None:
        kind = type(event)
        if kind is ChatText or kind is ChatThought:
            assert isinstance(event, (ChatText, ChatThought))
            self._fragment(event.kind, event.message_id, event.text, event.replaced)
        elif kind is ChatToolBegin or kind is ChatToolUpdate:
            assert isinstance(event, (ChatToolBegin, ChatToolUpdate))
            self._tool(event.tool_call, event.tool_call.status, force=kind is ChatToolBegin)
        elif kind is ChatToolEnd:
            assert isinstance(event, ChatToolEnd)
            self._tool(event.tool_call, event.status)
        elif kind is ChatProgress:
            assert isinstance(event, ChatProgress)
            self._plan(event.entries, event.removed)
        elif kind is ChatFile:
            assert isinstance(event, ChatFile)
            self._file(event)
        elif kind is ChatNotice:
            assert isinstance(event, ChatNotice)
            notice = event.notice
            detail = f": {notice.description}" if isinstance(notice.description, str) and notice.description else ""
            self._line(f"[{notice.severity}] {notice.title}{detail}", YELLOW)
        elif kind is ChatDone:
            assert isinstance(event, ChatDone)
            reason = event.response.stop_reason or "unknown"
            error = event.response.error
            suffix = f" ({error.message})" if error is not None else ""
            self._line(f"[stop: {reason}]{suffix}", DIM if reason == "end_turn" else YELLOW)
        elif kind is ChatError:
            assert isinstance(event, ChatError)
            self._line(f"[error] {event.error}", RED)
        elif kind is ChatStart:
            self._stream = None
            self._files.clear()

    def history(self, entries: list[TimelineEntry]) -> None:
        for entry in entries:
            kind = type(entry)
            if kind is Message:
                assert isinstance(entry, Message)
                if entry.role == "user":
                    self._line(f"> {entry.text}", BOLD)
                elif entry.role == "thought":
                    self._line(f"(thinking) {entry.text}", DIM)
                else:
                    self._line(entry.text)
            elif kind is ToolCall:
                assert isinstance(entry, ToolCall)
                self._tool(entry, entry.status, force=True)
            elif kind is Plan:
                assert isinstance(entry, Plan)
                self._plan(entry.entries, False)
            elif kind is Compaction:
                self._line("[context compacted]", DIM)
        self._line("--- end of replayed history ---", DIM)

    def info(self, text: str) -> None:
        """Progress and hints: on stderr (the terminal), never among the answers on stdout."""
        self.break_line()
        err = self.err if self.err is not None else sys.stderr
        color = self.color and color_enabled(err) if self.err is None else self.color
        err.write((DIM + text + RESET if color else text) + "\n")
        err.flush()

    def permission(self, title: str, options: list[tuple[str, str, str]], answer: str | None) -> None:
        name = next((n for option_id, n, _ in options if option_id == answer), None)
        self._line(f"[permission] {title}: {name or 'cancelled'}", DIM)


def _tool_json(call: ToolCall) -> dict[str, Any]:
    return {"id": call.tool_call_id, "name": call.name, "title": call.title, "kind": call.kind, "status": call.status}


class JsonRenderer(Renderer):
    """One JSON object per line on stdout, each with an ``event`` key; the stream of a turn ends with ``done``
    or ``error``."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout

    def emit(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def event(self, event: ChatEvent) -> None:
        record: dict[str, Any] = {"event": event.kind}
        if isinstance(event, ChatStart):
            record["message_id"] = event.message_id
        elif isinstance(event, (ChatText, ChatThought)):
            record.update(text=event.text, message_id=event.message_id, replaced=event.replaced)
        elif isinstance(event, (ChatToolBegin, ChatToolUpdate)):
            record["tool_call"] = _tool_json(event.tool_call)
        elif isinstance(event, ChatToolEnd):
            record.update(tool_call=_tool_json(event.tool_call), status=event.status)
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
        elif isinstance(event, ChatError):
            record.update(error=str(event.error), error_type=type(event.error).__name__)
        self.emit(record)

    def history(self, entries: list[TimelineEntry]) -> None:
        for entry in entries:
            if isinstance(entry, Message):
                self.emit({"event": "history", "type": "message", "role": entry.role, "text": entry.text})
            elif isinstance(entry, ToolCall):
                self.emit({"event": "history", "type": "tool_call", "tool_call": _tool_json(entry)})
            elif isinstance(entry, Plan):
                self.emit({"event": "history", "type": "plan", "entries": to_builtins(entry.entries)})

    def info(self, text: str) -> None:
        print(text, file=sys.stderr)

    def permission(self, title: str, options: list[tuple[str, str, str]], answer: str | None) -> None:
        self.emit(
            {
                "event": "permission",
                "title": title,
                "options": [{"id": i, "name": n, "kind": k} for i, n, k in options],
                "answer": answer,
            }
        )

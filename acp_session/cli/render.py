"""Rendering chat events: a streaming terminal view (ANSI escapes; the agent's Markdown rendered with rich when
it is installed) or one JSON object per line (keys in snake_case; the schema: ``cli_json_schema.json``).

The terminal view writes only through ``Screen`` (``screen.py``), which cleans every string of the agent's."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from acp_session.conversation import (
    ChatDone,
    ChatError,
    ChatEvent,
    ChatFile,
    ChatNotice,
    ChatProgress,
    ChatReconnecting,
    ChatStart,
    ChatSubagentEnd,
    ChatSubagentStart,
    ChatSubagentUpdate,
    ChatText,
    ChatThought,
    ChatToolBegin,
    ChatToolEnd,
    ChatToolUpdate,
    Compaction,
    ContextUsage,
    Message,
    Plan,
    TimelineEntry,
    ToolCall,
)
from acp_session.conversation.content import diff_patch_text
from acp_session.conversation.entities import Terminal, TokenUsage
from acp_session.schema import (
    AudioContent,
    Content,
    Diff,
    EmbeddedResource,
    ImageContent,
    PlanEntry,
    ResourceLink,
    TextContent,
)
from acp_session.schema import Terminal as TerminalContent

from .messages import STDERR_LINES, describe
from .safe_text import terminal_safe
from .screen import BOLD, CYAN, DIM, GREEN, RED, YELLOW, Screen, Span, Style, Styled

__all__ = ["Renderer", "TerminalRenderer", "color_enabled", "raw_output_text"]

_STATUS_COLOR: dict[str, Style] = {"completed": GREEN, "failed": RED, "cancelled": YELLOW, "in_progress": CYAN}
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
    return str(call.title or call.name or call.tool_call_id)


def _lines_safe(text: str) -> str:
    """Cleaned before it is cut into lines (a lone carriage return ends a line, as on a terminal)."""
    return terminal_safe(text, newlines=True)


def _block_label(block: Any) -> str:
    """One line for a content block that is not text: an image, audio, a link or an embedded resource."""
    if isinstance(block, ImageContent):
        uri = block.uri if isinstance(block.uri, str) else ""
        return f"[image {block.mime_type}{' ' + uri if uri else ''}]"
    if isinstance(block, AudioContent):
        return f"[audio {block.mime_type}]"
    if isinstance(block, ResourceLink):
        title = block.title if isinstance(block.title, str) else block.name
        return f"[link] {title} <{block.uri}>"
    if isinstance(block, EmbeddedResource):
        return f"[resource] {block.resource.uri}"
    kind = block.get("type") if isinstance(block, dict) else type(block).__name__
    return f"[{kind} content]"


RAW_OUTPUT_LINES = 40
"""At most this many lines of a tool call's ``rawOutput`` are shown (the rest counted)."""

_OUTPUT_KEYS = ("formatted_output", "aggregated_output", "output", "stdout", "result", "text", "content")


def raw_output_text(value: Any) -> str | None:
    """What a person should see of a tool call's ``rawOutput``: a string as it is; for an object its output
    field (``formatted_output``, ``output``, ``stdout``, ...) and ``stderr``; else compact JSON. None: nothing."""
    if value is None or value == "" or value == {} or value == []:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = []
        for key in _OUTPUT_KEYS:
            found = value.get(key)
            if isinstance(found, str) and found.strip():
                parts.append(found)
                break
        stderr = value.get("stderr")
        if isinstance(stderr, str) and stderr.strip():
            parts.append(stderr)
        if parts:
            return "\n".join(part.rstrip("\n") for part in parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _bounded_lines(text: str, limit: int = RAW_OUTPUT_LINES) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"\u2026 {len(lines) - limit} more lines"]


def format_context_usage(usage: ContextUsage) -> str:
    """``context 1,200 / 200,000 tokens (0.6%), cost 0.0042 USD`` (the size and cost when reported)."""
    text = f"context {usage.used:,}"
    if usage.size > 0:
        text += f" / {usage.size:,} tokens ({usage.fraction:.1%})"
    else:
        text += " tokens"
    cost = usage.cost
    if cost is not None:
        text += f", cost {cost.amount:g} {cost.currency}"
    return text


def format_token_usage(usage: TokenUsage) -> str:
    """``1,234 tokens (1,000 in, 234 out, 12 thinking)``: the turn's token counts."""
    parts = [f"{usage.input_tokens:,} in", f"{usage.output_tokens:,} out"]
    for name, count in (
        ("thinking", usage.thought_tokens),
        ("cache read", usage.cached_read_tokens),
        ("cache write", usage.cached_write_tokens),
    ):
        if count:
            parts.append(f"{count:,} {name}")
    return f"{usage.total_tokens:,} tokens ({', '.join(parts)})"


def context_usage_json(usage: ContextUsage) -> dict[str, Any]:
    cost = usage.cost
    return {
        "used": usage.used,
        "size": usage.size,
        "cost": {"amount": cost.amount, "currency": cost.currency} if cost is not None else None,
    }


class ContentTracker:
    """Which content items of each tool call were shown, so each update shows only what is new; an update that
    replaced the content with something else shows it all again."""

    def __init__(self) -> None:
        self._shown: dict[str, list[Any]] = {}

    def new_items(self, call: ToolCall) -> tuple[list[Any], bool]:
        """(items not shown yet, whether the content was replaced since)."""
        shown = self._shown.get(call.tool_call_id, [])
        content = call.content
        # By value: a v1 agent sends the whole content again with each update.
        replaced = len(content) < len(shown) or any(a is not b and a != b for a, b in zip(shown, content, strict=False))
        new = list(content) if replaced else list(content[len(shown) :])
        self._shown[call.tool_call_id] = list(content)
        return new, replaced and bool(shown)

    def clear(self) -> None:
        self._shown.clear()


class Renderer:
    """What the chat loop talks to; both renderers implement every method."""

    before_output: Callable[[], None] = staticmethod(lambda: None)
    """Called before anything is written (the CLI erases its status line there)."""

    stderr_tail: Callable[[], tuple[str, ...]] = staticmethod(lambda: ())
    """The agent's last stderr lines (set by the CLI), shown with a failed turn when its error carries none."""

    def event(self, event: ChatEvent) -> None:
        raise NotImplementedError

    def history(self, entries: list[TimelineEntry]) -> None:
        raise NotImplementedError

    def info(self, text: str) -> None:
        raise NotImplementedError

    def permission(
        self, title: str, options: list[tuple[str, str, str]], answer: str | None, *, reason: str | None = None
    ) -> None:
        """A permission question was answered (``options``: id, name, kind; ``answer``: an option id or None;
        ``reason``: why it could not be asked, when it could not)."""
        raise NotImplementedError

    def usage(self, usage: ContextUsage) -> None:
        """The agent reported how full the context window is (and the session's cost) during the turn."""
        raise NotImplementedError

    def break_line(self) -> None:
        """End a partly written line (before a question or a prompt is printed)."""

    def partial_line(self) -> None:
        """Something else (a question, the input prompt) left the cursor mid-line on this output."""

    def line_start(self) -> None:
        """Something else (an echoed input line) moved the cursor to the start of a line."""


class TerminalRenderer(Renderer):
    """Streams text as it arrives; thoughts dimmed, tool calls with their status, the plan, notices."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        color: bool | None = None,
        err: TextIO | None = None,
        markdown: bool = False,
    ) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err  # progress and hints (``info``); None: sys.stderr at the time
        self.color = color_enabled(self.out) if color is None else color
        self.markdown = markdown and self.color
        """Render the agent's messages as Markdown (rich) instead of streaming them as plain text."""
        self.screen = Screen(self.out, color=self.color, before_write=lambda: self.before_output())
        """Every write to ``out`` goes through it (cleaned, styled)."""
        self._raw_shown: dict[str, Any] = {}  # tool call id -> the rawOutput shown
        self._stream: tuple[str, str] | None = None  # (kind, message id) of the fragment stream being written
        self._col0 = True  # the cursor is at the start of a line
        self._tool_status: dict[str, str] = {}
        self._tool_content = ContentTracker()
        self._terminals_shown: set[str] = set()
        self._child_tools_done: set[tuple[str, str]] = set()  # subagent tool calls shown as ended
        self._files: dict[str, str | None] = {}  # path -> text of the files shown in this turn
        self._text_ended = False  # the last thing written was an agent message's text
        self.terminals: Callable[[str], Terminal | None] = lambda terminal_id: None
        """Looks a terminal up by id (set by the CLI to the session's), to show its output under its tool call."""
        self.client_terminal: Callable[[str], bool] = lambda terminal_id: False
        """Whether a terminal is one the client runs for the agent (protocol v1's ``terminal/create``): its output
        is the agent's to report; it is not unavailable."""

    def _end_markdown(self) -> None:
        if self.screen.markdown_active:
            self.screen.end_markdown()
            self._col0 = True

    def _write(self, *spans: Span, newlines: bool = False, end: str = "") -> None:
        """The one write path: spans cleaned and styled by the screen (``newlines``: they may hold lines)."""
        written = self.screen.write(*spans, newlines=newlines, end=end)
        if written:
            self._col0 = written.endswith("\n")

    def break_line(self) -> None:
        self._end_markdown()
        if not self._col0:
            self._write(end="\n")
        self._stream = None

    def partial_line(self) -> None:
        self._end_markdown()
        self._col0 = False
        self._stream = None

    def line_start(self) -> None:
        self._end_markdown()
        self._col0 = True
        self._stream = None

    @property
    def at_line_start(self) -> bool:
        """Nothing is half written (a status line may be drawn)."""
        return self._col0 and not self.screen.markdown_active

    def _line(self, text: Span | tuple[Span, ...], *styles: Style, newlines: bool = False) -> None:
        """One line (``newlines``: a field that may hold several, e.g. a message replayed)."""
        self.break_line()
        spans = text if isinstance(text, tuple) and not isinstance(text, Styled) else (text,)
        if styles:
            spans = tuple(Styled(s, styles) if isinstance(s, str) else s for s in spans)
        self._write(*spans, newlines=newlines, end="\n")
        self._text_ended = False

    def _fragment(self, kind: str, message_id: str, text: str, replaced: bool) -> None:
        key = (kind, message_id)
        if self._stream != key or replaced:
            follows_text = self._text_ended and self._stream is not None and self._stream[0] == "text"
            self.break_line()
            if kind == "text" and follows_text and not replaced:
                self._write(end="\n")  # two messages in a row: a blank line between them, as in ChatResponse.text
            self._stream = key
            if kind == "thought":
                self._write(Styled("(thinking) ", (DIM,)))
        text = text.replace("\r", "")  # streamed: a "\r\n" may be split between two fragments
        if kind == "text" and self.markdown:
            self.screen.markdown(text)
        else:
            self._write(Styled(text, (DIM,)) if kind == "thought" else text, newlines=True)
        self._stream = key
        self._text_ended = kind == "text"

    def _tool(self, call: ToolCall, status: str, *, force: bool = False) -> None:
        if force or self._tool_status.get(call.tool_call_id) != status:
            self._tool_status[call.tool_call_id] = status
            label = Styled(_tool_label(call), (BOLD,))
            state = Styled(str(status), (_STATUS_COLOR[status],) if status in _STATUS_COLOR else ())
            self._line(("[tool] ", label, f" ({call.kind}): ", state))
        self._tool_items(call)
        if call.is_final:
            self._tool_terminals(call)
            self._raw_output(call)

    def _raw_output(self, call: ToolCall) -> None:
        """A finished tool call's ``rawOutput`` (some agents put a command's output only there), once."""
        value = call.raw_output
        if value is None or self._raw_shown.get(call.tool_call_id, None) == value:
            return
        self._raw_shown[call.tool_call_id] = value
        text = raw_output_text(value)
        if text is None or any(
            isinstance(i, Content) and getattr(i.content, "text", None) == text for i in call.content
        ):
            return
        for line in _bounded_lines(_lines_safe(text)):
            self._line("  " + line, DIM)

    def _tool_items(self, call: ToolCall) -> None:
        items, replaced = self._tool_content.new_items(call)
        if replaced and items:
            self._line("  (content replaced)", DIM)
        for item in items:
            if isinstance(item, Content):
                block = item.content
                if isinstance(block, TextContent):
                    self._indented(_lines_safe(block.text))
                else:
                    self._line("  " + _block_label(block), DIM)
            elif isinstance(item, Diff):
                self._diff(item)
            elif isinstance(item, TerminalContent):
                self._line(f"  [terminal {item.terminal_id}]", DIM)
            else:
                kind = item.get("type") if isinstance(item, dict) else type(item).__name__
                self._line(f"  [{kind} content]", DIM)

    def _indented(self, text: str, *styles: Style) -> None:
        for line in text.rstrip("\n").split("\n"):
            self._line("  " + line, *styles)

    def _diff(self, diff: Diff) -> None:
        patch = diff_patch_text(diff)
        if patch is None:
            for change in diff.changes:
                if isinstance(change, dict):
                    operation, path, old = change.get("operation"), change.get("path"), change.get("oldPath")
                else:
                    operation, path = change.__struct_config__.tag, change.path
                    old = getattr(change, "old_path", None)
                source = f"{old} -> " if isinstance(old, str) else ""
                self._line(f"  {operation} {source}{path}", BOLD)
            return
        for line in _lines_safe(patch).rstrip("\n").split("\n"):
            if line.startswith(("diff ", "--- ", "+++ ", "new file", "deleted file", "index ", "rename ", "similar")):
                style = BOLD
            elif line.startswith("@@"):
                style = CYAN
            elif line.startswith("+"):
                style = GREEN
            elif line.startswith("-"):
                style = RED
            else:
                style = Style("")
            self._line("  " + line, style)

    def _tool_terminals(self, call: ToolCall) -> None:
        """The output of the terminals a finished tool call shows, once each. A terminal the session never
        reported (an agent naming one from before a resume, zed #64538) is said to be unavailable; the rest of
        the call, and of the update, is shown as usual."""
        for terminal_id in call.terminal_ids:
            if terminal_id in self._terminals_shown:
                continue
            terminal = self.terminals(terminal_id)
            if terminal is None:
                if not self.client_terminal(terminal_id):
                    self._terminals_shown.add(terminal_id)
                    self._line(f"  (terminal {terminal_id} unavailable)", DIM)
                continue
            self._terminals_shown.add(terminal_id)
            if terminal.command:
                self._line(f"  $ {terminal.command}", DIM)
            output = _lines_safe(terminal.output_bytes.decode("utf-8", "replace")).strip("\n")
            if output:
                self._indented(output)
            status = terminal.exit_status
            if status is not None:
                code = status.exit_code if isinstance(status.exit_code, int) else None
                signal = status.signal if isinstance(status.signal, str) else None
                detail = f"exit {code}" if code is not None else f"signal {signal}" if signal else "exited"
                self._line(f"  ({detail})", DIM if code == 0 else YELLOW)

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
            usage = event.response.usage
            if usage is not None and usage.total_tokens > 0:  # (a cancelled turn reports 0: nothing to say)
                self._line(f"[usage] {format_token_usage(usage)}", DIM)
            reason = event.response.stop_reason or "unknown"
            error = event.response.error
            suffix = f" ({error.message})" if error is not None else ""
            self._line(f"[stop: {reason}]{suffix}", DIM if reason == "end_turn" else YELLOW)
        elif kind is ChatError:
            assert isinstance(event, ChatError)
            failure = describe(event.error, stderr_tail=self.stderr_tail())
            self._line(f"[error] {failure.message}", RED)
            for line in failure.stderr_tail[-STDERR_LINES:]:
                self._line(f"  | {line}", DIM)
        elif kind is ChatReconnecting:
            assert isinstance(event, ChatReconnecting)
            self.info(f"connection lost, reconnecting ({event.attempt}/{event.attempts})...")
        elif kind is ChatStart:
            self._stream = None
            self._text_ended = False
            self._files.clear()
        elif kind is ChatSubagentStart or kind is ChatSubagentUpdate or kind is ChatSubagentEnd:
            self._subagent(event)

    def _subagent(self, event: ChatEvent) -> None:
        """A subagent's work (Preview), indented under the tool call that started it: its start, its tool calls as
        they begin and end, its reply and its end."""
        child = getattr(event, "subagent", None)
        if child is None:
            return
        name = str(child.title or child.session_id)
        if isinstance(event, ChatSubagentStart):
            via = f" (from tool call {child.tool_call_id})" if child.tool_call_id else ""
            self._line(f"  [subagent {name}] started{via}", CYAN)
        elif isinstance(event, ChatSubagentUpdate):
            change = event.change
            call = getattr(change, "tool_call", None)
            if not isinstance(call, ToolCall):
                return
            label = f"    [tool] {call.title or call.name or call.tool_call_id}"
            if getattr(change, "created", False):
                self._line(label, DIM)
            key = (child.session_id, call.tool_call_id)
            if call.is_final and key not in self._child_tools_done:  # events are read after the fold: once
                self._child_tools_done.add(key)
                self._line(f"{label}: {call.status}", DIM)
        elif isinstance(event, ChatSubagentEnd):
            replies = [m for m in child.state.messages("agent").values() if m.text]
            if replies:
                for line in _lines_safe(replies[-1].text).rstrip("\n").split("\n"):
                    self._line("    " + line)
            usage = f", {format_token_usage(event.usage)}" if event.usage is not None else ""
            self._line(f"  [subagent {name}] ended: {event.stop_reason or 'unknown'}{usage}", DIM)

    def history(self, entries: list[TimelineEntry]) -> None:
        for entry in entries:
            kind = type(entry)
            if kind is Message:
                assert isinstance(entry, Message)
                if entry.role == "user":
                    self._line(f"> {entry.text}", BOLD, newlines=True)
                elif entry.role == "thought":
                    self._line(f"(thinking) {entry.text}", DIM, newlines=True)
                else:
                    self._line(entry.text, newlines=True)
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
        Screen(err, color=color, before_write=self.before_output).line(Styled(text, (DIM,)))

    def permission(
        self, title: str, options: list[tuple[str, str, str]], answer: str | None, *, reason: str | None = None
    ) -> None:
        name = next((n for option_id, n, _ in options if option_id == answer), None)
        if reason is not None:
            self._line(f"[permission] {title}: cancelled (not asked: {reason})", YELLOW)
            return
        self._line(f"[permission] {title}: {name or 'cancelled'}", DIM)

    def usage(self, usage: ContextUsage) -> None:
        self._line(f"[usage] {format_context_usage(usage)}", DIM)

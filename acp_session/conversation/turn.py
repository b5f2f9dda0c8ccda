"""``ChatTurn``: one prompt's foreground work, fed synchronously by the fold and read asynchronously.

The fold calls ``feed`` inline (no task, no await); events go into a deque that the iterator drains.
A reader that falls behind never blocks the connection: consecutive text fragments of one message
are kept as a list of parts and joined on delivery, and repeated updates of one tool call or plan
collapse into the newest, so the queue stays proportional to the distinct things that happened.

Files the agent wrote become ``ChatFile`` events: one per path of a completed tool call's diffs, right after its
``ChatToolEnd`` (tool-call ends are rare, so reading the diffs there costs the chunk path nothing), and one per
``fs/write_text_file`` the client performed, which the conversation feeds in as a ready ``ChatFile``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio

from acp_session._turn_state import TURN_TABLE, TurnEvent, TurnState
from acp_session.conversation.chat_events import (
    ChatDone,
    ChatError,
    ChatEvent,
    ChatFile,
    ChatNotice,
    ChatProgress,
    ChatResponse,
    ChatStart,
    ChatSubagentEnd,
    ChatSubagentStart,
    ChatSubagentUpdate,
    ChatText,
    ChatThought,
    ChatToolBegin,
    ChatToolEnd,
    ChatToolUpdate,
)
from acp_session.conversation.content import diff_patch_text, join_messages, text_of
from acp_session.conversation.entities import Message, TimelineEntry, ToolCall
from acp_session.conversation.events import (
    MessageChanged,
    NoticeReceived,
    PlanChanged,
    StateChanged,
    StateEvent,
    SubagentChanged,
    SubagentEvent,
    ToolCallChanged,
)
from acp_session.interactions import ReaderMark
from acp_session.protocol.base import V1_DIFF_META
from acp_session.schema import TextContent
from acp_session.transport.backend import Flag, Waiter, current_backend

if TYPE_CHECKING:
    from acp_session.session import TrackedPrompt

__all__ = ["ChatTurn", "TurnAlreadyConsumed", "TurnStatus"]

TurnStatus = Literal["sent", "started", "finished"]
_STATUS: dict[TurnState, TurnStatus] = {
    "sent": "sent",
    "accepted": "sent",
    "held": "sent",
    "started": "started",
    "finished": "finished",
    "failed": "finished",
}


class TurnAlreadyConsumed(RuntimeError):
    """A turn is either awaited (one ``ChatResponse``) or iterated (its events), never both."""


class _Fragments:
    """Queued text fragments of one message, joined when delivered."""

    __slots__ = ("cls", "message_id", "parts")

    def __init__(self, cls: type[ChatText] | type[ChatThought], message_id: str, text: str) -> None:
        self.cls = cls
        self.message_id = message_id
        self.parts = [text]


class ChatTurn:
    """Returned by ``Conversation.chat``: the prompt is already sent. ``await`` it for the
    ``ChatResponse`` or ``async for`` over its events; doing both raises ``TurnAlreadyConsumed``."""

    def __init__(self, *, max_entities: int = 0) -> None:
        self.max_entities = max_entities
        """How many entities (``response.steps``) and tool calls (``response.tool_calls``) the turn keeps at most:
        the newest ones (0: all). A ``Conversation`` passes its ``max_history_size``, so a turn an agent floods
        with distinct tool calls never holds more than the history does."""
        self.state: TurnState = "sent"
        """Where the turn is in its lifecycle (``acp_session._turn_state.TURN_TABLE``; ``status`` summarises it)."""
        self.prompt: TrackedPrompt | None = None  # the prompt as the session tracks it
        self.reported_start = False
        """The protocol reports this turn's user message itself when the turn starts (v1: the id is assigned as
        the prompt is sent), so its answer does not start it: a v1 prompt held behind an earlier one starts
        when that one ends."""
        self.message_id: str | None = None
        self.response = ChatResponse(message_id=None)
        self.error: BaseException | None = None
        self._mode: Literal["", "await", "iterate"] = ""
        self._queue: deque[Any] = deque()
        self._waiter: Waiter | None = None  # the iterating reader's, when it waits on asyncio
        self._wake: Flag | None = None  # its flag, when it waits on another loop
        self._finished = anyio.Event()
        self._delivered_end = False  # the iterator handed out ChatDone / ChatError: nothing more to take
        self._yielded = 0  # events the iterator handed out
        self._taken = 0  # of them, those its reader came back for more after (``reader_mark``)
        self._steps: dict[int, TimelineEntry] = {}
        self._last: Any = None
        self._tools: dict[str, ToolCall] = {}
        self._open_tools: set[str] = set()
        self._files: list[ChatFile] = []

    def __repr__(self) -> str:
        return f"<ChatTurn {self.status} message_id={self.message_id!r}>"

    @property
    def known_message_id(self) -> str | None:
        """The user message id the protocol assigned when sending (v1), before any answer."""
        prompt = self.prompt
        return None if prompt is None else prompt.message_id

    @property
    def status(self) -> TurnStatus:
        """sent (not receiving its updates yet), started, or finished (``finish`` or ``fail``)."""
        return _STATUS[self.state]

    @property
    def finished(self) -> bool:
        return self.state == "finished" or self.state == "failed"

    def advance(self, event: TurnEvent) -> None:
        """Move along ``TURN_TABLE`` (``TurnStateError`` for a step the table does not allow)."""
        self.state = TURN_TABLE.next(self.state, event)

    # ------------------------------------------------------------------ fed by the conversation (sync)

    def _push(self, event: ChatEvent) -> None:
        if self._mode == "await":
            return
        queue = self._queue
        if queue:
            tail = queue[-1]
            kind = type(event)
            if type(tail) is kind and (
                (kind is ChatToolUpdate and tail.tool_call is event.tool_call)  # type: ignore[attr-defined]
                or (kind is ChatProgress and tail.plan is event.plan)  # type: ignore[attr-defined]
            ):
                queue[-1] = event
                return
        queue.append(event)
        self._notify()

    def _fragment(self, cls: type[ChatText] | type[ChatThought], message_id: str, text: str) -> None:
        if self._mode == "await" or not text:
            return
        queue = self._queue
        if queue:
            tail = queue[-1]
            if type(tail) is _Fragments and tail.cls is cls and tail.message_id == message_id:
                tail.parts.append(text)
                return
        queue.append(_Fragments(cls, message_id, text))
        self._notify()

    def _notify(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # done: the reader was cancelled while it waited
                waiter.set_result(None)
            return
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    def _step(self, entity: TimelineEntry) -> None:
        if entity is not self._last:
            self._last = entity
            steps = self._steps
            if id(entity) not in steps:
                steps[id(entity)] = entity
                if self.max_entities and len(steps) > self.max_entities:
                    del steps[next(iter(steps))]  # the oldest step: the summary stays bounded

    def start(self, message_id: str) -> None:
        self.advance("start")
        self.message_id = message_id
        self.response.message_id = message_id
        self._push(ChatStart(message_id))

    def feed(self, event: StateEvent | ChatFile) -> None:
        """Turn one fold event into chat events (background tool calls are filtered out by the caller)."""
        kind = type(event)
        if kind is MessageChanged:
            assert isinstance(event, MessageChanged)
            self.feed_message(event)
        elif kind is ToolCallChanged:
            assert isinstance(event, ToolCallChanged)
            self._on_tool(event.tool_call)
        elif kind is PlanChanged:
            assert isinstance(event, PlanChanged)
            if not event.removed:
                self._step(event.plan)
            self._push(ChatProgress(event.plan, event.plan.entries, event.removed))
        elif kind is NoticeReceived:
            assert isinstance(event, NoticeReceived)
            self._push(ChatNotice(event.notice))
        elif kind is ChatFile:  # a write the client performed for the agent (Conversation._on_file_written)
            assert isinstance(event, ChatFile)
            self._file(event)
        elif kind is SubagentChanged:
            assert isinstance(event, SubagentChanged)
            if event.created:
                self._push(ChatSubagentStart(event.subagent))
            self._subagent_state(event.subagent, event.mirrored)
        elif kind is SubagentEvent:
            assert isinstance(event, SubagentEvent)
            change = event.event
            if type(change) is StateChanged:
                self._subagent_state(event.subagent, change)
            else:
                self._push(ChatSubagentUpdate(event.subagent, change))
        elif kind is not StateChanged:
            entity = getattr(event, "compaction", None) or getattr(event, "entry", None)
            if entity is not None:
                self._step(entity)

    def _subagent_state(self, subagent: Any, change: StateEvent | None) -> None:
        """A subagent's state changed in its fold: an idle completion ends its work (reported once)."""
        if type(change) is StateChanged and change.completed:
            assert isinstance(change, StateChanged)
            self._push(ChatSubagentEnd(subagent, change.stop_reason, change.turn_usage))

    def feed_message(self, event: MessageChanged) -> None:
        """The hot path: one chunk appended to a known message becomes one queued (or merged) fragment."""
        message = event.message
        if event.appended is not None:
            self.feed_chunk(message, event.appended)
            return
        if message is not self._last:
            self._step(message)
        role = message.role
        if role == "user":
            return
        if event.created:
            self._fragment(ChatText if role == "agent" else ChatThought, message.message_id, message.text)
        else:
            self._push((ChatText if role == "agent" else ChatThought)(message.text, message.message_id, True))

    def keep_no_events(self) -> None:
        """For ``Conversation.send``: queue no events for a reader. The turn can still be awaited (its
        ``ChatResponse``), not iterated; its work is read through the conversation's streams."""
        if self._mode == "":
            self._mode = "await"
            self._queue.clear()

    def feed_chunk(self, message: Message, block: Any) -> None:
        """``feed_message`` of ``MessageChanged(message, False, block)``, without building the event."""
        if message is not self._last:
            self._step(message)
        if type(block) is TextContent and self._mode != "await":
            role = message.role
            if role != "user":
                self._fragment(ChatText if role == "agent" else ChatThought, message.message_id, block.text)

    def feed_run(self, message: Message, blocks: list[Any]) -> None:
        """A stretch of chunks of ``message`` (``Conversation._on_notes``): what ``feed_chunk`` gives for each
        (the fragments of one message merge), with one step and one fragment for the stretch."""
        if message is not self._last:
            self._step(message)
        if self._mode != "await" and message.role != "user":
            text = text_of(blocks)
            self._fragment(ChatText if message.role == "agent" else ChatThought, message.message_id, text)

    def _on_tool(self, call: ToolCall) -> None:
        tool_call_id = call.tool_call_id
        self._step(call)
        if tool_call_id not in self._tools:
            self._tools[tool_call_id] = call
            self._push(ChatToolBegin(call))
            self._open_tools.add(tool_call_id)
            if self.max_entities and len(self._tools) > self.max_entities:
                self._forget_oldest_tool()
        else:
            self._push(ChatToolUpdate(call))
        if call.is_final and tool_call_id in self._open_tools:
            self._open_tools.discard(tool_call_id)
            self._push(ChatToolEnd(call, call.status))
            if call.status == "completed" and call.content:
                for file in tool_call_files(call):
                    self._file(file)

    def report(self, event: ChatEvent) -> None:
        """An event about the connection, not the agent's work (``ChatReconnecting``, ``ChatReconnected``, ...)."""
        if not self.finished:
            self._push(event)

    def catch_up(self, entries: Sequence[TimelineEntry], delivered: Mapping[int, Any]) -> None:
        """After a reconnect: what this turn's entities (``entries``, from its user message on) gained while the
        connection was down, once, marked ``replayed``. ``delivered`` is what each entity (by ``id``) had shown
        when the connection dropped: a message's text, a tool call's status; a missing entity is new."""
        for entity in entries:
            self._step(entity)
            if type(entity) is Message:
                if entity.role != "user":
                    self._caught_up_text(entity, delivered.get(id(entity)))
            elif type(entity) is ToolCall:
                call = entity
                tool_call_id = call.tool_call_id
                if tool_call_id not in self._tools:
                    self._tools[tool_call_id] = call
                    self._open_tools.add(tool_call_id)
                    self._push(ChatToolBegin(call, replayed=True))
                elif delivered.get(id(call)) != call.status:
                    self._push(ChatToolUpdate(call, replayed=True))
                if call.is_final and tool_call_id in self._open_tools:
                    self._open_tools.discard(tool_call_id)
                    self._push(ChatToolEnd(call, call.status, replayed=True))
                    if call.status == "completed" and call.content:
                        for file in tool_call_files(call):
                            self._file(file)

    def _caught_up_text(self, message: Message, shown: Any) -> None:
        cls = ChatText if message.role == "agent" else ChatThought
        text = message.text
        if isinstance(shown, str) and text.startswith(shown):
            if len(text) > len(shown):
                self._push(cls(text[len(shown) :], message.message_id, replayed=True))
        elif shown is None:
            if text:
                self._push(cls(text, message.message_id, replayed=True))
        else:  # rewritten while away: the whole new text
            self._push(cls(text, message.message_id, True, replayed=True))

    def _file(self, file: ChatFile) -> None:
        self._files.append(file)
        self._push(file)

    def _forget_oldest_tool(self) -> None:
        """Over ``max_entities`` tool calls: the oldest leaves the turn (ended first if still open, so begin and
        end stay paired)."""
        oldest = next(iter(self._tools))
        call = self._tools.pop(oldest)
        if oldest in self._open_tools:
            self._open_tools.discard(oldest)
            self._push(ChatToolEnd(call, call.status))

    def end_tools(self, tool_call_ids: Any = None) -> None:
        """Close tool calls still open (all, or those in ``tool_call_ids``), so begin/end stay paired."""
        for tool_call_id in list(self._open_tools):
            if tool_call_ids is None or tool_call_id in tool_call_ids:
                self._open_tools.discard(tool_call_id)
                call = self._tools[tool_call_id]
                self._push(ChatToolEnd(call, call.status))

    @property
    def open_tool_calls(self) -> list[str]:
        return list(self._open_tools)

    def _fill_response(self) -> ChatResponse:
        response = self.response
        steps = list(self._steps.values())
        response.steps = steps
        response.text = join_messages([s.text for s in steps if type(s) is Message and s.role == "agent"])
        response.thinking = join_messages([s.text for s in steps if type(s) is Message and s.role == "thought"])
        response.tool_calls = list(self._tools.values())
        response.files = list(self._files)
        return response

    def finish(self, state: StateChanged) -> ChatResponse:
        self.advance("finish")
        self.end_tools()
        response = self._fill_response()
        response.stop_reason = state.stop_reason
        response.error = state.error
        response.usage = state.turn_usage
        self._push(ChatDone(response))
        self._finished.set()
        return response

    def fail(self, error: BaseException) -> None:
        if self.finished:
            return  # failing an ended turn changes nothing
        self.advance("fail")
        self.end_tools()
        self.error = error
        self._push(ChatError(error, self._fill_response()))
        self._finished.set()

    def reader_mark(self) -> ReaderMark | None:
        """Where this turn's reader stands, for an interactive request that came now (``interactions.py``): reached
        once it took every event queued now and came back for more. None when it has nothing left to take."""
        target = self._yielded + len(self._queue)
        if self._mode == "await" or self._delivered_end or self._taken >= target:
            return None
        return ReaderMark(lambda: self._taken >= target or self._delivered_end, lambda: self._yielded + self._taken)

    # ------------------------------------------------------------------ read by the application (async)

    async def result(self) -> ChatResponse:
        """Wait for the end of the turn: the response, or the turn's error raised."""
        if self._mode == "iterate":
            raise TurnAlreadyConsumed("this turn is being iterated; it cannot also be awaited")
        self._mode = "await"
        self._queue.clear()
        await self._finished.wait()
        if self.error is not None:
            raise self.error
        return self.response

    def __await__(self) -> Generator[Any, None, ChatResponse]:
        return self.result().__await__()

    def __aiter__(self) -> AsyncIterator[ChatEvent]:
        if self._mode == "await":
            raise TurnAlreadyConsumed("this turn is being awaited; it cannot also be iterated")
        if self._mode == "iterate":
            raise TurnAlreadyConsumed("this turn is already being iterated")
        self._mode = "iterate"
        return self._events()

    async def _events(self) -> AsyncIterator[ChatEvent]:
        queue = self._queue
        # The backend's own primitives: ``anyio.Event()`` looks the backend up on every call, about 10x the cost
        # of the flag, and a reader of many sessions' turns waits once per fragment (docs/performance.md). On
        # asyncio a bare future, which costs no Python call to make, wait on or complete.
        backend = current_backend()
        new_waiter = backend.new_waiter
        new_flag = backend.new_flag
        while True:
            if queue:
                item = queue.popleft()
                self._yielded += 1
                if type(item) is _Fragments:
                    parts = item.parts
                    yield item.cls(parts[0] if len(parts) == 1 else "".join(parts), item.message_id)
                    self._taken += 1
                    continue
                if type(item) is ChatDone or type(item) is ChatError:
                    self._delivered_end = True
                    yield item
                    return
                yield item
                self._taken += 1
                continue
            if new_waiter is not None:
                waiter = self._waiter = new_waiter()
                await waiter
            else:
                wake = self._wake = new_flag()
                await wake.wait()


def tool_call_files(call: ToolCall) -> list[ChatFile]:
    """The ``ChatFile`` events of a completed tool call: one per path its diffs change, in the order first
    changed (a later change of the same path replaces the earlier one)."""
    files: dict[str, ChatFile] = {}
    for diff in call.diffs:
        patch = diff_patch_text(diff)
        meta = diff.meta
        v1 = meta.get(V1_DIFF_META) if isinstance(meta, dict) else None
        for change in diff.changes:
            if isinstance(change, dict):  # a change kind this library does not know, kept as its JSON object
                path, operation = change.get("path"), change.get("operation")
                mime_type, old_path = change.get("mimeType"), change.get("oldPath")
            else:
                path, operation = change.path, change.__struct_config__.tag
                mime_type, old_path = change.mime_type, getattr(change, "old_path", None)
            if not isinstance(path, str):
                continue
            operation = operation if isinstance(operation, str) else ""
            text = None
            if isinstance(v1, dict) and v1.get("path") == path and operation != "delete":
                new_text = v1.get("newText")
                text = new_text if isinstance(new_text, str) else None
            files[path] = ChatFile(
                path,
                text,
                call.tool_call_id,
                mime_type if isinstance(mime_type, str) else None,
                operation,
                old_path if isinstance(old_path, str) else None,
                patch,
                "tool_call",
            )
    return list(files.values())

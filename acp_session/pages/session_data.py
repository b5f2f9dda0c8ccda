"""A recorded transcript (``acp_session.transcript``) as the items of a timeline: each turn, its streamed text and
thoughts (consecutive chunks of one message joined), tool calls with their duration, output and diffs (apart, as
patches, for the page to colour), terminals, permission questions with the answer and the wait, plans, usage,
notices, compactions with their summary, errors; every other message as a plain item. What a ``session/resume``
or ``session/load`` replayed is marked ``replayed`` (its request counts it), so the page can hide a history it
already shows. Each item names the indices of the wire messages it was made from, for the page's raw-wire pane.

Plain JSON values in, plain JSON values out: the page renders them as text only (``html``). Messages are fed one
at a time (``TimelineBuilder.message``) as the transcript is read, and the items kept in an ``ItemStore``, so a
transcript of any size is turned into a page in memory a small multiple of its text.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import os
from array import array
from collections.abc import Iterator
from typing import Any

from ..transcript import TranscriptEntry
from .item_store import LIVE_ITEMS, Item, ItemStore, append_text, encode

__all__ = ["TimelineBuilder"]

_SCRATCH = ("names", "start", "body", "chunks", "diff_body", "diff_chunks")
DIFF_TEXT_LIMIT = 1 << 20
"""A diff given as old and new text (protocol version 1) is made into a patch when both together are at most this
many characters (1 MiB); a larger one shows its new text."""
_CHUNKS = {
    "agent_message_chunk": "text",
    "agent_message": "text",
    "agent_thought_chunk": "thought",
    "agent_thought": "thought",
    "user_message_chunk": "user",
    "user_message": "user",
}


def _text_of(value: Any) -> str:
    """The readable text inside content (a block, a list of blocks, tool call content, a diff's patch)."""
    if isinstance(value, list):
        return "".join(_text_of(v) for v in value)
    if not isinstance(value, dict):
        return ""
    if isinstance(value.get("text"), str):
        return str(value["text"])
    if value.get("type") == "diff":
        patch = value.get("patch")
        if isinstance(patch, dict) and isinstance(patch.get("text"), str):
            return str(patch["text"])
        return f"{value.get('path', '')}\n{value.get('newText', '')}"
    if value.get("type") in ("resource_link", "resource") or "uri" in value:
        return str(value.get("uri", value.get("resource", {}).get("uri", "")))
    return _text_of(value.get("content"))


def _patch_of(value: dict[str, Any]) -> str:
    """A diff content item as a unified patch: the agent's own (``patch``), else made from its old and new text."""
    patch = value.get("patch")
    if isinstance(patch, dict) and isinstance(patch.get("text"), str):
        return str(patch["text"])
    path = str(value.get("path", ""))
    old, new = value.get("oldText"), value.get("newText")
    new_text = new if isinstance(new, str) else ""
    old_text = old if isinstance(old, str) else ""
    if len(old_text) + len(new_text) > DIFF_TEXT_LIMIT:
        return f"{path}\n{new_text}"
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        "/dev/null" if old is None else path,
        path,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _split_content(items: list[Any]) -> tuple[str, str]:
    """A tool call's content as (its text, its diffs as patches)."""
    text, diffs = [], []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "diff":
            diffs.append(_patch_of(item))
        else:
            text.append(_text_of(item) + "\n")
    return "".join(text), "".join(diffs)


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object, or {} for anything else (an agent's message may have any shape)."""
    return value if isinstance(value, dict) else {}


def _decoded(data: Any) -> str:
    if not isinstance(data, str):
        return ""
    try:
        return base64.b64decode(data, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return data


class TimelineBuilder:
    """The timeline of a transcript read message by message; ``spill_dir`` and ``live``: see ``ItemStore``.
    Items are held by their number in the store (``tools``, ``requests``, ``last`` ...), read through ``item``."""

    def __init__(self, spill_dir: str | os.PathLike[str] | None = None, live: int = LIVE_ITEMS) -> None:
        self.store = ItemStore(spill_dir, live)
        self.turn = 0
        self.requests: dict[tuple[str, Any], tuple[int | None, float]] = {}  # (item, when it was sent)
        self.tools: dict[str, int] = {}
        self.terminals: dict[str, int] = {}
        self.last: int | None = None  # the item streamed chunks may join
        self.last_message: Any = None  # the messageId of its chunks: a chunk of another message starts an item
        self.compactions: dict[str, int] = {}
        self.replayed_items = 0  # how many items the replay in flight made
        self.agent: str = ""
        self.replaying: Any = None  # the id of a session/resume or session/load in flight
        self.current_turn: int | None = None  # its duration runs to the idle state (v2) or the answer (v1)
        self.protocol: Any = None

    def item(self, number: int) -> Item:
        return self.store.get(number)

    def add(self, kind: str, t: float, index: int, **fields: Any) -> tuple[int, Item]:
        item: Item = {"kind": kind, "t": t, "turn": self.turn, "messages": array("q", [index]), **fields}
        if self.replaying is not None:
            item["replayed"] = True
            self.replayed_items += 1
        self.last = None
        return self.store.add(item), item

    def items(self) -> Iterator[bytes]:
        """Each item as JSON, in order: a tool call's text made of its chunks and body, scratch fields gone."""
        for item in self.store.items():
            if item["kind"] == "tool":
                item["text"] = str(item.get("chunks", "")) + str(item.get("body", ""))
                diff = str(item.get("diff_chunks", "")) + str(item.get("diff_body", ""))
                if diff:
                    item["diff"] = diff
            for scratch in _SCRATCH:
                item.pop(scratch, None)
            yield encode(item)

    def close(self) -> None:
        self.store.close()

    def message(self, index: int, entry: TranscriptEntry) -> None:
        msg = entry.message
        if not isinstance(msg, dict):
            self.add("error", entry.t, index, title="not JSON", text=str(entry.raw or ""))
            return
        method = msg.get("method")
        params = _obj(msg.get("params"))
        if isinstance(method, str) and method == "session/update":
            self.update(index, entry.t, params)
        elif isinstance(method, str) and "id" in msg:
            self.request(index, entry, method, params, msg["id"])
        elif isinstance(method, str):
            self.add("notification", entry.t, index, title=method, direction=entry.direction)
        else:
            self.response(index, entry, msg)

    def request(self, index: int, entry: TranscriptEntry, method: str, params: dict[str, Any], id: Any) -> None:
        number: int | None
        if method == "session/prompt" and entry.direction == "out":
            self.turn += 1
            number, item = self.add(
                "turn", entry.t, index, title=f"Turn {self.turn}", text=_text_of(params.get("prompt"))
            )
            item["session"] = params.get("sessionId")
            self.current_turn = number
            self.tools, self.terminals = {}, {}  # ids are the agent's and may repeat in a later turn
        elif method == "session/request_permission":
            options = [o for o in params.get("options", []) if isinstance(o, dict)]
            number, item = self.add(
                "permission",
                entry.t,
                index,
                title=str(params.get("title", "")),
                options=[f"{o.get('name', '')} ({o.get('kind', '')})" for o in options],
                names={str(o.get("optionId")): str(o.get("name", "")) for o in options},
                answer=None,
                wait=None,
            )
            subject = _obj(params.get("subject"))
            tool = subject.get("toolCall") or params.get("toolCall") or {}
            if isinstance(tool, dict) and isinstance(tool.get("toolCallId"), str):
                item["tool"] = tool["toolCallId"]
        else:
            number, _ = self.add("request", entry.t, index, title=method, direction=entry.direction)
            if method in ("session/resume", "session/load") and entry.direction == "out":
                self.tools, self.terminals, self.compactions = {}, {}, {}
                self.replaying = id  # what arrives until its answer is the session's history, replayed
                self.replayed_items = 0
        answered_by = "in" if entry.direction == "out" else "out"
        self.requests[(answered_by, id)] = (number, entry.t)

    def response(self, index: int, entry: TranscriptEntry, msg: dict[str, Any]) -> None:
        found = self.requests.pop((entry.direction, msg.get("id")), None)
        number, started = found if found is not None else (None, entry.t)
        replay_ended = entry.direction == "in" and msg.get("id") == self.replaying
        if replay_ended:
            self.replaying = None
            self.tools, self.terminals, self.compactions = {}, {}, {}
        error = msg.get("error")
        if isinstance(error, dict):
            self.add("error", entry.t, index, title=f"error {error.get('code')}", text=str(error.get("message", "")))
        result = _obj(msg.get("result"))
        if number is None:
            return
        item = self.item(number)
        item["messages"].append(index)
        item["duration"] = entry.t - started
        if replay_ended:
            item["replays"] = self.replayed_items  # the page hides or shows them together
        if item["kind"] == "permission":
            outcome = _obj(result.get("outcome"))
            chosen = outcome.get("optionId")
            item["answer"] = item["names"].get(str(chosen), str(chosen)) if chosen else str(outcome.get("outcome"))
            item["wait"] = entry.t - started
        elif item["kind"] == "turn" and isinstance(result.get("stopReason"), str):  # protocol version 1
            usage = _obj(result.get("usage"))
            text = f"{usage.get('inputTokens')} in, {usage.get('outputTokens')} out" if usage else ""
            self.add("done", entry.t, index, title=f"Stop reason: {result['stopReason']}", text=text)
        elif item["title"] == "initialize":
            info = result.get("agentInfo") or result.get("info") or {}
            if isinstance(info, dict):
                self.agent = f"{info.get('name', '')} {info.get('version', '')}".strip()
            self.protocol = result.get("protocolVersion")

    def update(self, index: int, t: float, params: dict[str, Any]) -> None:
        update = _obj(params.get("update"))
        tag = str(update.get("sessionUpdate", ""))
        kind = _CHUNKS.get(tag)
        if kind is not None:
            text = _text_of(update.get("content"))
            message_id = update.get("messageId")
            if self.last is not None and tag.endswith("_chunk") and message_id == self.last_message:
                last = self.item(self.last)
                if last["kind"] == kind:
                    append_text(last, "text", text)
                    last["messages"].append(index)
                    return
            title = {"text": "Agent", "thought": "Thought", "user": "User"}[kind]
            number, _ = self.add(kind, t, index, title=title, text=text)
            if tag.endswith("_chunk"):
                self.last, self.last_message = number, message_id
        elif tag in ("tool_call_update", "tool_call", "tool_call_content_chunk"):
            self.tool(index, t, tag, update)
        elif tag in ("terminal_update", "terminal_output_chunk"):
            self.terminal(index, t, update)
        elif tag == "plan_update" or tag == "plan":
            plan = _obj(update.get("plan")) or update
            entries = plan.get("entries", []) if isinstance(plan, dict) else []
            lines = [f"[{e.get('status', '')}] {e.get('content', '')}" for e in entries if isinstance(e, dict)]
            self.add("plan", t, index, title="Plan", text="\n".join(lines))
        elif tag == "usage_update":
            self.add("usage", t, index, title="Context", text=f"{update.get('used')} of {update.get('size')} tokens")
        elif tag == "state_update":
            self.state(index, t, update)
        elif tag in ("compaction_update", "compaction_summary_chunk"):
            self.compaction(index, t, tag, update)
        elif tag == "notice":
            title = f"Notice ({update.get('severity', '')}): {update.get('title', '')}"
            self.add("notice", t, index, title=title, text=str(update.get("description", "")))
        else:
            self.add("update", t, index, title=tag or "update")

    def tool(self, index: int, t: float, tag: str, update: dict[str, Any]) -> None:
        tool_call_id = str(update.get("toolCallId", ""))
        number = self.tools.get(tool_call_id)
        if number is None:
            self.tools[tool_call_id], item = self.add("tool", t, index, title="", status="", text="", start=t)
            item["body"], item["chunks"] = "", ""
            item["id"] = tool_call_id
        else:
            item = self.item(number)
            item["messages"].append(index)
            self.last = None
        for field, key in (("title", "title"), ("kind", "tool_kind"), ("status", "status"), ("name", "name")):
            if isinstance(update.get(field), str):
                item[key] = update[field]
        if tag == "tool_call_content_chunk":
            text, diff = _split_content([update.get("content")])
            if text:
                append_text(item, "chunks", text)
            if diff:
                append_text(item, "diff_chunks", diff)
            item["text"] = None  # made from chunks and body at the end (``items``)
        elif isinstance(update.get("content"), list):  # an update's content replaces the previous one
            item["body"], item["diff_body"] = _split_content(update["content"])
            item["text"] = None
        if item.get("status") in ("completed", "failed", "cancelled"):
            item["duration"] = t - item["start"]

    def compaction(self, index: int, t: float, tag: str, update: dict[str, Any]) -> None:
        """One item per compaction: its status in the title, its summary as the text."""
        compaction_id = str(update.get("compactionId", ""))
        number = self.compactions.get(compaction_id)
        if number is None:
            self.compactions[compaction_id], item = self.add("compaction", t, index, title="", text="", start=t)
        else:
            item = self.item(number)
            item["messages"].append(index)
            self.last = None
        if tag == "compaction_summary_chunk":
            append_text(item, "text", _text_of(update.get("content")))
        elif isinstance(update.get("status"), str):
            item["status"] = update["status"]
            if update["status"] in ("completed", "failed", "cancelled"):
                item["duration"] = t - item["start"]
            if isinstance(update.get("error"), str):
                item["text"] = f"{item.get('text', '')}\n{update['error']}".strip()
        titles = {"completed": "Context compacted", "failed": "Compaction failed", "cancelled": "Compaction cancelled"}
        item["title"] = titles.get(str(item.get("status")), "Compacting the context")

    def terminal(self, index: int, t: float, update: dict[str, Any]) -> None:
        terminal_id = str(update.get("terminalId", ""))
        number = self.terminals.get(terminal_id)
        if number is None:
            self.terminals[terminal_id], item = self.add("terminal", t, index, title="Terminal", text="", start=t)
        else:
            item = self.item(number)
            item["messages"].append(index)
            self.last = None
        if isinstance(update.get("command"), str):
            item["title"] = f"$ {update['command']}"
        if "data" in update:
            append_text(item, "text", _decoded(update.get("data")))
        status = update.get("exitStatus")
        if isinstance(status, dict):
            item["status"] = f"exit {status.get('exitCode', status.get('signal'))}"
            item["duration"] = t - item["start"]

    def state(self, index: int, t: float, update: dict[str, Any]) -> None:
        if update.get("state") != "idle":
            self.add("state", t, index, title=f"state: {update.get('state')}")
            return
        usage = _obj(update.get("usage")) or None
        text = "" if usage is None else f"{usage.get('inputTokens')} in, {usage.get('outputTokens')} out"
        if self.current_turn is not None:
            turn = self.item(self.current_turn)
            turn["duration"] = t - turn["t"]
            self.current_turn = None
        _, item = self.add("done", t, index, title=f"Stop reason: {update.get('stopReason', '')}", text=text)
        error = update.get("error")
        if isinstance(error, dict):
            item["kind"] = "error"
            item["text"] = f"{error.get('message', '')}\n{text}".strip()

"""The model (v2 types) in protocol v1's words, for a v1 *client* (pure, no I/O): the inverse of ``convert.py``.

The library's client reads a v1 agent into the model; a host that serves a v1 client (``acp_session.host``) has
to say the model's updates and requests in v1 again. What v1 has no word for (state updates, user messages
outside a replay, subagents, display terminals, notices and compaction, boolean config options) is not sent, so
a v1 client only ever sees what its pinned schema knows. A diff that came from a v1 agent keeps its v1 value in
``_meta`` (``V1_DIFF_META``) and goes back to that value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...codec import to_builtins
from ...schema import types as m
from ...schema import unstable as mu
from ...schema.v1.types import STOP_REASON_VALUES
from ..base import V1_DIFF_META
from .convert import content_block_to_v1

__all__ = ["V1UpdateMapper", "config_options_to_v1", "permission_request_to_v1", "stop_reason_to_v1"]

_CHUNKS = {
    m.AgentMessageChunk: "agent_message_chunk",
    m.AgentThoughtChunk: "agent_thought_chunk",
    m.UserMessageChunk: "user_message_chunk",
}
_TOOL_FIELDS = ("title", "kind", "status", "locations", "rawInput", "rawOutput", "_meta")
_META_ONLY = {V1_DIFF_META}


def _content_item(item: Any) -> list[Any]:
    """One model tool-call content item as v1 items (none for what v1 cannot carry)."""
    if isinstance(item, m.Content):
        return [{"type": "content", "content": content_block_to_v1(item.content)}]
    if isinstance(item, m.Terminal):
        return [{"type": "terminal", "terminalId": item.terminal_id}]
    if isinstance(item, m.Diff):
        original = item.meta.get(V1_DIFF_META) if isinstance(item.meta, dict) else None
        if isinstance(original, dict) and isinstance(original.get("path"), str):
            diff = {"type": "diff", "path": original["path"], "newText": original.get("newText") or ""}
            if isinstance(original.get("oldText"), str):
                diff["oldText"] = original["oldText"]
            return [diff]
        patch = item.patch.text if isinstance(item.patch, m.DiffPatch) else ""
        return [{"type": "content", "content": {"type": "text", "text": patch}}] if patch else []
    return []  # v2-only content (a subagent session, unknown kinds)


def _tool_fields(plain: dict[str, Any]) -> dict[str, Any]:
    out = {key: plain[key] for key in _TOOL_FIELDS if plain.get(key) is not None}
    meta = out.get("_meta")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in _META_ONLY}
        if meta:
            out["_meta"] = meta
        else:
            out.pop("_meta")
    return out


def config_options_to_v1(options: Any) -> list[dict[str, Any]]:
    """Model config options in v1's shape (``configId`` -> ``id``, ``groupId`` -> ``group``); boolean options
    are left out (v1 has them only for a client that advertised them)."""
    out: list[dict[str, Any]] = []
    for option in to_builtins(options) if isinstance(options, list) else []:
        if not isinstance(option, dict) or option.get("type") == "boolean":
            continue
        option = {("id" if key == "configId" else key): value for key, value in option.items()}
        choices = option.get("options")
        if isinstance(choices, list):
            option["options"] = [
                {("group" if key == "groupId" else key): value for key, value in choice.items()}
                if isinstance(choice, dict)
                else choice
                for choice in choices
            ]
        out.append(option)
    return out


def stop_reason_to_v1(reason: str | None) -> str:
    """A turn's stop reason as v1 knows it (v2's others, ``error`` among them, read as ``end_turn``)."""
    return reason if reason in STOP_REASON_VALUES else "end_turn"


def permission_request_to_v1(request: m.RequestPermissionRequest) -> dict[str, Any]:
    """v1's permission request: the subject's tool call as a bare ``toolCall`` (with the title), the options."""
    call: dict[str, Any] = {}
    subject = request.subject
    if isinstance(subject, m.ToolCallPermissionSubject):
        plain = to_builtins(subject.tool_call)
        call = {"toolCallId": plain.get("toolCallId"), **_tool_fields(plain)}
        if isinstance(subject.tool_call.content, list):
            call["content"] = [item for c in subject.tool_call.content for item in _content_item(c)]
    call.setdefault("toolCallId", "permission")
    call.setdefault("title", request.title)
    return {"sessionId": request.session_id, "toolCall": call, "options": to_builtins(request.options)}


@dataclass
class V1UpdateMapper:
    """One session's model updates as v1 updates, for one client. Keeps which tool calls were announced (v1's
    first word for a call is ``tool_call``) and their content so far (v1 has no content chunks)."""

    tool_content: dict[str, list[Any]] = field(default_factory=dict)
    _announced: set[str] = field(default_factory=set)

    def reset(self) -> None:
        """Forget what was sent: a ``session/load`` replays the history from its start."""
        self.tool_content.clear()
        self._announced.clear()

    def map(self, update: Any, *, replay: bool = False) -> list[dict[str, Any]]:
        """The v1 updates for one model update (none when v1 has no word for it). The user's message is sent only
        in a replay (``session/load``): a live v1 turn does not echo the prompt."""
        tag = _CHUNKS.get(type(update))
        if tag is not None:
            out: dict[str, Any] = {"sessionUpdate": tag, "content": content_block_to_v1(update.content)}
            return [out]
        if isinstance(update, m.AgentMessage) or (isinstance(update, m.UserMessage) and replay):
            tag = "agent_message_chunk" if isinstance(update, m.AgentMessage) else "user_message_chunk"
            return [{"sessionUpdate": tag, "content": content_block_to_v1(b)} for b in update.content or []]
        if isinstance(update, m.ToolCallUpdated):
            return [self._tool_call(update)]
        if isinstance(update, m.ToolCallContentChunk):
            content = self.tool_content.setdefault(update.tool_call_id, [])
            content.extend(_content_item(update.content))
            return [{"sessionUpdate": "tool_call_update", "toolCallId": update.tool_call_id, "content": list(content)}]
        if isinstance(update, m.PlanUpdate) and isinstance(update.plan, m.PlanItems):
            return [{"sessionUpdate": "plan", "entries": to_builtins(update.plan.entries)}]
        if isinstance(update, m.AvailableCommandsUpdate):
            return [_commands(update.available_commands)]
        if isinstance(update, m.ConfigOptionUpdate):
            options = config_options_to_v1(update.config_options)
            return [{"sessionUpdate": "config_option_update", "configOptions": options}]
        if isinstance(update, m.UsageUpdate):
            plain = to_builtins(update)
            return [plain] if "used" in plain and "size" in plain else []
        if isinstance(update, (m.SessionInfoUpdate, mu.SessionInfoUpdate)):  # type: ignore[attr-defined]
            return [to_builtins(update)]
        return []  # state updates, display terminals, subagents, notices, compaction: not v1's

    def _tool_call(self, update: m.ToolCallUpdated) -> dict[str, Any]:
        plain = to_builtins(update)
        tc = update.tool_call_id
        out: dict[str, Any] = {"toolCallId": tc, **_tool_fields(plain)}
        if isinstance(update.content, list):
            self.tool_content[tc] = [item for c in update.content for item in _content_item(c)]
            out["content"] = list(self.tool_content[tc])
        if tc in self._announced:
            return {"sessionUpdate": "tool_call_update", **out}
        self._announced.add(tc)
        self.tool_content.setdefault(tc, [])
        out.setdefault("title", plain.get("name") or "tool call")  # v1's tool_call requires a title
        return {"sessionUpdate": "tool_call", **out}


def _commands(commands: Any) -> dict[str, Any]:
    out = []
    for command in to_builtins(commands) if isinstance(commands, list) else []:
        if not isinstance(command, dict):
            continue
        command.pop("type", None)
        hint = command.get("input")
        if isinstance(hint, dict):
            hint.pop("type", None)
        out.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": out}

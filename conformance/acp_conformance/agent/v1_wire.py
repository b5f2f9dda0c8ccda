"""The reference agent's v2 session updates and session values in protocol v1's shape (pure, no I/O).

The scenario engine speaks the model (the v2 types). A v1 client gets the same turn in v1's words: chunks
without message ids, a ``tool_call`` the first time an id is seen and ``tool_call_update`` after, tool-call
content as whole lists (v1 has no content chunks), a flat ``plan``, config options keyed ``id`` and modes.
What v1 has no word for (state updates, agent-owned display terminals, subagents, compaction and notices the
client did not ask for) is not sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_session.codec import to_builtins
from acp_session.schema import types as m
from acp_session.schema import unstable as mu

from .config import MODE_VALUES, ConfigValues

__all__ = ["V1_DIFFS_META", "UpdateMapper", "available_commands", "is_idle", "config_options", "modes"]

V1_DIFFS_META = "acpReference/v1Diffs"
"""``_meta`` key of a model diff that also carries each file's old and new text, for v1's diff shape."""

_CHUNKS = {
    m.AgentMessageChunk: "agent_message_chunk",
    m.AgentThoughtChunk: "agent_thought_chunk",
    m.UserMessageChunk: "user_message_chunk",
}
_WHOLE = {m.AgentMessage: "agent_message_chunk", m.UserMessage: "user_message_chunk"}
_TOOL_FIELDS = ("title", "name", "kind", "status", "locations", "rawInput", "rawOutput", "_meta")


def _block_to_v1(block: Any) -> Any:
    """A model content block in v1's wording, the client's own conversion: imported on a v1 session's first use,
    so that a v2 session's agent never loads the v1 adapter and types."""
    from acp_session.protocol.v1.convert import content_block_to_v1

    return content_block_to_v1(block)


def _tool_content(item: Any) -> list[Any]:
    """One model tool-call content item as v1 items (a multi-file diff becomes one diff per file)."""
    if isinstance(item, m.Content):
        return [{"type": "content", "content": _block_to_v1(item.content)}]
    if isinstance(item, m.Terminal):
        return [{"type": "terminal", "terminalId": item.terminal_id}]
    if isinstance(item, m.Diff):
        files = item.meta.get(V1_DIFFS_META) if isinstance(item.meta, dict) else None
        if isinstance(files, list):
            return [{"type": "diff", **f} for f in files if isinstance(f, dict)]
        patch = item.patch.text if isinstance(item.patch, m.DiffPatch) else ""
        return [{"type": "content", "content": {"type": "text", "text": patch}}]
    return []  # v2-only content (a subagent session, unknown kinds)


def config_options(values: ConfigValues, *, boolean: bool) -> list[dict[str, Any]]:
    """The session's options in v1's shape; a boolean one only for a client that advertised it (ACP-CONFIG-003)."""
    out = []
    for option in to_builtins(values.options()):
        if option.get("type") == "boolean" and not boolean:
            continue
        option["id"] = option.pop("configId")
        out.append(option)
    return out


def modes(values: ConfigValues) -> dict[str, Any]:
    """v1 session modes: the ``mode`` config option's values."""
    return {
        "currentModeId": values.mode,
        "availableModes": [{"id": value, "name": name} for value, name in MODE_VALUES.items()],
    }


def available_commands(commands: list[m.AvailableCommand]) -> dict[str, Any]:
    out = []
    for command in to_builtins(commands):
        command.pop("type", None)
        hint = command.get("input")
        if isinstance(hint, dict):
            hint.pop("type", None)
        out.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": out}


@dataclass
class UpdateMapper:
    """One session's v2 updates as v1 updates. Keeps which tool calls were announced and their content."""

    boolean_options: bool = False
    notices: bool = False  # the client advertised session.notices
    compaction: bool = False  # the client advertised session.compaction
    tool_content: dict[str, list[Any]] = field(default_factory=dict)  # tool call -> its content so far
    _announced: set[str] = field(default_factory=set)  # tool calls sent as tool_call already

    def reset(self) -> None:
        """Forget what was sent: a ``session/load`` replays the history from its start."""
        self.tool_content.clear()
        self._announced.clear()

    def map(self, update: Any, *, replay: bool = False) -> list[dict[str, Any]]:
        """The v1 updates for one model update (none when v1 has no word for it). The user's own message is
        only sent when replaying a history (``session/load``): a v1 turn does not echo the prompt."""
        if isinstance(update, (m.AgentMessageChunk, m.AgentThoughtChunk, m.UserMessageChunk)):
            tag = next(tag for chunk_type, tag in _CHUNKS.items() if isinstance(update, chunk_type))
            return [{"sessionUpdate": tag, "content": _block_to_v1(update.content)}]
        if isinstance(update, m.AgentMessage) or (isinstance(update, m.UserMessage) and replay):
            tag = _WHOLE[m.AgentMessage if isinstance(update, m.AgentMessage) else m.UserMessage]
            return [{"sessionUpdate": tag, "content": _block_to_v1(b)} for b in update.content or []]
        if isinstance(update, m.ToolCallUpdated):
            return [self._tool_call(update)]
        if isinstance(update, m.ToolCallContentChunk):
            content = self.tool_content.setdefault(update.tool_call_id, [])
            content.extend(_tool_content(update.content))
            # v1 has no content chunks: the update carries the whole list so far (a copy: it is sent as it is).
            return [{"sessionUpdate": "tool_call_update", "toolCallId": update.tool_call_id, "content": list(content)}]
        if isinstance(update, m.PlanUpdate) and isinstance(update.plan, m.PlanItems):
            return [{"sessionUpdate": "plan", "entries": to_builtins(update.plan.entries)}]
        if isinstance(update, m.AvailableCommandsUpdate):
            return [available_commands(list(update.available_commands))]
        if isinstance(update, m.ConfigOptionUpdate):
            options = [
                {("id" if k == "configId" else k): v for k, v in o.items()} for o in to_builtins(update.config_options)
            ]
            if not self.boolean_options:
                options = [o for o in options if o.get("type") != "boolean"]
            return [{"sessionUpdate": "config_option_update", "configOptions": options}]
        if isinstance(update, (m.UsageUpdate, m.SessionInfoUpdate)):
            return [to_builtins(update)]
        if isinstance(update, m.Notice) and self.notices:
            return [to_builtins(update)]
        if isinstance(update, (m.CompactionUpdate, m.CompactionSummaryChunk)) and self.compaction:
            return [to_builtins(update)]
        return []  # state updates, display terminals, subagents, session messages: v2 only

    def _tool_call(self, update: m.ToolCallUpdated) -> dict[str, Any]:
        plain = to_builtins(update)
        tc = update.tool_call_id
        out: dict[str, Any] = {"toolCallId": tc}
        for key in _TOOL_FIELDS:
            if plain.get(key) is not None:
                out[key] = plain[key]
        if isinstance(update.content, list):
            self.tool_content[tc] = [item for c in update.content for item in _tool_content(c)]
            out["content"] = list(self.tool_content[tc])
        if tc in self._announced:
            return {"sessionUpdate": "tool_call_update", **out}
        self._announced.add(tc)
        self.tool_content.setdefault(tc, [])
        out.setdefault("title", plain.get("name") or "tool call")  # v1's tool_call requires a title
        return {"sessionUpdate": "tool_call", **out}


def is_idle(update: Any) -> bool:
    """The idle state update that ends a v2 turn (v1 ends it with the prompt response instead)."""
    return (
        isinstance(update, (m.StateUpdate, mu.StateUpdate))
        and update.state == "idle"
        and isinstance(update.stop_reason, str)
    )

"""Decode a recorded ACP v2 session (JSON lines) into typed updates and print what happened.

Run: ``python examples/sample_session.py [FILE]`` (default: the bundled ``sample_session.jsonl``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from acp_session import codec
from acp_session.schema import types as t


class Envelope(msgspec.Struct):
    method: str
    params: msgspec.Raw


def describe(update: t.SessionUpdate) -> str:
    if isinstance(update, (t.AgentMessageChunk, t.AgentThoughtChunk, t.UserMessageChunk)):
        text = update.content.text if isinstance(update.content, t.TextContent) else "<non-text>"
        return f"{type(update).__name__:<18} {text}"
    if isinstance(update, (t.UserMessage, t.AgentMessage)):
        blocks = update.content if isinstance(update.content, list) else []
        return f"{type(update).__name__:<18} " + "".join(b.text for b in blocks if isinstance(b, t.TextContent))
    if isinstance(update, t.StateUpdate):
        reason = f" ({update.stop_reason})" if isinstance(update.stop_reason, str) else ""
        return f"{'state':<18} {update.state}{reason}"
    if isinstance(update, t.ToolCallUpdated):
        title = update.title if isinstance(update.title, str) else ""
        return f"{'tool call':<18} {update.tool_call_id} {title} [{update.status or ''}]"
    if isinstance(update, t.PlanUpdate) and isinstance(update.plan, t.PlanItems):
        return f"{'plan':<18} " + "; ".join(f"{e.content} ({e.status})" for e in update.plan.entries)
    if isinstance(update, t.UsageUpdate):
        return f"{'usage':<18} {update.used}/{update.size} tokens"
    if isinstance(update, t.UnknownSessionUpdate):
        kind = "extension" if update.is_extension else "future ACP update"
        return f"{'unknown':<18} {update.tag} ({kind}, kept as raw JSON)"
    return type(update).__name__


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("sample_session.jsonl")
    decode_envelope = msgspec.json.Decoder(Envelope).decode
    decode_params = codec.decoder(t.UpdateSessionNotification)
    for line in path.read_bytes().splitlines():
        envelope = decode_envelope(line)
        if envelope.method == "session/update":
            print(describe(decode_params(envelope.params).update))


if __name__ == "__main__":
    main()

"""Preview features against an agent built on the official TypeScript SDK's v2 ``agent()`` app (ts_agent.mjs):
usage on the idle state update, fork, set_title, a system prompt, a subagent doing a tool call; and nothing the
SDK agent sent is lost by our types (its recorded wire compared field by field)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import ChatSubagentEnd, ChatSubagentStart, Message, ToolCall
from acp_session.transcript import wire_losses

from .conftest import TS_AGENT

pytestmark = pytest.mark.anyio


async def test_preview_features_against_the_sdk_agent(node: str, tmp_path: Path) -> None:
    record = tmp_path / "ts_agent.jsonl"
    wire = tmp_path / "wire.jsonl"
    builder = ClientBuilder("acp-session-interop", "1.0").record_transcript(wire)
    async with builder.spawn([node, str(TS_AGENT), "--record", str(record)]) as client:
        for method in ("session/fork", "session/set_title"):
            assert client.agent.supports(method)
        assert client.agent.system_prompt_modes == {"append"}
        with anyio.fail_after(30):
            conversation = await client.start_conversation(tmp_path, system_prompt="Answer briefly.")
            reply = await conversation.chat_to_completion("/system")
            assert reply.text == "System prompt (append): Answer briefly."
            usage = (await conversation.chat_to_completion("/usage")).usage
            assert usage is not None and (usage.total_tokens, usage.cached_read_tokens) == (12, 2)
            assert await conversation.session.set_title("  Interop  ") == "Interop"
            events = [event async for event in conversation.chat("/subagent")]
            fork = await conversation.fork(tmp_path)
            forked = await fork.chat_to_completion("/system")
        assert forked.text == "System prompt (append): Answer briefly."  # the fork kept the source's
        assert conversation.state.session_info.title == "Interop"
        (child,) = conversation.subagents.values()
        assert child.title == "Reader" and child.cancellable
        assert (
            child.tool_call_id is not None and conversation.state.tool_calls[child.tool_call_id].title == "Delegating"
        )
        kinds = [type(entry) for entry in child.history()]
        assert ToolCall in kinds and Message in kinds
        assert child.usage is not None and child.usage.total_tokens == 5
        assert [type(e) for e in events if isinstance(e, (ChatSubagentStart, ChatSubagentEnd))] == [
            ChatSubagentStart,
            ChatSubagentEnd,
        ]
        assert [m.text for m in fork.messages()][: len(conversation.messages())] == [
            m.text for m in conversation.messages()
        ]
    rows = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    (new,) = [r["msg"] for r in rows if r["dir"] == "in" and r["msg"].get("method") == "session/new"]
    assert new["params"]["systemPrompt"] == {"mode": "append", "content": [{"type": "text", "text": "Answer briefly."}]}
    assert wire_losses(wire) == []

"""W3C trace context against the official TypeScript SDK's v2 agent (ts_agent.mjs): an instrumented client's
``session/prompt`` arrives with the turn span's ``traceparent`` in ``_meta`` (as the SDK hands it to the agent's
handler), and the agent's permission request, which propagates it, is linked back to that span."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.interop.test_ts_agent import Recorded
from tests.telemetry.support import in_memory, traced_builder

from .conftest import TS_AGENT

pytestmark = pytest.mark.anyio


async def test_the_ts_agent_receives_traceparent_and_its_permission_request_links_back(
    node: str, tmp_path: Path
) -> None:
    telemetry = in_memory()
    record = tmp_path / "ts_agent.jsonl"
    builder = traced_builder(telemetry, lambda request: "allow-once")
    with anyio.fail_after(30):
        async with builder.spawn([node, str(TS_AGENT), "--record", str(record)]) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/permission")
            assert reply.stop_reason == "end_turn"

    [turn] = telemetry.named("invoke_agent")
    assert turn.name == "invoke_agent acp-interop-ts-agent" and turn.context is not None
    traceparent = f"00-{turn.context.trace_id:032x}-{turn.context.span_id:016x}-{turn.context.trace_flags:02x}"
    recorded = Recorded(record)
    [prompt] = recorded.requests("session/prompt")
    assert prompt["params"]["_meta"]["traceparent"] == traceparent  # on the wire
    handed = [m for m in recorded.lines("meta") if m["method"] == "session/prompt"]
    assert handed == [{"method": "session/prompt", "meta": {"traceparent": traceparent}}]  # through the SDK
    [initialize] = recorded.requests("initialize")
    [init_span] = telemetry.named("initialize")
    assert init_span.context is not None
    assert initialize["params"]["_meta"]["traceparent"].split("-")[2] == f"{init_span.context.span_id:016x}"

    [permission] = telemetry.named("session/request_permission")
    assert [(link.context.trace_id, link.context.span_id) for link in permission.links] == [
        (turn.context.trace_id, turn.context.span_id)
    ]


async def test_a_v1_turn_against_the_ts_v1_agent_is_the_same_span_tree(ts_v1_agent: list[str], tmp_path: Path) -> None:
    """Protocol version 1 (the v1 SDK's example agent): the turn ends with the prompt's answer (its stop reason
    reaches the span through the adapter's idle state), each tool call is a child, each permission question
    sits under its tool call, and ``session/prompt`` carries the trace context in ``_meta`` on the v1 wire too."""
    telemetry = in_memory()
    transcript = tmp_path / "wire.jsonl"
    builder = traced_builder(telemetry, lambda request: "allow").record_transcript(transcript)
    with anyio.fail_after(60):
        async with builder.spawn(ts_v1_agent) as client:
            assert client.protocol.version == 1
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("Hello, agent")
            assert reply.stop_reason == "end_turn"
    [turn] = telemetry.named("invoke_agent")
    attributes = dict(turn.attributes or {})
    assert attributes["acp.protocol.version"] == 1 and attributes["acp.stop_reason"] == "end_turn"
    tools = telemetry.children(turn)
    assert [t.name for t in tools] == ["execute_tool", "execute_tool"] and attributes["acp.turn.tool_calls"] == 2
    assert all((t.attributes or {})["acp.tool_call.status"] == "completed" for t in tools)
    questions = [q for t in tools for q in telemetry.children(t)]
    assert questions and all(q.name == "session/request_permission" for q in questions)
    assert turn.context is not None
    sent = [json.loads(line)["msg"] for line in transcript.read_text().splitlines()]
    [prompt] = [m for m in sent if m.get("method") == "session/prompt"]
    assert prompt["params"]["_meta"]["traceparent"].split("-")[2] == f"{turn.context.span_id:016x}"

"""Spans and metrics of whole turns against the reference agent (a real subprocess), on asyncio and trio, read
back from the OpenTelemetry SDK's in-memory exporters; and the trace context the requests carry in ``_meta``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from acp_session import ClientBuilder
from acp_session.client.connection import hub_of
from acp_session.schema.types import RequestPermissionRequest
from tests.telemetry.support import REFERENCE, in_memory, traced_builder

pytestmark = pytest.mark.anyio


async def approve_slowly(request: RequestPermissionRequest) -> str:
    await anyio.sleep(0.05)  # the human thinks
    return "allow-once"


async def test_a_turn_with_a_tool_call_and_a_permission_is_one_span_tree(tmp_path: Path) -> None:
    telemetry = in_memory()
    builder = traced_builder(telemetry, approve_slowly)
    with anyio.fail_after(30):
        async with builder.spawn(REFERENCE) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/permission")
            assert reply.stop_reason == "end_turn"
            session_id = conversation.session_id

    [initialize] = telemetry.named("initialize")
    assert initialize.kind is SpanKind.CLIENT and initialize.parent is None
    assert initialize.attributes is not None
    assert initialize.attributes["gen_ai.agent.name"] == "acp-reference-agent"
    assert initialize.attributes["acp.protocol.version"] == 2

    [opened] = telemetry.named("session/new")
    assert opened.attributes is not None and opened.attributes["acp.session.id"] == session_id

    [turn] = telemetry.named("invoke_agent")
    assert turn.name == "invoke_agent acp-reference-agent" and turn.kind is SpanKind.CLIENT
    attributes = dict(turn.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.conversation.id"] == attributes["acp.session.id"] == session_id
    assert attributes["acp.protocol.version"] == 2
    assert attributes["acp.stop_reason"] == "end_turn"
    assert attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert attributes["acp.turn.tool_calls"] == 1
    assert attributes["acp.turn.chunks"] == len(reply.text.split())  # the reply streamed word by word
    assert 0 < attributes["acp.turn.time_to_first_chunk"] < (turn.end_time - turn.start_time) / 1e9  # type: ignore[operator]

    # The tree: the turn, its tool call under it, the permission question under the tool call it asks about.
    [tool] = telemetry.children(turn)
    assert tool.name == "execute_tool run_command"
    tool_attributes = dict(tool.attributes or {})
    assert {
        key: tool_attributes[key] for key in ("acp.tool_call.kind", "acp.tool_call.status", "acp.tool_call.title")
    } == {
        "acp.tool_call.kind": "execute",
        "acp.tool_call.status": "completed",
        "acp.tool_call.title": "rm -rf build/",
    }
    assert tool_attributes["acp.tool_call.duration"] >= 0.05  # it waited for the human
    [permission] = telemetry.children(tool)
    assert permission.name == "session/request_permission"
    permission_attributes = dict(permission.attributes or {})
    assert permission_attributes["acp.permission.outcome"] == "selected"
    assert permission_attributes["acp.permission.option_id"] == "allow-once"
    assert permission_attributes["acp.permission.option_kind"] == "allow_once"
    assert permission_attributes["acp.permission.wait"] >= 0.05
    assert permission_attributes["gen_ai.tool.call.id"] == tool_attributes["gen_ai.tool.call.id"]
    assert {s.context.trace_id for s in (turn, tool, permission)} == {turn.context.trace_id}  # type: ignore[union-attr]

    [duration] = telemetry.metric_points("gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.operation.name"] == "invoke_agent"
    [first_chunk] = telemetry.metric_points("gen_ai.client.operation.time_to_first_chunk")
    assert first_chunk.count == 1 and 0 < first_chunk.sum <= duration.sum


async def test_token_usage_a_failed_turn_and_a_refused_permission(tmp_path: Path) -> None:
    telemetry = in_memory()
    builder = traced_builder(telemetry, lambda request: "reject-once")
    with anyio.fail_after(30):
        async with builder.spawn([*REFERENCE, "--preview"]) as client:
            conversation = await client.start_conversation(str(tmp_path))
            await conversation.chat_to_completion("/turn-usage")
            await conversation.chat_to_completion("/permission")
            await conversation.chat_to_completion("/fail")

    usage, refused, failed = telemetry.named("invoke_agent")
    attributes = dict(usage.attributes or {})
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (100, 40)
    assert (attributes["acp.usage.total_tokens"], attributes["acp.usage.thought_tokens"]) == (150, 10)
    assert (attributes["acp.context.used"], attributes["acp.context.size"]) == (2400, 200000)
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in telemetry.metric_points("gen_ai.client.token.usage")}
    assert tokens == {"input": 100, "output": 40}

    [tool] = telemetry.children(refused)
    assert (tool.attributes or {})["acp.tool_call.status"] == "failed" and tool.status.status_code is StatusCode.ERROR
    [permission] = telemetry.children(tool)
    assert (permission.attributes or {})["acp.permission.outcome"] == "selected"
    assert (permission.attributes or {})["acp.permission.option_kind"] == "reject_once"

    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["acp.stop_reason"] == "error"


async def test_requests_carry_the_current_trace_context_in_meta(tmp_path: Path) -> None:
    telemetry = in_memory()
    transcript = tmp_path / "wire.jsonl"
    builder = ClientBuilder("traced", "1.0").instrument(telemetry.tracer_provider).record_transcript(transcript)
    tracer = telemetry.tracer_provider.get_tracer("the-editor")
    with anyio.fail_after(30):
        with tracer.start_as_current_span("user clicks send") as outer:
            async with builder.spawn(REFERENCE) as client:
                conversation = await client.start_conversation(str(tmp_path))
                await conversation.chat_to_completion("hello")
    spans = {span.name: span for span in telemetry.finished()}
    requests = outgoing_requests(transcript)
    for method, span_name in (
        ("initialize", "initialize"),
        ("session/new", "session/new"),
        ("session/prompt", "invoke_agent acp-reference-agent"),
    ):
        span = spans[span_name]
        assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
        context = span.context
        assert context is not None
        expected = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
        assert requests[method]["params"]["_meta"]["traceparent"] == expected, method


MINE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def outgoing_requests(transcript: Path) -> dict[str, dict[str, Any]]:
    sent = [json.loads(line)["msg"] for line in transcript.read_text().splitlines()]
    return {m["method"]: m for m in sent if "method" in m and "id" in m}


@pytest.mark.parametrize("propagate", [True, False])
async def test_the_callers_own_meta_keys_win_and_propagation_can_be_off(tmp_path: Path, propagate: bool) -> None:
    telemetry = in_memory()
    transcript = tmp_path / "wire.jsonl"
    builder = (
        ClientBuilder("traced", "1.0")
        .instrument(telemetry.tracer_provider, propagate=propagate)
        .record_transcript(transcript)
    )
    with anyio.fail_after(30):
        async with builder.spawn(REFERENCE) as client:
            await client.new_session(str(tmp_path))
            await client.request("session/list", {"_meta": {"traceparent": MINE}})
    requests = outgoing_requests(transcript)
    assert requests["session/list"]["params"]["_meta"] == {"traceparent": MINE}  # the caller's, as given
    assert ("traceparent" in requests["session/new"]["params"].get("_meta", {})) is propagate
    assert telemetry.named("session/new") and telemetry.named("session/list")  # spans either way


async def test_off_by_default_and_turned_off_again() -> None:
    builder = ClientBuilder("plain", "1.0")
    assert builder._instrumentation is None
    assert builder.instrument().instrument(enabled=False)._instrumentation is None


async def test_the_reconnect_span_is_current_for_the_attempt_and_records_a_failure(tmp_path: Path) -> None:
    """The hook the reconnect logic calls (``hub.telemetry.reconnect(attempt)``): a span per attempt, the new
    connection's requests under it, an error when the attempt fails."""
    telemetry = in_memory()
    builder = ClientBuilder("traced", "1.0").instrument(telemetry.tracer_provider)
    instrumentation = builder._instrumentation
    assert instrumentation is not None
    with anyio.fail_after(30):
        with pytest.raises(OSError), instrumentation.reconnect(1, "stdio"):
            raise OSError("the agent is gone")
        with instrumentation.reconnect(2, "stdio"):
            async with builder.spawn(REFERENCE) as client:
                await client.new_session(str(tmp_path))
                with hub_of(client).telemetry.reconnect(3) as span:  # type: ignore[union-attr]
                    assert span.is_recording()
    attempts = telemetry.named("acp reconnect")
    failed, succeeded, third = sorted(attempts, key=lambda span: (span.attributes or {})["acp.reconnect.attempt"])
    assert failed.status.status_code is StatusCode.ERROR and (failed.attributes or {})["acp.reconnect.attempt"] == 1
    assert (succeeded.attributes or {})["acp.reconnect.transport"] == "stdio"
    assert (third.attributes or {})["gen_ai.agent.name"] == "acp-reference-agent"
    assert succeeded.context is not None
    for name in ("initialize", "session/new"):
        [span] = telemetry.named(name)
        assert span.parent is not None and span.parent.span_id == succeeded.context.span_id


async def test_a_turn_still_running_when_the_connection_ends_ends_in_error(tmp_path: Path) -> None:
    telemetry = in_memory()
    builder = ClientBuilder("traced", "1.0").instrument(telemetry.tracer_provider)
    with anyio.fail_after(30):
        async with builder.spawn(REFERENCE) as client:
            session = await client.new_session(str(tmp_path))
            await session.send_prompt("/slow 100")  # answered at once; the turn streams for ten seconds
            while session.track.state != "running":
                await anyio.sleep(0.01)
            await anyio.sleep(0.3)
    [turn] = telemetry.named("invoke_agent")
    assert turn.status.status_code is StatusCode.ERROR
    assert (turn.attributes or {})["error.type"] == "ConnectionError"
    assert 0 < (turn.attributes or {})["acp.turn.chunks"] < 100


async def test_a_real_reconnect_is_a_span_with_the_new_initialize_and_resume_under_it(tmp_path: Path) -> None:
    """The agent killed under a reconnect policy: the reconnect logic wraps its attempt in the reconnect span, so
    the restarted agent's ``initialize`` and the session's ``session/resume`` are its children."""
    import os
    import signal
    import sys

    telemetry = in_memory()
    builder = (
        ClientBuilder("traced", "1.0")
        .instrument(telemetry.tracer_provider)
        .reconnect(attempts=3, backoff=0.05, deadline=60.0, idle_timeout=None)
    )
    argv = [sys.executable, "-m", "acp_conformance.agent", "--store", str(tmp_path / "store.json")]
    reconnected = anyio.Event()
    with anyio.fail_after(60):
        async with builder.spawn(argv) as client:
            client.reconnection.on_event(
                lambda event: reconnected.set() if type(event).__name__ == "Reconnected" else None
            )
            conversation = await client.start_conversation(str(tmp_path))
            await conversation.chat_to_completion("hello")
            transport: Any = conversation.session.connection.rpc.transport
            pid = int(getattr(transport, "inner", transport).pid)
            os.kill(pid, signal.SIGKILL)
            await reconnected.wait()
            assert (await conversation.chat_to_completion("hello again")).stop_reason == "end_turn"
    [attempt] = telemetry.named("acp reconnect")
    attributes = dict(attempt.attributes or {})
    assert attributes["acp.reconnect.attempt"] == 1 and attributes["gen_ai.agent.name"] == "acp-reference-agent"
    assert attempt.status.status_code is not StatusCode.ERROR and attempt.context is not None
    initializes = telemetry.named("initialize")
    first, again = sorted(initializes, key=lambda span: span.start_time or 0)  # the first connection's, the new one's
    assert first.parent is None and again.parent is not None and again.parent.span_id == attempt.context.span_id
    [resume] = telemetry.named("session/resume")
    assert resume.parent is not None and resume.parent.span_id == attempt.context.span_id

"""``HostOptions(instrument=True)`` (``acp-session serve --otel``): the host's turns through it are OpenTelemetry
spans (the library's client instrumentation on the host's connection to the agent), on both backends."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from acp_session.host import HostOptions, open_host
from tests.remote_server.raw_client import RawAcp, text_of
from tests.telemetry.support import in_memory

pytestmark = pytest.mark.anyio


async def test_a_turn_through_the_host_is_a_span(tmp_path: Path) -> None:
    telemetry = in_memory()
    options = HostOptions(
        agent=[sys.executable, "-m", "acp_conformance.agent"],
        instrument=True,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    async with open_host(options) as host, httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        assert host.url is not None
        acp = RawAcp(client, host.url, tg)
        session = await acp.start(str(tmp_path))
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/slow 2"}]}
        await acp.send_request("session/prompt", prompt, session)
        assert text_of(await acp.until_idle(session)).endswith("chunk 2. ")
        tg.cancel_scope.cancel()
    names = [span.name for span in telemetry.spans.get_finished_spans()]
    assert "initialize" in names and any(name.startswith("invoke_agent") for name in names), names
    turn = next(s for s in telemetry.spans.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert turn.attributes is not None and turn.attributes.get("acp.session.id") == session


CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_PARENT = f"00-{CLIENT_TRACE}-b7ad6b7169203331-01"
ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


def _traced_host(telemetry: Any) -> HostOptions:
    return HostOptions(
        agent=[sys.executable, "-m", "acp_conformance.agent"],
        permission_timeout=60,
        instrument=True,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )


def _server_spans(telemetry: Any, name: str) -> list[Any]:
    return [
        s for s in telemetry.named(name) if s.kind == SpanKind.SERVER and s.instrumentation_scope.name.endswith("host")
    ]


async def test_a_prompt_relayed_by_the_host_continues_the_clients_trace(tmp_path: Path) -> None:
    """The client's ``traceparent`` in ``_meta``: the host's ``session/prompt`` span is in the client's trace, and
    the turn it relays to the agent (the host's ``invoke_agent``) is its child; attach and connection spans too."""
    telemetry = in_memory()
    async with open_host(_traced_host(telemetry)) as host, httpx.AsyncClient() as client:
        assert host.url is not None
        async with anyio.create_task_group() as tg:
            acp = RawAcp(client, host.url, tg)
            session = await acp.start(str(tmp_path))
            prompt = {
                "sessionId": session,
                "prompt": [{"type": "text", "text": "/slow 2"}],
                "_meta": {"traceparent": CLIENT_PARENT},
            }
            await acp.send_request("session/prompt", prompt, session)
            await acp.until_idle(session)
            resumed = {"sessionId": session, "cwd": str(tmp_path), "mcpServers": [], "replayFrom": {"type": "start"}}
            assert "result" in await acp.call("session/resume", resumed, session)
            tg.cancel_scope.cancel()
        connection = acp.connection_id
    (relayed,) = _server_spans(telemetry, "session/prompt")
    assert f"{relayed.context.trace_id:032x}" == CLIENT_TRACE
    assert relayed.parent is not None and f"{relayed.parent.span_id:016x}" == "b7ad6b7169203331"
    assert relayed.attributes["acp.session.id"] == session and relayed.attributes["acp.host.client"] == connection
    (turn,) = telemetry.named("invoke_agent")
    assert turn.parent is not None and turn.parent.span_id == relayed.context.span_id
    (made,) = _server_spans(telemetry, "session/new")
    assert made.attributes["acp.session.id"] == session
    (attached,) = _server_spans(telemetry, "session/resume")
    assert attached.attributes["acp.host.replayed"] >= 4  # the turn's updates, replayed from the start
    (conn,) = telemetry.named("acp host connection")
    assert conn.attributes == {"acp.host.client": connection, "acp.host.profile": "http"}
    assert made.parent is not None and made.parent.span_id == conn.context.span_id  # no traceparent: the connection's


async def test_a_permission_relayed_to_two_clients_is_a_span_each_and_names_who_answered(tmp_path: Path) -> None:
    """Asked of two clients: a ``session/request_permission`` client span for each (carrying its trace context in
    ``_meta``), the answered one with its outcome, the other withdrawn; the host's span of the agent's
    request names the client whose answer won."""
    telemetry = in_memory()
    cwd = str(tmp_path)
    async with open_host(_traced_host(telemetry)) as host, httpx.AsyncClient() as one, httpx.AsyncClient() as two:
        assert host.url is not None
        async with anyio.create_task_group() as tg:
            a, b = RawAcp(one, host.url, tg), RawAcp(two, host.url, tg)
            session = await a.start(cwd)
            await b.connect()
            await b.open_stream(session)
            resumed = {"sessionId": session, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
            assert "result" in await b.call("session/resume", resumed, session)
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/permission"}]}
            await a.send_request("session/prompt", prompt, session)
            is_ask = lambda stream, m: m.get("method") == "session/request_permission"  # noqa: E731
            asked_a, asked_b = await a.next_message(is_ask), await b.next_message(is_ask)
            assert (await b.post({"jsonrpc": "2.0", "id": asked_b["id"], "result": ALLOW}, session)).status_code == 202
            await a.next_message(lambda stream, m: m.get("method") == "$/cancel_request")
            await a.until_idle(session)
            tg.cancel_scope.cancel()
    relays = [s for s in telemetry.named("session/request_permission") if s.kind == SpanKind.CLIENT]
    by_client = {s.attributes["acp.host.client"]: s for s in relays}
    assert set(by_client) == {a.connection_id, b.connection_id}
    answered, withdrawn = by_client[b.connection_id], by_client[a.connection_id]
    assert answered.attributes["acp.permission.outcome"] == "selected"
    assert answered.attributes["acp.permission.option_id"] == "allow-once"
    assert (
        withdrawn.attributes["acp.permission.outcome"] == "withdrawn"
        and withdrawn.status.status_code != StatusCode.ERROR
    )
    for asked, span in ((asked_a, withdrawn), (asked_b, answered)):
        trace_id = asked["params"]["_meta"]["traceparent"].split("-")[1]
        assert trace_id == f"{span.context.trace_id:032x}"
    (agent_asked,) = [s for s in telemetry.named("session/request_permission") if s.kind == SpanKind.SERVER]
    assert agent_asked.attributes["acp.host.answered_by"] == b.connection_id
    assert all(s.parent is not None and s.parent.span_id == agent_asked.context.span_id for s in relays)

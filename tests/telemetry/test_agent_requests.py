"""Spans of the requests agents send the client (``fs/*``, ``terminal/*``, ``elicitation/create``, extension
methods, ``session/request_permission``), on asyncio and trio, from real agent subprocesses: the reference agent
speaking v1 to a client with its file system and terminals, the v1 provider agent (which sends whatever its
prompt's script says, ``_meta`` included) and the scripted v2 agent. Read back from the SDK's in-memory exporter:
names, kinds, parents, links, attributes and the JSON-RPC error codes the agent was answered with."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import SpanKind, StatusCode

from acp_session import ClientBuilder
from acp_session.schema.types import ElicitationAcceptAction
from tests.client.support import scripted, sent
from tests.providers.agent_support import agent_argv, answers, run_steps
from tests.telemetry.support import REFERENCE, Telemetry, in_memory

pytestmark = pytest.mark.anyio

MINE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
MINE_TRACE, MINE_SPAN = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331


def traced(telemetry: Telemetry) -> ClientBuilder:
    return ClientBuilder("traced", "1.0").instrument(telemetry.tracer_provider, telemetry.meter_provider)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def is_child(span: ReadableSpan, parent: ReadableSpan) -> bool:
    assert parent.context is not None
    return span.parent is not None and span.parent.span_id == parent.context.span_id


def assert_served(span: ReadableSpan, method: str, session_id: str) -> None:
    assert span.name == method and span.kind is SpanKind.SERVER
    attributes = attrs(span)
    assert (attributes["rpc.system"], attributes["rpc.method"]) == ("jsonrpc", method)
    assert attributes["acp.session.id"] == attributes["gen_ai.conversation.id"] == session_id


async def test_a_v1_agents_file_and_terminal_calls_are_spans_under_their_turns(tmp_path: Path) -> None:
    """The reference agent, speaking v1 to a client with a file system and terminals: ``/tool`` reads the file
    (it does not exist yet: -32002) and writes it, ``/terminal`` runs a command in a client terminal."""
    telemetry = in_memory()
    builder = traced(telemetry).protocol_versions(1).with_file_system().with_terminals()
    with anyio.fail_after(30):
        async with builder.spawn(REFERENCE) as client:
            assert client.protocol.version == 1
            conversation = await client.start_conversation(str(tmp_path))
            assert (await conversation.chat_to_completion("/tool")).stop_reason == "end_turn"
            reply = await conversation.chat_to_completion("/terminal")
            assert "4 passed" in reply.text
            session_id = conversation.session_id
    assert (tmp_path / "example.txt").exists()  # the write went through the client

    tool_turn, terminal_turn = telemetry.named("invoke_agent")
    read, write = (s for s in telemetry.finished() if s.name.startswith("fs/"))
    for span, method in ((read, "fs/read_text_file"), (write, "fs/write_text_file")):
        assert_served(span, method, session_id)
        assert is_child(span, tool_turn)
        assert attrs(span)["gen_ai.agent.name"] == "acp-reference-agent"
        assert attrs(span)["acp.protocol.version"] == 1
    assert read.status.status_code is StatusCode.ERROR  # what the agent was answered: resource not found
    assert (attrs(read)["rpc.jsonrpc.error_code"], attrs(read)["error.type"]) == (-32002, "ResourceNotFound")
    assert write.status.status_code is StatusCode.UNSET and "rpc.jsonrpc.error_code" not in attrs(write)

    calls = [s for s in telemetry.finished() if s.name.startswith("terminal/")]
    assert [s.name for s in calls] == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    terminal_ids = {attrs(s)["acp.terminal.id"] for s in calls}
    assert len(terminal_ids) == 1 and terminal_ids != {""}  # create's answer names it, the others' params
    for span in calls:
        assert_served(span, span.name, session_id)
        assert is_child(span, terminal_turn) and span.status.status_code is StatusCode.UNSET
    assert all(s.context.trace_id == terminal_turn.context.trace_id for s in calls)  # type: ignore[union-attr]


async def test_parents_links_and_error_codes_of_scripted_v1_requests(tmp_path: Path) -> None:
    """The agent's ``traceparent`` in ``_meta``: a link when the request joins a running turn, the parent when no
    turn of its session runs; without either, a trace of its own (not the span current when the connection
    started). Errors carry the code the agent got: the provider's refusals, -32603 for a handler's crash."""
    telemetry = in_memory()
    log = tmp_path / "agent.log"
    mine = {"traceparent": MINE}
    inside = tmp_path / "inside.txt"
    inside.write_text("hello\n")

    def crash(params: Any) -> Any:
        raise RuntimeError("the extension handler broke")

    steps = [
        {"call": "fs/read_text_file", "params": {"sessionId": "s1", "path": str(inside), "_meta": mine}},
        {"call": "fs/read_text_file", "params": {"sessionId": "elsewhere", "path": str(inside), "_meta": mine}},
        {"call": "fs/read_text_file", "params": {"sessionId": "elsewhere", "path": str(inside)}},
        {"call": "terminal/output", "params": {"sessionId": "s1", "terminalId": "no-such-terminal"}},
        {"call": "_acme/echo", "params": {"sessionId": "s1", "n": 1}},
        {"call": "_acme/crash", "params": {}},
        {
            "call": "elicitation/create",
            "params": {
                "sessionId": "s1",
                "mode": "form",
                "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        },
        {
            "call": "session/request_permission",
            "params": {
                "sessionId": "s1",
                "toolCall": {"toolCallId": "tc1"},
                "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
            },
        },
    ]
    builder = (
        traced(telemetry)
        .with_file_system()
        .with_terminals()
        .on_ext_request("_acme/echo", lambda params: params)
        .on_ext_request("_acme/crash", crash)
        .on_elicitation(lambda request: ElicitationAcceptAction(content={"name": "Ada"}), modes=("form",))
        .on_request_permission(lambda request: "yes")
    )
    app = telemetry.tracer_provider.get_tracer("the-editor")
    with anyio.fail_after(30), app.start_as_current_span("editor running") as editor:
        async with builder.spawn(agent_argv(log)) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, steps)
    wire = answers(log)
    codes = [answer.get("error", {}).get("code") for answer in wire]
    assert codes[0] is None and codes[1] == codes[2] is not None and codes[3] is not None
    assert codes[5] == -32603 and "broke" not in json.dumps(wire[5])  # no details to the agent

    [turn] = telemetry.named("invoke_agent")
    assert is_child(turn, editor) and turn.context is not None
    joined, remote, alone = telemetry.named("fs/read_text_file")
    assert_served(joined, "fs/read_text_file", "s1")
    assert is_child(joined, turn)
    assert [(link.context.trace_id, link.context.span_id) for link in joined.links] == [(MINE_TRACE, MINE_SPAN)]
    assert remote.parent is not None and remote.parent.is_remote and not remote.links
    assert (remote.context.trace_id, remote.parent.span_id) == (MINE_TRACE, MINE_SPAN)  # type: ignore[union-attr]
    assert alone.parent is None and not alone.links  # a new trace, not under "editor running"
    for refused in (remote, alone):
        assert refused.status.status_code is StatusCode.ERROR
        assert attrs(refused)["rpc.jsonrpc.error_code"] == codes[1]

    [output] = telemetry.named("terminal/output")
    assert is_child(output, turn) and attrs(output)["acp.terminal.id"] == "no-such-terminal"
    assert output.status.status_code is StatusCode.ERROR and attrs(output)["rpc.jsonrpc.error_code"] == codes[3]

    [echo] = telemetry.named("_acme/echo")
    assert_served(echo, "_acme/echo", "s1")
    assert is_child(echo, turn) and echo.status.status_code is StatusCode.UNSET
    [crashed] = telemetry.named("_acme/crash")
    assert crashed.parent is None and "acp.session.id" not in attrs(crashed)  # it names no session
    assert crashed.status.status_code is StatusCode.ERROR
    assert (attrs(crashed)["rpc.jsonrpc.error_code"], attrs(crashed)["error.type"]) == (-32603, "RuntimeError")
    assert [event.name for event in crashed.events] == ["exception"]

    [elicitation] = telemetry.named("elicitation/create")
    assert_served(elicitation, "elicitation/create", "s1")
    assert is_child(elicitation, turn)
    assert (attrs(elicitation)["acp.elicitation.mode"], attrs(elicitation)["acp.elicitation.action"]) == (
        "form",
        "accept",
    )

    [permission] = telemetry.named("session/request_permission")  # its own span, not a second one
    assert_served(permission, "session/request_permission", "s1")
    assert is_child(permission, turn) and attrs(permission)["acp.permission.option_id"] == "yes"
    assert attrs(permission)["gen_ai.agent.name"] == "v1-provider"


async def test_a_v2_elicitation_is_a_span_under_its_turn(tmp_path: Path) -> None:
    telemetry = in_memory()
    builder = traced(telemetry).on_elicitation(lambda request: ElicitationAcceptAction(content={"name": "Ada"}))
    with anyio.fail_after(15):
        async with scripted(tmp_path, builder) as (client, log):
            session = await client.new_session(str(tmp_path))
            await session.send_prompt("elicit")
            while not any(m.get("id") == "agent-1" for m in sent(log)):
                await anyio.sleep(0.01)
            while not telemetry.named("elicitation/create"):  # ended just after the answer was queued
                await anyio.sleep(0.01)
            session_id = session.session_id
    [turn] = telemetry.named("invoke_agent")  # no idle state came: it ended, in error, with the connection
    [elicitation] = telemetry.named("elicitation/create")
    assert_served(elicitation, "elicitation/create", session_id)
    assert is_child(elicitation, turn)
    attributes = attrs(elicitation)
    assert (attributes["acp.elicitation.mode"], attributes["acp.elicitation.action"]) == ("form", "accept")
    assert attributes["acp.protocol.version"] == 2 and elicitation.status.status_code is StatusCode.UNSET


async def test_a_request_still_running_when_the_connection_closes_is_cancelled(tmp_path: Path) -> None:
    telemetry = in_memory()
    log = tmp_path / "agent.log"
    started = anyio.Event()

    async def stuck(params: Any) -> Any:
        started.set()
        await anyio.sleep_forever()

    builder = traced(telemetry).on_ext_request("_acme/stuck", stuck)
    with anyio.fail_after(30):
        async with builder.spawn(agent_argv(log)) as client:
            session = await client.new_session(str(tmp_path))
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_steps, session, [{"call": "_acme/stuck", "params": {"sessionId": "s1"}}])
                await started.wait()
                tg.cancel_scope.cancel()
    [stuck_span] = telemetry.named("_acme/stuck")
    assert stuck_span.status.status_code is StatusCode.ERROR
    attributes = attrs(stuck_span)
    assert (attributes["rpc.jsonrpc.error_code"], attributes["error.type"]) == (-32800, "RequestCancelled")


async def test_after_a_reconnect_the_new_agents_requests_are_spans_too(tmp_path: Path) -> None:
    """The reconnect's new peer gets the same hooks before its ``initialize``: the agent's ``fs/*`` calls are
    spans under the next turn, and that turn's ``session/prompt`` carries its trace context."""
    telemetry = in_memory()
    transcript = tmp_path / "wire.jsonl"
    builder = (
        traced(telemetry)
        .protocol_versions(1)
        .with_file_system()
        .record_transcript(transcript)
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
            os.kill(int(getattr(transport, "inner", transport).pid), signal.SIGKILL)
            await reconnected.wait()
            assert (await conversation.chat_to_completion("/tool")).stop_reason == "end_turn"
    _, turn = telemetry.named("invoke_agent")
    fs_calls = [s for s in telemetry.finished() if s.name.startswith("fs/")]
    assert [s.name for s in fs_calls] == ["fs/read_text_file", "fs/write_text_file"]
    assert all(is_child(s, turn) for s in fs_calls)
    assert turn.context is not None
    messages = [json.loads(line)["msg"] for line in transcript.read_text().splitlines()]
    prompts = [m for m in messages if m.get("method") == "session/prompt"]
    assert prompts[-1]["params"]["_meta"]["traceparent"].split("-")[2] == f"{turn.context.span_id:016x}"


class BrokenProcessor(SpanProcessor):
    """A span processor that fails for the agent's file requests: when their span starts (``fs/read...``) or
    ends (``fs/write...``)."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name.startswith("fs/read"):
            raise RuntimeError("the processor broke at the start")

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith("fs/write"):
            raise RuntimeError("the processor broke at the end")


async def test_a_broken_span_processor_changes_no_answer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    telemetry = in_memory()
    telemetry.tracer_provider.add_span_processor(BrokenProcessor())
    log = tmp_path / "agent.log"
    target = tmp_path / "out.txt"
    steps = [
        {"call": "fs/write_text_file", "params": {"sessionId": "s1", "path": str(target), "content": "written"}},
        {"call": "fs/read_text_file", "params": {"sessionId": "s1", "path": str(target)}},
        {"call": "fs/write_text_file", "params": {"sessionId": "s1", "path": "relative.txt", "content": "x"}},
    ]
    with anyio.fail_after(30):
        async with traced(telemetry).with_file_system().spawn(agent_argv(log)) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, steps)
    written, read, refused = answers(log)
    assert written["result"] == {} and read["result"] == {"content": "written"}
    assert refused["error"]["code"] == -32602  # a relative path: the provider's refusal, as without telemetry
    assert target.read_text() == "written"
    assert "starting the span of the agent's fs/read_text_file failed" in caplog.text
    assert "recording a span failed" in caplog.text
    assert not telemetry.named("fs/read_text_file")  # it never started; the writes were exported before the break
    assert len(telemetry.named("fs/write_text_file")) == 2

"""What an agent's strings may put into a trace (issue 51, 8): a real v2 agent subprocess with an 8 MiB tool title,
an 8 MiB tool name and agent name, a permission title quoting a bearer token and a prompt failing with an 8 MiB
error message that names a token. Read back from the SDK's in-memory exporter: every span name, attribute, status
description and recorded exception is bounded (1 024 characters by default, ``max_attribute_length``), the tokens
are nowhere in what was exported, and ``titles=False`` leaves the titles out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from acp_session import ClientBuilder
from acp_session.errors import RpcError
from acp_session.transport.remote.redact import redact_secrets
from tests.telemetry.support import Telemetry, in_memory

pytestmark = pytest.mark.anyio

HUGE = 8 * 1024 * 1024
BEARER = "sk-live-0123456789abcdefghijklmnop"
GITHUB = "ghp_0123456789abcdefghijABCDEFGHIJ"
QUESTION = f"Run curl -H 'Authorization: Bearer {BEARER}' https://api.example/v1?"

AGENT = r"""
import json, sys
HUGE, QUESTION, GITHUB = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
def update(update):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        info = {"name": "agent-" + "n" * HUGE, "version": "1"}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        tool = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "kind": "execute", "status": "pending"}
        update({**tool, "name": "shell" + "s" * HUGE, "title": "T" * HUGE})
        options = [{"optionId": "no", "name": "No", "kind": "reject_once"}]
        subject = {"type": "tool_call", "toolCall": {"toolCallId": "t1"}}
        params = {"sessionId": "s1", "title": QUESTION, "options": options, "subject": subject}
        write({"jsonrpc": "2.0", "id": "ask", "method": "session/request_permission", "params": params})
        json.loads(sys.stdin.readline())  # the answer
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})
        error = {"code": -32603, "message": f"it broke: GITHUB_TOKEN={GITHUB} " + "E" * HUGE}
        write({"jsonrpc": "2.0", "id": msg["id"], "error": error})
"""


async def _traced_turn(tmp_path: Path, **options: Any) -> Telemetry:
    script = tmp_path / "wordy_agent.py"
    script.write_text(AGENT)
    telemetry = in_memory()
    builder = (
        ClientBuilder("traced", "1.0")
        .instrument(telemetry.tracer_provider, telemetry.meter_provider, **options)
        .on_request_permission(lambda request: "no")
    )
    with anyio.fail_after(60):
        async with builder.spawn([sys.executable, str(script), str(HUGE), QUESTION, GITHUB]) as client:
            session = await client.new_session(str(tmp_path))
            with pytest.raises(RpcError):
                await session.send_prompt("go").result()
    return telemetry


def _strings(span: ReadableSpan) -> list[tuple[str, str]]:
    """Every string the span exports, with where it is."""
    found = [("name", span.name), ("status", span.status.description or "")]
    for key, value in (span.attributes or {}).items():
        found += [(key, item) for item in (value if isinstance(value, tuple) else (value,)) if isinstance(item, str)]
    for event in span.events:
        found += [(f"{event.name}.{k}", v) for k, v in (event.attributes or {}).items() if isinstance(v, str)]
    return found


def _assert_bounded(telemetry: Telemetry, limit: int) -> None:
    spans = telemetry.finished()
    assert {"initialize", "session/new", "session/request_permission"} <= {s.name for s in spans}
    for span in spans:
        for where, text in _strings(span):
            bound = 8 * limit if where.endswith("exception.stacktrace") else limit
            assert len(text) <= bound, (span.name[:40], where, len(text))
            assert BEARER not in text and GITHUB not in text, (span.name[:40], where)
        assert BEARER not in span.to_json() and GITHUB not in span.to_json()


async def test_spans_are_bounded_and_tokens_in_titles_and_errors_redacted(tmp_path: Path) -> None:
    telemetry = await _traced_turn(tmp_path)
    _assert_bounded(telemetry, 1024)
    [turn] = telemetry.named("invoke_agent")
    [tool] = telemetry.named("execute_tool")
    [permission] = telemetry.named("session/request_permission")
    assert turn.name.endswith("…") and len(turn.name) == 1024  # "invoke_agent agent-nnn…"
    assert (turn.attributes or {})["gen_ai.agent.name"].startswith("agent-nnn")
    title = (tool.attributes or {})["acp.tool_call.title"]
    assert title == "T" * 1023 + "…" and (tool.attributes or {})["gen_ai.tool.name"].endswith("…")
    asked = (permission.attributes or {})["acp.permission.title"]
    assert asked == "Run curl -H 'Authorization: [redacted]' https://api.example/v1?"
    assert turn.status.description is not None and "GITHUB_TOKEN=[redacted] EEE" in turn.status.description
    [exception] = [event for event in turn.events if event.name == "exception"]
    assert "GITHUB_TOKEN=[redacted]" in str((exception.attributes or {})["exception.message"])
    [point] = telemetry.metric_points("gen_ai.client.operation.duration")
    assert len(point.attributes["gen_ai.agent.name"]) == 1024


async def test_titles_can_be_left_out_and_the_length_chosen(tmp_path: Path) -> None:
    telemetry = await _traced_turn(tmp_path, titles=False, max_attribute_length=64)
    _assert_bounded(telemetry, 64)
    [tool] = telemetry.named("execute_tool")
    [permission] = telemetry.named("session/request_permission")
    assert "acp.tool_call.title" not in (tool.attributes or {})
    assert "acp.permission.title" not in (permission.attributes or {})
    assert (permission.attributes or {})["acp.permission.outcome"] == "selected"  # the rest is there
    with pytest.raises(ValueError, match="at least 16"):
        ClientBuilder().instrument(max_attribute_length=8)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('curl -H "Authorization: Bearer abc.def-123456" https://x', 'curl -H "Authorization: [redacted]" https://x'),
        (
            "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ && git push",
            "export GITHUB_TOKEN=[redacted] && git push",
        ),
        ("psql postgres://admin:hunter22@db.internal/app", "psql postgres://[redacted]@db.internal/app"),
        ("call the API with bearer abcdefgh12345678", "call the API with bearer [redacted]"),
        ("x-api-key: 0123456789", "x-api-key: [redacted]"),
        ('{"password": "hunter22"}', '{"password": "[redacted]"}'),
        ("key AKIAABCDEFGHIJKLMNOP in ~/.aws", "key [redacted] in ~/.aws"),
        ("Read /src/tokenizer.py (tokens: 12)", "Read /src/tokenizer.py (tokens: 12)"),
        ("Edit auth.py and ssh git@github.com", "Edit auth.py and ssh git@github.com"),
    ],
)
def test_what_looks_like_a_credential_is_redacted_and_the_rest_is_kept(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown

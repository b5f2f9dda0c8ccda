"""An agent repeating a mistake 25 000 times writes a handful of log lines, not 25 000 (issue 51, 12).

A real subprocess agent floods every kind of peer-driven log line the client has: answers to request ids it
never sent (one line each before), errors with id null, malformed ``$/cancel_request``s and ones for ids it
never had, notifications nobody handles, lines that are not JSON-RPC, usage updates without their counts,
permission requests without a handler, permission answers naming an option it did not offer, and a session
update listener that fails on each update. Each kind is logged once in full, then counted (a line at 10, 100,
1 000, 10 000 and the total when the connection closes), at every level including debug.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.schema import UpdateSessionNotification

pytestmark = pytest.mark.anyio

FLOOD = 25_000
ASKS = 1_234

AGENT = r"""
import json, sys
FLOOD, ASKS = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout
def write(obj):
    out.write(json.dumps(obj) + "\n")
def update(session, update):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
def chunk(text):
    return {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": text}}
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "noisy", "version": "1"}, "capabilities": {"session": {}}}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"messageId": "u1"}})
        for i in range(FLOOD):
            write({"jsonrpc": "2.0", "id": 10_000_000 + i, "result": {}})
            write({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "oops"}})
            write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": {"bad": i}}})
            write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 20_000_000 + i}})
            write({"jsonrpc": "2.0", "method": "_noisy/unhandled", "params": {"i": i}})
            out.write("this is not JSON-RPC\n")
            update("s1", chunk("x"))
            if i % 1000 == 999:
                out.flush()
        for i in range(ASKS):
            update("s1", {"sessionUpdate": "usage_update", "used": None, "size": 100})
            options = [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]
            tool = {"toolCallId": f"t{i}", "title": "t"}
            params = {"sessionId": "s1", "title": "may I?", "options": options, "toolCall": tool}
            write({"jsonrpc": "2.0", "id": 30_000_000 + i, "method": "session/request_permission", "params": params})
        out.flush()
        answered = 0
        while answered < ASKS:  # every question answered (and logged) before the marker
            answered += "result" in json.loads(sys.stdin.readline())
        update("s1", chunk("done"))
    out.flush()
"""


async def _flood(tmp_path: Path, builder: ClientBuilder, caplog: pytest.LogCaptureFixture) -> list[str]:
    script = tmp_path / "noisy_agent.py"
    script.write_text(AGENT)
    done = anyio.Event()
    failures = 0

    def listener(note: UpdateSessionNotification) -> None:
        nonlocal failures
        text = getattr(getattr(note.update, "content", None), "text", None)
        if text == "done":
            done.set()
            return
        failures += 1
        raise ValueError("the application's listener breaks on every update")

    caplog.set_level(logging.DEBUG, logger="acp_session")
    with anyio.fail_after(120):
        async with builder.spawn([sys.executable, str(script), str(FLOOD), str(ASKS)]) as client:
            session = await client.new_session(str(tmp_path))
            session.track.listeners.append(listener)
            await session.send_prompt("go").result()
            await done.wait()
            bad = client.rpc.bad_frames
    assert failures == FLOOD and bad >= FLOOD
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("acp_session") and r.name != "acp_session.agent.stderr"
    ]


def _of(lines: list[str], *words: str) -> list[str]:
    return [line for line in lines if all(word in line for word in words)]


async def test_a_flood_of_every_kind_writes_a_handful_of_lines_per_kind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = await _flood(tmp_path, ClientBuilder("quiet", "1"), caplog)
    unknown = _of(lines, "unknown request id")
    assert 1 <= len(unknown) <= 6, unknown  # the first, then 10, 100, 1 000, 10 000 and the total: 25 000
    assert "dropping response for unknown request id 10000000" in unknown[0]
    assert "further ones of this kind are counted, not logged" in unknown[0]
    assert any("25000 responses to unknown request ids in all" in line for line in unknown), unknown
    for kind in (
        "errors with id null",
        "malformed cancel requests",
        "cancel requests for unknown or answered ids",
        "notifications without a handler",
        "bad frames (ParseError)",
        "session update listener failures",
    ):
        counted = _of(lines, kind)
        assert 1 <= len(counted) <= 5 and any(f"{FLOOD} {kind} in all" in line for line in counted), (kind, counted)
    for kind in ("usage updates without their counts", "permission requests without a handler"):
        counted = _of(lines, kind)
        assert 1 <= len(counted) <= 4 and any(f"{ASKS} {kind} in all" in line for line in counted), (kind, counted)
    # 7 x 25 000 + 2 x 1 234 mistakes, a few lines each (at debug level too), and the ordinary ones of a session.
    assert len(lines) <= 80, "\n".join(lines[:100])


async def test_permission_answers_naming_an_option_not_offered_are_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    builder = ClientBuilder("quiet", "1").on_request_permission(lambda request: "never-offered")
    lines = await _flood(tmp_path, builder, caplog)
    counted = _of(lines, "did not offer")
    assert 1 <= len(counted) <= 5 and any(f"{ASKS} answers with an option" in line for line in counted), counted

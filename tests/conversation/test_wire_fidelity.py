"""Nothing a v2 agent sends is lost by the types it is decoded with (Preview): whole recorded turns of the reference
agent (every scenario, the Preview ones included, with ``--preview``) decoded and compared field by field with the
raw JSON (``acp_session.transcript.wire_losses``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from acp_conformance.agent.scenarios import SCENARIOS
from acp_session import ClientBuilder
from acp_session.transcript import read_transcript, wire_losses

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent", "--preview"]


async def test_every_field_of_a_recorded_wire_survives_the_typed_decode(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    builder = ClientBuilder("t", "1").record_transcript(path).on_request_permission(lambda request: "allow-once")
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path, system_prompt="Be brief.")
        with anyio.fail_after(60):
            for name in SCENARIOS:
                if name in ("slow", "fail"):
                    continue
                await conversation.chat_to_completion(f"/{name}")
            await conversation.session.set_title("Everything")
            await conversation.session.status()
            await client.auth.status()
            await client.providers.list()
            fork = await conversation.fork(tmp_path)
            await fork.chat_to_completion("/subagent")
    incoming = [e.message for e in read_transcript(path) if e.direction == "in" and isinstance(e.message, dict)]
    updates = [m["params"]["update"]["sessionUpdate"] for m in incoming if m.get("method") == "session/update"]
    # The recording holds the Preview shapes this test is about.
    for kind in ("subagent_update", "session_message", "session_message_chunk", "state_update", "usage_update"):
        assert kind in updates, kind
    assert any("usage" in m["params"]["update"] for m in incoming if m.get("method") == "session/update")
    assert any(m.get("method") == "auth/status_update" for m in incoming)
    assert wire_losses(path) == []


def test_a_dropped_or_changed_field_is_reported(tmp_path: Path) -> None:
    """The check itself: an unknown field and a malformed optional value are losses, named by path."""
    path = tmp_path / "wire.jsonl"
    update = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "state_update",
            "state": "idle",
            "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1, "thoughtTokens": "many"},
            "vendorExtra": 1,
        },
    }
    rows = [{"t": 0, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": update}}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    losses = wire_losses(path)
    assert sorted(loss.path for loss in losses) == ["update/usage/thoughtTokens", "update/vendorExtra"]
    assert all(loss.what == "session/update" and loss.index == 0 for loss in losses)

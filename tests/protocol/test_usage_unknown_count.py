"""A ``usage_update`` whose ``used`` (or ``size``) is null is skipped, not a broken frame (both versions).

claude-agent-acp 0.23.1 (v1) sends ``"used": null`` when the model left a token count out (found by
``make real-agents``). ``used`` and ``size`` are required numbers in both schemas (ACP1/ACP2 ``UsageUpdate``),
so the update cannot be kept as one; it is dropped with one log line, and the connection neither replies,
nor reports a frame error, nor loses any other update. Scripted agents over real pipes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import AcpError, InvalidParams
from acp_session.schema.types import UsageUpdate
from tests.protocol.support import chunk, v1_agent
from tests.robustness.support import hostile, responses

pytestmark = pytest.mark.anyio

NULL_USED = {"sessionUpdate": "usage_update", "used": None, "size": 200000, "cost": {"amount": 0.5, "currency": "USD"}}
GOOD = {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.75, "currency": "USD"}}


def skipped_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "skipped a usage_update" in r.getMessage()]


async def test_v1_agent_sending_used_null(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The turn completes, the text and the later good usage update arrive, nothing is reported broken."""
    caplog.set_level(logging.INFO, logger="acp_session")
    errors: list[AcpError] = []
    builder = ClientBuilder("test-client", "1.0")
    prompts = [{"updates": [chunk("agent_message_chunk", "hello"), NULL_USED, chunk("agent_message_chunk", " there")]}]
    prompts.append({"updates": [NULL_USED, GOOD]})
    with anyio.fail_after(30):
        async with v1_agent(tmp_path, builder, prompts=prompts) as (client, _log):
            client.rpc.on_frame_error = errors.append
            conversation = await client.start_conversation(str(tmp_path))
            first = await conversation.chat_to_completion("one")
            assert conversation.state.usage is None  # the only usage update had no count: none kept
            await conversation.chat_to_completion("two")
            usage = conversation.state.usage
            bad = client.rpc.bad_frames
    assert first.text == "hello there"  # one message: the skipped update did not split it
    assert usage is not None and (usage.used, usage.size) == (1200, 200000)
    assert errors == [] and bad == 0
    # The first is logged, the second counted: one more line with the total when the connection closed.
    assert len(skipped_lines(caplog)) == 1
    assert "used null or missing" in skipped_lines(caplog)[0]
    assert any("2 usage updates without their counts in all" in r.getMessage() for r in caplog.records)


async def test_v1_usage_update_broken_otherwise_is_still_an_error(tmp_path: Path) -> None:
    """Only the missing count is forgiven: a usage update with null ``used`` and a negative ``size`` is the
    ordinary ``-32602`` frame error (dropped, reported locally)."""
    errors: list[AcpError] = []
    broken = {**NULL_USED, "size": -1}
    prompts: list[dict[str, Any]] = [{"updates": [broken, chunk("agent_message_chunk", "after")]}]
    with anyio.fail_after(30):
        async with v1_agent(tmp_path, prompts=prompts) as (client, _log):
            client.rpc.on_frame_error = errors.append
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("one")
    assert reply.text == "after"
    assert [type(e) for e in errors] == [InvalidParams]


@pytest.mark.parametrize("missing", ["used", "size"])
async def test_v2_agent_sending_a_null_count(tmp_path: Path, caplog: pytest.LogCaptureFixture, missing: str) -> None:
    caplog.set_level(logging.INFO, logger="acp_session")
    config = {
        "on_prompt": [
            {"answer": {"messageId": "u1"}},
            {"update": {**GOOD, missing: None}},
            {"update": {**GOOD, "used": 7}},
            {"marker": "done"},
        ]
    }
    with anyio.fail_after(30):
        async with hostile(tmp_path, config) as (client, session, seen, log):
            await session.send_prompt("go").result()
            await seen.marker("done").wait()
            bad = client.rpc.bad_frames
    usages = [n.update for n in seen.notes if isinstance(n.update, UsageUpdate)]
    assert [(u.used, u.size) for u in usages] == [(7, 200000)]
    assert seen.frame_errors == [] and bad == 0
    assert responses(log) == []  # nothing answered to the agent for it
    assert skipped_lines(caplog) == [
        f"skipped a usage_update with {missing} null or missing (session s1): the agent did not know the count"
        "; further ones of this kind are counted, not logged"
    ]

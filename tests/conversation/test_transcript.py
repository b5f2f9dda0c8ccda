"""Transcript recording (both directions, timestamped) and folding a recording back into a SessionState."""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.schema import RequestPermissionRequest
from acp_session.transcript import load_transcript, read_transcript
from tests.conversation.chat_support import chat_agent

pytestmark = pytest.mark.anyio


def approve(request: RequestPermissionRequest) -> str:
    return "yes"


async def test_recorded_session_folds_into_the_same_state(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    builder = ClientBuilder().record_transcript(path).on_request_permission(approve)
    with anyio.fail_after(10):
        async with chat_agent(tmp_path, builder) as client:
            conversation = await client.start_conversation("/w")
            await conversation.chat_to_completion("tools")
            await conversation.chat_to_completion("permission")
            await conversation.chat_to_completion("notice 3")
            await conversation.reconnect(client, "/w")  # resume with replay, recorded too
            await conversation.chat_to_completion("stream 2")
    entries = read_transcript(path)
    assert {entry.direction for entry in entries} == {"in", "out"}
    assert all(a.t <= b.t for a, b in pairwise(entries))
    methods = [entry.message.get("method") for entry in entries if entry.direction == "out"]
    assert methods[:2] == ["initialize", "session/new"] and "session/resume" in methods
    assert any(e.direction == "out" and "result" in e.message for e in entries)  # the permission answer
    loaded = load_transcript(path)
    assert loaded == conversation.state  # same timeline, state, completions, usage, lists
    assert loaded.completions == 4


async def test_non_json_lines_are_kept_raw(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"t": 1.0, "dir": "in", "raw": "garbage"}\n')
    assert read_transcript(path)[0].raw == "garbage"
    assert load_transcript(path).timeline == []


async def test_a_set_config_option_answer_is_folded_live_as_on_replay(tmp_path: Path) -> None:
    """Issue 16 (2): the answer carries the complete option list; the live state used to keep the old list
    unless the agent also sent ``config_option_update``, while ``load_transcript`` of the same wire folded it."""
    path = tmp_path / "transcript.jsonl"
    reference_agent = [sys.executable, "-m", "acp_conformance.agent"]
    with anyio.fail_after(10):
        async with ClientBuilder().record_transcript(path).spawn(reference_agent) as client:
            conversation = await client.start_conversation(str(tmp_path))
            assert conversation.state.mode == "code"
            await conversation.session.set_mode("review")
            assert conversation.state.mode == "review"  # no config_option_update from this agent
            await conversation.session.set_config_option("thoughts", True)
            assert conversation.state.config_option("thoughts").current_value is True  # type: ignore[union-attr]
    assert load_transcript(path) == conversation.state

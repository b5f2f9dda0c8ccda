"""``Conversation.cancel()`` marks a turn's unfinished tool calls ``cancelled`` at once, also when the agent reported
the turn's work (its user message, a tool call, a permission request) before answering the prompt: that work is
held for the turn until the answer claims it, and a cancel while it is held used to leave the tool call ``pending``
(found with the official Python SDK 1.0 agents, whose turns often run ahead of the prompt's answer)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import ChatDone, ChatToolBegin, ChatToolEnd
from acp_session.schema.types import RequestPermissionRequest

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "early_work_agent.py")]


@pytest.mark.parametrize("prompt", ["ask", "work"])
async def test_cancel_marks_tool_calls_reported_before_the_answer(prompt: str, tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never_answered(request: RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    builder = ClientBuilder().on_request_permission(never_answered)
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(10):
            turn = conversation.chat(prompt)
            if prompt == "ask":
                await asked.wait()  # the user message, the tool call and the question came; the answer did not
            else:
                while "tc-1" not in conversation.state.tool_calls:
                    await anyio.sleep(0.01)
            await conversation.cancel()
            events = [event async for event in turn]
        tools = [
            (type(e).__name__, e.tool_call.tool_call_id, e.tool_call.status)
            for e in events
            if isinstance(e, (ChatToolBegin, ChatToolEnd))
        ]
        assert tools[-1] == ("ChatToolEnd", "tc-1", "cancelled"), tools
        (done,) = [e for e in events if isinstance(e, ChatDone)]
        response = done.response
        assert response.stop_reason == "cancelled"
        assert [(c.tool_call_id, c.status) for c in response.tool_calls] == [("tc-1", "cancelled")]
        assert [t.status for t in conversation.state.tool_calls.values()] == ["cancelled"]
        assert client.interactions.pending(conversation.session_id) == []

"""After ``SessionLost`` the session stays lost (issue 52 item 4): the next turn raises ``SessionLost`` again, not
the agent's raw ``ResourceNotFound`` (-32002) for a session it no longer has, and so does the session handle.

A real agent subprocess loses the session: the reference agent keeps sessions in memory only, so the process the
reconnect policy starts again knows none of them. Protocol versions 1 and 2, on asyncio and trio.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.client_errors import SessionLost
from acp_session.conversation import ChatError, ChatText, Conversation

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent"]  # no --store: a restarted agent has no session


def agent_pid(conversation: Conversation) -> int:
    transport: Any = conversation.session.connection.rpc.transport
    return int(getattr(transport, "inner", transport).pid)


@pytest.mark.parametrize("version", [1, 2])
async def test_the_turn_after_session_lost_raises_session_lost_again(tmp_path: Path, version: int) -> None:
    policy = {"attempts": 3, "backoff": 0.05, "deadline": 60.0, "idle_timeout": None}
    builder = ClientBuilder("session-lost", "1.0").protocol_versions(version).reconnect(**policy)
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(str(tmp_path))
        session_id = conversation.session_id
        pid = agent_pid(conversation)
        killed, last = False, None
        with anyio.fail_after(60):
            async for event in conversation.chat("/slow 60"):
                if isinstance(event, ChatText) and not killed:
                    os.kill(pid, signal.SIGKILL)  # the agent dies mid-turn; its restarted self knows no session
                    killed = True
                last = event
        assert isinstance(last, ChatError) and isinstance(last.error, SessionLost)

        with pytest.raises(SessionLost) as raised:  # not the agent's -32002 for a session it does not have
            await conversation.chat_to_completion("are you there?")
        assert raised.value.session_id == session_id and raised.value.cause is not None
        with pytest.raises(SessionLost):  # at once, as chat() raises for a closed connection
            conversation.chat("are you there?")
        with pytest.raises(SessionLost):  # the session's own handle says the same
            conversation.session.send_prompt("are you there?")
        with pytest.raises(SessionLost):
            await conversation.cancel()
        with anyio.fail_after(10), pytest.raises(SessionLost):  # nothing runs any more: at once, with why
            await conversation.wait_for_idle()

        # The connection itself is back: a new session works on it. The restarted agent counts its session ids
        # afresh, so the new session may have the lost one's id: the lost conversation stays lost all the same.
        other = await client.start_conversation(str(tmp_path))
        assert (await other.chat_to_completion("hi there")).text == "You said: hi there"
        with pytest.raises(SessionLost):
            conversation.chat("and now?")
        assert [m.text for m in other.messages()] == ["hi there", "You said: hi there"]

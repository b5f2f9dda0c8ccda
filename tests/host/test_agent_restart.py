"""The agent dies under a running ``acp-session serve`` (SIGKILL, its pid from the host's ``agent_started`` event):
the host starts it again and resumes the session, the turn that was running ends (stop reason ``error``, the
error said), the attached client is told by notices, and its next prompt on the same session works. When the
agent cannot be started again, after ``--restart-attempts`` failed starts the host says so (``agent_failed``),
the attached client's prompt gets a typed error at once (no hang), and so does a new client's ``initialize``."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import RpcError
from acp_session.schema.types import Notice, UpdateSessionNotification

from .conftest import REFERENCE_AGENT, Host

pytestmark = pytest.mark.anyio


def _listening(notices: list[Notice]) -> ClientBuilder:
    def on_update(note: UpdateSessionNotification) -> None:
        if isinstance(note.update, Notice):
            notices.append(note.update)

    return ClientBuilder("restart-test", "1.0").on_session_update(on_update)


async def _until(predicate: Callable[[], bool]) -> None:
    with anyio.fail_after(30):
        while not predicate():
            await anyio.sleep(0.05)


async def test_a_killed_agent_is_restarted_and_the_session_goes_on(
    start_host: Callable[..., Host], tmp_path: Path
) -> None:
    store = tmp_path / "agent-sessions.json"  # the reference agent keeps its sessions there, for the next process
    host = start_host(agent=f"{REFERENCE_AGENT} --store {shlex.quote(str(store))}")
    pid = (await host.event("agent_started"))["pid"]
    assert isinstance(pid, int)
    cwd = str(tmp_path)
    notices: list[Notice] = []
    with anyio.fail_after(90):
        async with _listening(notices).connect_url(host.url) as client:
            conversation = await client.start_conversation(cwd)
            assert (await conversation.chat_to_completion("hello")).stop_reason == "end_turn"
            session_id = conversation.session_id
            turn = conversation.chat("/slow 40")
            events: list[Any] = []
            async for event in turn:  # the turn ends (the agent's death said), it does not hang
                events.append(event)
                if len(events) == 3:
                    os.kill(pid, signal.SIGKILL)
            lost = events[-1].response
            assert lost.stop_reason == "error" and lost.error.message == "the agent process exited; the turn is lost"
            ended = await host.event("turn_ended", 2, sessionId=session_id)
            assert ended["stopReason"] == "error"
            exited = await host.event("agent_exited")
            assert exited["reason"]
            again = await host.event("agent_started", 2)
            assert again["starts"] == 2 and again["pid"] != pid
            await _until(lambda: any(n.title.startswith("The agent was restarted") for n in notices))
            assert notices[0].title.startswith("The agent exited") and notices[0].severity == "warning"
            reply = await conversation.chat_to_completion("after the restart")
            assert reply.stop_reason == "end_turn" and reply.text
    assert not [e for e in host.events if e["event"] in ("session_read_only", "agent_failed")]


async def test_an_agent_that_cannot_start_again_is_given_up_plainly(
    start_host: Callable[..., Host], tmp_path: Path
) -> None:
    flag = tmp_path / "started-once"
    agent = shlex.join(
        [
            "sh",
            "-c",
            f'test -e {shlex.quote(str(flag))} && exit 1; touch {shlex.quote(str(flag))}; exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "acp_conformance.agent",
        ]
    )
    host = start_host("--restart-attempts", "2", agent=agent)
    pid = (await host.event("agent_started"))["pid"]
    cwd = str(tmp_path)
    notices: list[Notice] = []
    with anyio.fail_after(90):
        async with _listening(notices).connect_url(host.url) as client:
            conversation = await client.start_conversation(cwd)
            assert (await conversation.chat_to_completion("hello")).stop_reason == "end_turn"
            session_id = conversation.session_id
            assert session_id is not None
            os.kill(pid, signal.SIGKILL)
            failed = await host.event("agent_failed")
            assert "could not be started again (2 attempts)" in failed["reason"]
            assert len([e for e in host.events if e["event"] == "agent_started"]) == 1
            await _until(lambda: any(n.title == "The agent is gone" for n in notices))
            with pytest.raises(RpcError) as refused:
                await conversation.chat_to_completion("anyone there?")
            assert refused.value.code == -32600 and "read-only" in str(refused.value)
        assert host.process.poll() is None  # the host goes on, and says why to each new client
        with pytest.raises(RpcError) as gone:
            async with ClientBuilder("later", "1.0").connect_url(host.url):
                pass
        assert gone.value.code == -32603 and "could not be started again" in str(gone.value)
    assert "could not be started again" in host.stderr()

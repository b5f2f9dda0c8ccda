"""The reference agent driven through the client layer, and its command line."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import anyio
import pytest

from acp_conformance.agent.scenarios import SCENARIOS
from acp_conformance.agent.server import BROKEN_MODES
from acp_session import ClientBuilder
from acp_session.schema.types import AgentMessageChunk, StateUpdate, UpdateSessionNotification

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


def test_help_lists_scenarios_and_broken_modes() -> None:
    out = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, timeout=30, check=True).stdout
    for name in SCENARIOS:
        assert f"/{name}" in out
    for mode in BROKEN_MODES:
        assert mode in out


@pytest.mark.anyio
async def test_offline_reply_through_the_client_layer() -> None:
    updates: list[UpdateSessionNotification] = []
    idle = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        updates.append(note)
        if isinstance(note.update, StateUpdate) and note.update.state == "idle":
            idle.set()

    with tempfile.TemporaryDirectory() as cwd:
        async with ClientBuilder("test", "1").on_session_update(on_update).spawn(AGENT) as client:
            assert client.agent.info.name == "acp-reference-agent"
            session = await client.new_session(cwd)
            accepted = await session.send_prompt("hello")
            assert accepted.message_id
            with anyio.fail_after(10):
                await idle.wait()
            options = await session.set_config_option("mode", "ask")
            assert any(getattr(o, "current_value", None) == "ask" for o in options)
            await session.close()
    text = "".join(
        n.update.content.text
        for n in updates
        if isinstance(n.update, AgentMessageChunk) and hasattr(n.update.content, "text")
    )
    assert text.startswith("Hello! I am the ACP reference agent")
    idles = [n.update for n in updates if isinstance(n.update, StateUpdate) and n.update.state == "idle"]
    assert idles[-1].stop_reason == "end_turn"

"""Spawn the chat agent (tests/conversation/agents/chat_agent.py) and check what the client sent."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp_session import ClientBuilder, ClientConnection
from acp_session.conversation import ChatEvent
from tests.client.support import assert_valid, sent

AGENT = Path(__file__).parent / "agents" / "chat_agent.py"


def chat_agent_argv(tmp_path: Path, **options: Any) -> list[str]:
    return [sys.executable, str(AGENT), str(tmp_path / "store.jsonl"), str(tmp_path / "agent.log"), json.dumps(options)]


@asynccontextmanager
async def chat_agent(tmp_path: Path, builder: ClientBuilder | None = None) -> AsyncIterator[ClientConnection]:
    """A client connected to a fresh chat-agent process; the store survives across processes in ``tmp_path``."""
    async with (builder or ClientBuilder("conversation-tests", "1.0")).spawn(chat_agent_argv(tmp_path)) as client:
        yield client
    log = tmp_path / "agent.log"
    if log.exists() and log.read_text().strip():
        assert_valid(sent(log))


def kinds(events: list[ChatEvent]) -> list[str]:
    return [event.kind for event in events]

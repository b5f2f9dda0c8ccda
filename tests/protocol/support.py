"""Run the client against the scripted v1 agent (tests/protocol/agents/v1_script_agent.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp_session import ClientBuilder, ClientConnection

AGENT = Path(__file__).parent / "agents" / "v1_script_agent.py"


def v1_argv(log: Path, **script: Any) -> list[str]:
    return [sys.executable, str(AGENT), str(log), json.dumps(script)]


@asynccontextmanager
async def v1_agent(
    tmp_path: Path, builder: ClientBuilder | None = None, **script: Any
) -> AsyncIterator[tuple[ClientConnection, Path]]:
    """A connection to a scripted v1 agent, and the file where the agent logs every line it read."""
    log = tmp_path / "agent.log"
    async with (builder or ClientBuilder("test-client", "1.0")).spawn(v1_argv(log, **script)) as client:
        yield client, log


def sent(log: Path) -> list[dict[str, Any]]:
    """Every message the client sent, in order."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def sent_methods(log: Path) -> list[str]:
    return [m.get("method", "<answer>") for m in sent(log)]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def chunk(kind: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": text(value), **extra}

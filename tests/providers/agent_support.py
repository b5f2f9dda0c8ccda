"""Drive the client's providers from a hostile v1 agent (``agents/v1_provider_agent.py``) over real pipes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from acp_session import ActiveSession

AGENTS = Path(__file__).parent / "agents"
ESCAPE = AGENTS / "escape.py"


def agent_argv(log: Path, python: str = sys.executable) -> list[str]:
    """The agent's command line (the agent needs only the standard library: any ``python`` does)."""
    return [python, str(AGENTS / "v1_provider_agent.py"), str(log)]


async def run_steps(session: ActiveSession, steps: list[dict[str, Any]], timeout: float = 20) -> None:
    """One prompt whose text is the agent's script; returns once the agent answered it."""
    with anyio.fail_after(timeout):
        await session.send_prompt(json.dumps(steps))


def answers(log: Path) -> list[dict[str, Any]]:
    """The client's answers to the agent's own requests, in order."""
    found = []
    for line in log.read_text().splitlines():
        message = json.loads(line)
        if "method" not in message and str(message.get("id", "")).startswith("agent-"):
            found.append(message)
    return found

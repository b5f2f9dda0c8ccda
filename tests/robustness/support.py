"""Shared harness: run the client against ``agents/hostile_agent.py`` and collect what happened."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from acp_session import ActiveSession, ClientBuilder, ClientConnection
from acp_session.conversation import SessionState
from acp_session.errors import AcpError
from acp_session.schema.types import AgentMessageChunk, TextContent, UpdateSessionNotification

AGENTS = Path(__file__).parent / "agents"


def agent_argv(name: str, log: Path, config: dict[str, Any]) -> list[str]:
    return [sys.executable, str(AGENTS / name), str(log), json.dumps(config)]


def is_marker(note: UpdateSessionNotification, text: str) -> bool:
    update = note.update
    return (
        isinstance(update, AgentMessageChunk)
        and update.message_id == "marker"
        and isinstance(update.content, TextContent)
        and update.content.text == text
    )


@dataclass
class Observed:
    """Everything the client saw: updates (in order), states folded from them, frame errors, markers."""

    notes: list[UpdateSessionNotification] = field(default_factory=list)
    states: dict[str, SessionState] = field(default_factory=dict)
    frame_errors: list[AcpError] = field(default_factory=list)
    markers: dict[str, anyio.Event] = field(default_factory=dict)
    marker_times: dict[str, float] = field(default_factory=dict)

    def marker(self, name: str) -> anyio.Event:
        return self.markers.setdefault(name, anyio.Event())

    def on_update(self, note: UpdateSessionNotification) -> None:
        update = note.update
        if isinstance(update, AgentMessageChunk) and update.message_id == "marker":
            assert isinstance(update.content, TextContent)
            self.marker_times[update.content.text] = anyio.current_time()
            self.marker(update.content.text).set()
            return
        self.notes.append(note)
        state = self.states.get(note.session_id)
        if state is None:
            state = self.states[note.session_id] = SessionState(note.session_id)
        state.apply_notification(note)


def sent(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def responses(log: Path) -> list[dict[str, Any]]:
    """The client's answers to the agent's requests (and its error replies to bad frames)."""
    return [m for m in sent(log) if "method" not in m]


async def wait_for_responses(log: Path, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    with anyio.fail_after(timeout):
        while len(found := responses(log)) < count:
            await anyio.sleep(0.01)
    return found


@asynccontextmanager
async def hostile(
    tmp_path: Path,
    config: dict[str, Any],
    builder: ClientBuilder | None = None,
    observed: Observed | None = None,
    **options: Any,
) -> AsyncIterator[tuple[ClientConnection, ActiveSession, Observed, Path]]:
    """Spawn the hostile agent with ``config``, open session ``s1`` and yield what the test needs."""
    log = tmp_path / f"agent-{len(list(tmp_path.glob('agent-*.log')))}.log"
    seen = observed or Observed()
    builder = builder or ClientBuilder("robustness", "1.0")
    builder.on_session_update(seen.on_update)
    options.setdefault("on_frame_error", seen.frame_errors.append)
    async with builder.spawn(agent_argv("hostile_agent.py", log, config), **options) as client:
        session = await client.new_session("/tmp")
        yield client, session, seen, log
